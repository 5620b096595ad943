"""File handling for ``osiris install``: reading, backups, atomic writes, diffs, records.

The client's configuration files are the user's, so every write is careful: the bytes
are read and written with their own line endings (``newline=""``), a copy of the old
file is kept next to it before the first change, the new text goes to a temporary file
in the same directory that replaces the old one in a single ``os.replace`` (keeping its
mode), and a symlinked file (dotfile managers) is written through to its target so the
link survives.

Install records remember what an install created (the file, its directories, empty
containers such as ``hooks.PreToolUse``) so that uninstall removes exactly that and no
more. They live in the OSIRIS home the installed entry names
(``$OSIRIS_HOME/clients/installs.json``), keyed by the real path of the configuration
file and the server name.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from osiris.errors import ConfigError

BACKUP_SUFFIX = ".osiris-backup"
RECORDS = Path("clients") / "installs.json"
RECORDS_VERSION = 1


def read_text(path: Path) -> str | None:
    """The file's text with its own line endings, None when it does not exist."""
    try:
        with path.open(encoding="utf-8", newline="") as fh:
            return fh.read()
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start}); "
                          "fix or move the file, then run the command again. Nothing was "
                          "changed.") from None
    except IsADirectoryError:
        raise ConfigError(f"{path} is a directory, not a configuration file") from None


def real_path(path: Path) -> Path:
    """Where writes go: the target of a symlinked file, so that the link survives."""
    return path.resolve() if path.is_symlink() else path


def missing_dirs(path: Path) -> list[Path]:
    """The directories above ``path`` that do not exist yet, outermost first."""
    out: list[Path] = []
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        out.append(parent)
        parent = parent.parent
    return out[::-1]


def backup_path(path: Path) -> Path:
    """The one backup OSIRIS keeps of a configuration file: ``<path>.osiris-backup``."""
    return path.with_name(path.name + BACKUP_SUFFIX)


def backup(path: Path, after: str | None) -> Path | None:
    """Before OSIRIS changes ``path`` to ``after``: copy it to its backup (mode and times
    kept), which then holds the file as it was before OSIRIS's latest change. When the
    change puts back exactly what the backup holds (an uninstall after an install), the
    backup goes instead: the file is the user's own again, and nothing of OSIRIS's is
    left beside it. The backup's path, or None when there is none now."""
    target = backup_path(path)
    if after is not None and read_text(target) == after:
        target.unlink()
        return None
    shutil.copy2(path, target)
    return target


def write_atomic(path: Path, text: str, *, new_file_mode: int) -> None:
    """Replace ``path`` with ``text`` in one step, keeping an existing file's mode."""
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = new_file_mode
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def unified_diff(path: Path, before: str | None, after: str | None) -> str:
    """A unified diff of one file; /dev/null stands for a file that does not exist."""
    old = (before or "").splitlines(keepends=True)
    new = (after or "").splitlines(keepends=True)
    lines = difflib.unified_diff(old, new, fromfile=str(path) if before is not None
                                 else "/dev/null",
                                 tofile=str(path) if after is not None else "/dev/null")
    out = []
    for line in lines:
        out.append(line)
        if not line.endswith("\n"):
            out.append("\n\\ No newline at end of file\n")
    return "".join(out)


@dataclass(frozen=True)
class TrustedHook:
    """Codex's trust in one of OSIRIS's hooks, as ``osiris install codex`` recorded it."""

    key: str
    trusted_hash: str
    previous: str | None
    """The ``trusted_hash`` the table had before ("" for none); None: the table is ours."""
    separator: str | None
    """The text put before the appended table (None: the table was already there)."""


@dataclass(frozen=True)
class InstallRecord:
    """What one install created in one configuration file (for exact uninstall)."""

    client: str
    created_file: bool = False
    """The file did not exist before: uninstall may remove it once it is empty again."""
    created_dirs: tuple[str, ...] = ()
    """Directories made for the file, outermost first (removed only if empty)."""
    created_keys: tuple[tuple[str, ...], ...] = ()
    """JSON containers the install added (``("hooks", "PreToolUse")``)."""
    toml_separator: str | None = None
    """The text put before the appended TOML table (a blank line, usually)."""
    trusted_hooks: tuple[TrustedHook, ...] = ()
    """Codex hook trust the install recorded (:mod:`osiris.clients.codex_trust`)."""
    installed_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(
        timespec="seconds"))

    def merged(self, newer: InstallRecord) -> InstallRecord:
        """This record plus what a later install created (the earlier facts win)."""
        keys = list(self.created_keys)
        keys += [key for key in newer.created_keys if key not in keys]
        dirs = list(self.created_dirs)
        dirs += [d for d in newer.created_dirs if d not in dirs]
        trusted = {hook.key: hook for hook in self.trusted_hooks}
        for hook in newer.trusted_hooks:  # a new hash; what was there first stays known
            first = trusted.get(hook.key)
            trusted[hook.key] = hook if first is None else TrustedHook(
                hook.key, hook.trusted_hash, first.previous, first.separator)
        return InstallRecord(
            client=self.client, created_file=self.created_file or newer.created_file,
            created_dirs=tuple(dirs), created_keys=tuple(keys),
            toml_separator=(self.toml_separator if self.toml_separator is not None
                            else newer.toml_separator),
            trusted_hooks=tuple(trusted.values()), installed_at=self.installed_at)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> InstallRecord:
        """Read one stored record (unknown fields ignored)."""
        return cls(client=str(doc.get("client", "")),
                   created_file=bool(doc.get("created_file", False)),
                   created_dirs=tuple(str(d) for d in doc.get("created_dirs", ())),
                   created_keys=tuple(tuple(str(k) for k in key)
                                      for key in doc.get("created_keys", ())),
                   toml_separator=doc.get("toml_separator"),
                   trusted_hooks=tuple(_trusted(item) for item in doc.get("trusted_hooks", ())
                                       if isinstance(item, dict)),
                   installed_at=str(doc.get("installed_at", "")))


def _trusted(item: dict[str, Any]) -> TrustedHook:
    previous, separator = item.get("previous"), item.get("separator")
    return TrustedHook(str(item.get("key", "")), str(item.get("trusted_hash", "")),
                       None if previous is None else str(previous),
                       None if separator is None else str(separator))


def records_path(home: Path) -> Path:
    """Where the install records of ``home`` are."""
    return home / RECORDS


def _load_records(home: Path) -> dict[str, Any]:
    text = read_text(records_path(home))
    if text is None:
        return {"version": RECORDS_VERSION, "files": {}}
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        doc = None
    if not isinstance(doc, dict) or not isinstance(doc.get("files"), dict):
        # A damaged record only costs exactness of a later uninstall; never fail on it.
        return {"version": RECORDS_VERSION, "files": {}}
    return doc


def find_record(homes: list[Path], config: Path, name: str
                ) -> tuple[Path, InstallRecord] | None:
    """The first record of (config file, server name) found in ``homes``, and its home."""
    key = str(config.resolve())
    seen: set[Path] = set()
    for home in homes:
        if home in seen:
            continue
        seen.add(home)
        entry = _load_records(home)["files"].get(key, {}).get(name)
        if isinstance(entry, dict):
            return home, InstallRecord.from_json(entry)
    return None


def save_record(home: Path, config: Path, name: str, record: InstallRecord | None) -> None:
    """Store (or with None, forget) the record of (config file, server name) in ``home``."""
    key = str(config.resolve())
    doc = _load_records(home)
    files: dict[str, Any] = doc["files"]
    if record is None:
        if name not in files.get(key, {}):
            return
        del files[key][name]
        if not files[key]:
            del files[key]
    else:
        files.setdefault(key, {})[name] = asdict(record)
    path = records_path(home)
    if not files:  # the last install was undone: no file of ours stays behind
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        # The folders go too when empty, the home only if an install made it.
        for folder in (path.parent, home) if doc.get("created_home") else (path.parent,):
            with contextlib.suppress(OSError):
                folder.rmdir()
        return
    if not home.exists():
        doc["created_home"] = True
    # The home and its folder private, as the store makes them (osiris.store.fsutil, which
    # a client may not import); Path.mkdir gives only the last one its mode.
    for folder in (home, path.parent):
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    write_atomic(path, json.dumps(doc, indent=2, ensure_ascii=False) + "\n",
                 new_file_mode=0o600)
