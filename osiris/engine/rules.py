"""Reading ``.osiris/invariants.toml`` under each root, hot, and surviving bad edits.

Each call stats the files (cheap); a changed file is parsed again. A file that no
longer parses never takes the server down: the last version that parsed stays in
force and the problem is reported. The last good text is kept in the database
(``rule_sets``), so a server that starts while the file is broken, or another
process, still enforces it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from osiris.core.hashing import sha256_hex
from osiris.core.invariants import Parsed, RulesError, RuleSet, merge, parse_rules
from osiris.store.state import Tx

log = logging.getLogger(__name__)
RULES_PATH = Path(".osiris") / "invariants.toml"


@dataclass
class _Cached:
    stat: tuple[int, int]
    digest: str
    parsed: Parsed | None
    problem: str | None


@dataclass
class RulesLoader:
    """Per-process cache of the invariants files of the configured roots."""

    roots: tuple[Path, ...]
    _cache: dict[Path, _Cached] = field(default_factory=dict)

    def files(self) -> list[Path]:
        """The invariants file path of each root (present or not)."""
        return [root / RULES_PATH for root in self.roots]

    def load(self, tx: Tx | None, con: duckdb.DuckDBPyConnection | None = None,
             ) -> tuple[RuleSet, list[str]]:
        """The rules in force and the problems found (malformed files).

        With ``tx`` a newly parsed file is remembered as the last good one; ``con`` (a
        read connection) is enough to fall back on it.
        """
        reader = tx.con if tx is not None else con
        parts: list[tuple[str, str, Parsed]] = []
        problems: list[str] = []
        for path in self.files():
            try:
                info = path.stat()
            except FileNotFoundError:
                self._cache.pop(path, None)
                continue
            except OSError as exc:
                problems.append(f"{path}: cannot read ({exc.strerror})")
                continue
            stat = (info.st_mtime_ns, info.st_size)
            cached = self._cache.get(path)
            if cached is None or cached.stat != stat:
                cached = self._read(path, stat, tx, reader, cached)
                self._cache[path] = cached
            if cached.problem:
                problems.append(cached.problem)
            if cached.parsed is not None:
                parts.append((str(path.parent.parent), cached.digest, cached.parsed))
        return merge(parts), problems

    def _read(self, path: Path, stat: tuple[int, int], tx: Tx | None,
              reader: duckdb.DuckDBPyConnection | None, previous: _Cached | None) -> _Cached:
        root = str(path.parent.parent)
        try:
            text = path.read_text("utf-8")
            parsed = parse_rules(text, root)
        except (OSError, UnicodeDecodeError, RulesError) as exc:
            good = self._last_good(path, reader, previous)
            kept = "the last good rules stay in force" if good else "no earlier rules to keep"
            problem = f"{path} is malformed: {exc}; {kept}"
            log.warning("%s", problem)
            return _Cached(stat, good[0] if good else "", good[1] if good else None, problem)
        digest = sha256_hex(text)
        if tx is not None:
            tx.con.execute(
                "INSERT INTO rule_sets (path, root, digest, text, loaded_us) VALUES"
                " (?, ?, ?, ?, ?) ON CONFLICT (path) DO UPDATE SET digest = excluded.digest,"
                " text = excluded.text, loaded_us = excluded.loaded_us",
                [str(path), root, digest, text, tx.now_us])
        return _Cached(stat, digest, parsed, None)

    @staticmethod
    def _last_good(path: Path, reader: duckdb.DuckDBPyConnection | None,
                   previous: _Cached | None) -> tuple[str, Parsed] | None:
        if previous is not None and previous.parsed is not None:
            return previous.digest, previous.parsed
        if reader is None:
            return None
        row = reader.execute("SELECT digest, text FROM rule_sets WHERE path = ?",
                             [str(path)]).fetchone()
        if row is None:
            return None
        try:
            return str(row[0]), parse_rules(str(row[1]), str(path.parent.parent))
        except RulesError:
            return None
