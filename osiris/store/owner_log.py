"""The store owner's log: calls acknowledged before their rows reach DuckDB.

The store owner (:mod:`osiris.owner`) answers a hooked tool call from memory
(:mod:`osiris.store.write_behind`) and appends the call's writes here, one line per
transaction, ``fdatasync``'d before it replies. A flush later writes the rows of many
calls to DuckDB in one transaction (:func:`apply`), records the number of the last
record applied in table ``owner_log`` in that same transaction, and empties the file.

The log is two files. A flush that runs beside the calls (the owner's timer) first
switches the appends to the other file, which is empty, then writes what the first
one holds to DuckDB and empties it: calls go on while DuckDB writes. A flush that
runs inside the store (a read, a slow call, closing) writes everything and empties
both.

After a crash, whoever opens the store for writing next (the next owner, or a process
that opens the file directly) first applies the records numbered after
``owner_log.applied_lsn`` (:func:`replay`), from both files in the order of their
numbers: an acknowledged call is never lost, and no record is applied twice.

A line is ``<crc32 hex> <json>\\n`` with json ``[lsn, [[sql, params], ...]]``. A torn
last line (no newline, bad checksum, bad JSON) was never acknowledged: reading stops
there.
"""

from __future__ import annotations

import base64
import collections
import contextlib
import json
import logging
import os
import zlib
from pathlib import Path
from typing import Any

import duckdb

from osiris.errors import StoreError
from osiris.store import statements

log = logging.getLogger(__name__)

LOG_NAME = "owner-log.jsonl"
"""File name of the owner's log in the home."""
LOG_NAMES = (LOG_NAME, "owner-log.2.jsonl")
"""Its two files (appends go to one of them at a time)."""

Statement = tuple[str, list[Any]]

BLOB = "BLOB"
"""A log line's item that holds a blob the call stored, ``[BLOB, [ref, encoding, data]]``
(encoding ``utf-8`` or ``base64``): the owner writes small blob files without fsync and
this line is their durable copy until a flush has fsynced them (:func:`restore_blobs`)."""
MAX_LOGGED_BLOB = 256 << 10
"""Largest blob that travels in the log (a larger one is fsynced on the call's path)."""


def blob_item(ref: str, data: bytes) -> Statement:
    """The log item that holds ``data``."""
    try:
        return BLOB, [ref, "utf-8", data.decode("utf-8")]
    except UnicodeDecodeError:
        return BLOB, [ref, "base64", base64.b64encode(data).decode("ascii")]


def restore_blobs(home: Path, items: list[Statement]) -> int:
    """Write (durably) every blob of ``items`` whose file is missing or damaged; return
    how many. Run before the records' rows are applied."""
    from osiris.store.refs import RefStore

    refs, restored = RefStore(home / "refs"), 0
    for sql, params in items:
        if sql != BLOB:
            continue
        ref, encoding, text = params
        data = text.encode("utf-8") if encoding == "utf-8" else base64.b64decode(text)
        if refs.check(ref).ok:
            continue
        got, _ = refs.put(data)
        if got != ref:
            raise StoreError(f"the owner log's copy of {ref} hashes to {got}: the log is "
                             "damaged")
        restored += 1
    return restored


def log_path(home: Path) -> Path:
    """Where a home's owner log lives (its first file)."""
    return home / LOG_NAME


def log_paths(home: Path) -> tuple[Path, ...]:
    """Both files of a home's owner log."""
    return tuple(home / name for name in LOG_NAMES)


def has_records(home: Path) -> bool:
    """True when the home's owner log holds anything (a ``stat`` per file)."""
    for path in log_paths(home):
        try:
            if os.stat(path).st_size > 0:
                return True
        except OSError:
            pass
    return False


class OwnerLog:
    """The two append-only files, held open by the owner (appends go to ``path``)."""

    def __init__(self, home: Path) -> None:
        self.paths = log_paths(home)
        self.current = 0
        self._fd: int | None = None

    @property
    def path(self) -> Path:
        """The file appends go to now."""
        return self.paths[self.current]

    def _open(self) -> int:
        if self._fd is None:
            path = self.path
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        return self._fd

    def append(self, lsn: int, records: list[Statement]) -> None:
        """Write one transaction's statements and wait until they are on disk."""
        text = json.dumps([lsn, records], separators=(",", ":"), ensure_ascii=False)
        data = f"{zlib.crc32(text.encode()):08x} {text}\n".encode()
        try:
            fd = self._open()
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fdatasync(fd)
        except OSError as exc:
            raise StoreError(
                f"the owner log {self.path} could not be written ({exc}): "
                "the call was not recorded; free disk space or check the home's "
                "permissions") from exc

    def switch(self) -> int | None:
        """Send the next appends to the other file, if it is empty; return the index of
        the file left (None: the other file still holds records, nothing changed)."""
        other = 1 - self.current
        try:
            if os.stat(self.paths[other]).st_size > 0:
                return None
        except FileNotFoundError:
            pass
        except OSError:
            return None
        self.close()
        left, self.current = self.current, other
        return left

    def empty(self, index: int) -> None:
        """Empty file ``index``, whose records are all applied to DuckDB (not the one
        appends go to: the other file after a :meth:`switch`)."""
        if index == self.current:
            raise StoreError("the owner log file in use cannot be emptied on its own")
        _empty(self.paths[index])

    def truncate(self) -> None:
        """Empty both files (every record in them is applied to DuckDB)."""
        for index, path in enumerate(self.paths):
            if index == self.current and self._fd is not None:
                try:
                    os.ftruncate(self._fd, 0)
                    os.fsync(self._fd)
                except OSError as exc:  # the applied records stay and are skipped by number
                    log.warning("could not empty the owner log %s: %s", path, exc)
            else:
                _empty(path)

    def close(self) -> None:
        """Close the file."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None


def _empty(path: Path) -> None:
    try:
        fd = os.open(path, os.O_WRONLY)
    except FileNotFoundError:
        return
    except OSError as exc:
        log.warning("could not empty the owner log %s: %s", path, exc)
        return
    try:
        os.ftruncate(fd, 0)
        os.fsync(fd)
    except OSError as exc:  # the applied records stay and are skipped by number
        log.warning("could not empty the owner log %s: %s", path, exc)
    finally:
        os.close(fd)


def read_records(path: Path) -> list[tuple[int, list[Statement]]]:
    """Every complete record of the file, in order (a torn tail is dropped)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    records: list[tuple[int, list[Statement]]] = []
    for line in data.split(b"\n")[:-1]:  # the last piece has no newline: torn or empty
        crc, _, text = line.partition(b" ")
        try:
            if int(crc, 16) != zlib.crc32(text):
                break
            lsn, items = json.loads(text)
        except ValueError:
            break
        records.append((int(lsn), [(str(sql), list(params)) for sql, params in items]))
    return records


def read_all(home: Path) -> list[tuple[int, list[Statement]]]:
    """Every complete record of both files of a home's log, in the order of their
    numbers."""
    return sorted((record for path in log_paths(home) for record in read_records(path)),
                  key=lambda record: record[0])


def applied_lsn(con: duckdb.DuckDBPyConnection) -> int:
    """Number of the last owner-log record already in the database."""
    # fetchall, here and in osiris.store.write_behind: a result left half-read makes
    # DuckDB refuse the register() of the next batch.
    rows = con.execute("SELECT applied_lsn FROM owner_log WHERE id = 1").fetchall()
    return int(rows[0][0]) if rows else 0


def replay(con: duckdb.DuckDBPyConnection, home: Path) -> tuple[int, tuple[int, str] | None]:
    """Apply the records not yet in the database, inside the caller's transaction;
    return how many and the journal head they end on (None without events). The caller
    empties the file after its COMMIT."""
    records = read_all(home)
    done = applied_lsn(con)
    todo = [(lsn, items) for lsn, items in records if lsn > done]
    if not todo:
        return 0, None
    items = [item for _, items in todo for item in items]
    restored = restore_blobs(home, items)
    if restored:
        log.warning("restored %d blob files of %s from its owner log", restored, home)
    head = apply(con, [item for item in items if item[0] != BLOB])
    con.execute("UPDATE owner_log SET applied_lsn = ? WHERE id = 1", [todo[-1][0]])
    log.warning("applied %d owner-log records of %s left by an owner that stopped "
                "without flushing", len(todo), home)
    return len(todo), head


def apply(con: duckdb.DuckDBPyConnection,
          items: list[Statement]) -> tuple[int, str] | None:
    """Write deferred statements, in batches per table (inside the caller's transaction);
    return the last journal event's (seq, hash), or None.

    Rows are inserted table by table (no table refers to another), the task updates
    collapse to each task's last one, and cache hits add up; a statement this module
    does not know makes the whole list run one statement at a time, in order."""
    head = _head_of(items)
    known = all(sql in statements.INSERTS or sql in _UPDATES or sql in statements.WRITE_ONLY
                for sql, _ in items)
    if not known:
        for sql, params in items:
            con.execute(sql, params)
        return head
    rows: dict[str, list[list[Any]]] = {}
    tasks: dict[str, list[Any]] = {}
    hits: collections.Counter[tuple[str, str]] = collections.Counter()
    in_order: list[Statement] = []
    for sql, params in items:
        if sql in statements.INSERTS:
            rows.setdefault(sql, []).append(params)
        elif sql in statements.WRITE_ONLY:
            in_order.append((sql, params))
        elif sql == statements.UPDATE_TASK_STATE:
            state, digest, updated_us, status, task_id = params
            before = tasks.get(task_id)
            kept = status if status is not None else (before[3] if before else None)
            tasks[task_id] = [state, digest, updated_us, kept]
        else:
            hits[(params[0], params[1])] += 1
    for sql, batch in rows.items():
        _insert(con, statements.INSERTS[sql], batch)
    for task_id, (state, digest, updated_us, status) in tasks.items():
        con.execute(statements.UPDATE_TASK_STATE, [state, digest, updated_us, status, task_id])
    for (task_id, key), count in hits.items():
        con.execute("UPDATE tool_results SET hits = hits + ? WHERE task_id = ? AND"
                    " cache_key = ?", [count, task_id, key])
    for sql, params in in_order:
        con.execute(sql, params)
    return head


_UPDATES = (statements.UPDATE_TASK_STATE, statements.TOOL_RESULT_HIT)


def _head_of(items: list[Statement]) -> tuple[int, str] | None:
    for sql, params in reversed(items):
        if sql == statements.EVENT.sql:
            return int(params[0]), str(params[7])
    return None


def _insert(con: duckdb.DuckDBPyConnection, spec: statements.Insert,
            batch: list[list[Any]]) -> None:
    if spec.ignore_conflict_on is not None:  # the first of two rows with one key wins
        seen: set[tuple[Any, ...]] = set()
        unique = []
        for row in batch:
            key = tuple(row[i] for i in spec.ignore_conflict_on)
            if key not in seen:
                seen.add(key)
                unique.append(row)
        batch = unique
    if len(batch) <= 3:  # one statement of columns costs about as much as three rows
        for row in batch:
            con.execute(spec.sql, row)
        return
    columns = [[row[i] for row in batch] for i in range(len(spec.columns))]
    if not all(_one_type(column) for column in columns):
        # A list parameter has one type: DuckDB would cast a mixed column to it first.
        # Such a batch goes row by row, each value cast alone as a single insert does.
        con.executemany(spec.sql, batch)
        return
    verb = "INSERT OR IGNORE" if spec.ignore_conflict_on is not None else "INSERT"
    # One statement whose parameters are the columns, as lists, zipped back into rows by
    # UNNEST: about as fast as an Arrow table up to a few hundred rows (3.4 vs 2.7 ms
    # at 50, 5.6 vs 4.6 at 200, measured here), without importing pyarrow, which took
    # 0.55 s here and held a new owner's first call (a restart's replay) that long.
    unnest = ", ".join(["UNNEST(?)"] * len(spec.columns))
    con.execute(f"{verb} INTO {spec.table} ({', '.join(spec.columns)})"
                f" SELECT {unnest}", columns)


def _one_type(column: list[Any]) -> bool:
    """Whether a column's values (None aside) share one Python type (ints and floats
    count as one: a number)."""
    kinds = {float if type(v) is int else type(v) for v in column if v is not None}
    return len(kinds) <= 1
