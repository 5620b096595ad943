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
last line (no newline) was never acknowledged and is ignored. A complete line that
cannot be applied (a bad checksum, JSON of another shape, a statement DuckDB refuses, a
blob copy that does not hash to its ref) is set aside, byte for byte, in
``owner-log.quarantine.jsonl`` with the reason, and the other records are applied: each
call's first transaction replays the log, so one bad record used to fail every later
call. ``osiris health`` reports what was set aside.
"""

from __future__ import annotations

import base64
import collections
import contextlib
import json
import logging
import os
import time
import zlib
from pathlib import Path
from typing import Any, NamedTuple

import duckdb

from osiris.errors import InvalidInputError, StoreError
from osiris.store import statements
from osiris.store.fsutil import fsync_dir

log = logging.getLogger(__name__)

LOG_NAME = "owner-log.jsonl"
"""File name of the owner's log in the home."""
LOG_NAMES = (LOG_NAME, "owner-log.2.jsonl")
"""Its two files (appends go to one of them at a time)."""
QUARANTINE_NAME = "owner-log.quarantine.jsonl"
"""Records that could not be applied, each kept whole with the reason (never emptied by
OSIRIS)."""

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
            raise DamagedRecord(f"the owner log's copy of {ref} hashes to {got}: the log "
                                "is damaged")
        restored += 1
    return restored


class DamagedRecord(StoreError):
    """A log record whose blob copy does not hash to its ref."""


class Record(NamedTuple):
    """One complete, readable line of the log."""

    lsn: int
    items: list[Statement]
    line: bytes
    """The line as written (without its newline): what a quarantine keeps."""


class BadLine(NamedTuple):
    """A complete line that cannot be applied, and why."""

    line: bytes
    problem: str
    lsn: int | None = None


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


def scan(path: Path) -> tuple[list[Record], list[BadLine]]:
    """The file's complete records, in order, and its complete lines that are not
    records (a torn tail, the piece after the last newline, is neither)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return [], []
    records: list[Record] = []
    bad: list[BadLine] = []
    for line in data.split(b"\n")[:-1]:  # the last piece has no newline: torn or empty
        crc, _, text = line.partition(b" ")
        try:
            if int(crc, 16) != zlib.crc32(text):
                bad.append(BadLine(line, "its checksum does not match"))
                continue
            lsn, items = json.loads(text)
            records.append(Record(_lsn(lsn), _statements(items), line))
        except (ValueError, TypeError) as exc:
            bad.append(BadLine(line, f"not a record of the owner log ({exc})"))
    return records, bad


def _lsn(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"its number is {value!r}")
    return value


def _statements(items: object) -> list[Statement]:
    if not isinstance(items, list):
        raise ValueError("its statements are not a list")
    out: list[Statement] = []
    for item in items:
        sql, params = item
        if not isinstance(sql, str) or not isinstance(params, list):
            raise ValueError("a statement is not [sql, [params]]")
        out.append((sql, params))
    return out


def read_records(path: Path) -> list[tuple[int, list[Statement]]]:
    """Every complete record of the file, in order (a torn tail is dropped)."""
    return [(record.lsn, record.items) for record in scan(path)[0]]


def read_all(home: Path) -> list[tuple[int, list[Statement]]]:
    """Every complete record of both files of a home's log, in the order of their
    numbers."""
    return sorted((record for path in log_paths(home) for record in read_records(path)),
                  key=lambda record: record[0])


def quarantine_path(home: Path) -> Path:
    """Where a home's set-aside owner-log records are kept."""
    return home / QUARANTINE_NAME


def quarantine(home: Path, lines: list[tuple[Path, BadLine]]) -> None:
    """Append ``lines`` (each with the log file it came from) to the quarantine file and
    fsync it, unless it holds them already; StoreError when it cannot be written (the
    log is then left as it is: nothing is lost)."""
    path = quarantine_path(home)
    kept = {entry.get("record") or entry.get("record_base64") for entry in quarantined(home)}
    entries = []
    for source, bad in lines:
        try:
            record = {"record": bad.line.decode("utf-8")}
        except UnicodeDecodeError:
            record = {"record_base64": base64.b64encode(bad.line).decode("ascii")}
        if next(iter(record.values())) in kept:
            continue
        entries.append({"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                        "file": source.name, "lsn": bad.lsn, "problem": bad.problem,
                        **record})
        log.error("an owner-log record of %s (%s, number %s) cannot be applied: %s; it is "
                  "kept in %s and the other records are applied", home, source.name,
                  bad.lsn, bad.problem, path)
    if not entries:
        return
    text = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries).encode()
    try:
        created = not path.exists()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            view = memoryview(text)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        if created:  # the new file's name must outlive a crash too: the log is emptied next
            fsync_dir(home)
    except OSError as exc:
        raise StoreError(f"an owner-log record of {home} cannot be applied and the "
                         f"quarantine file {path} cannot be written ({exc}): the log is "
                         "kept as it is; free disk space or check the home's "
                         "permissions") from exc


def quarantined(home: Path) -> list[dict[str, Any]]:
    """The entries of the home's quarantine file (what ``osiris health`` reports)."""
    try:
        lines = quarantine_path(home).read_text("utf-8", errors="replace").splitlines()
    except OSError:
        return []
    entries = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            entry = {"problem": "an unreadable line of the quarantine file"}
        entries.append(entry if isinstance(entry, dict) else {"record": line})
    return entries


def applied_lsn(con: duckdb.DuckDBPyConnection) -> int:
    """Number of the last owner-log record already in the database."""
    # fetchall, here and in osiris.store.write_behind: a result left half-read makes
    # DuckDB refuse the register() of the next batch.
    rows = con.execute("SELECT applied_lsn FROM owner_log WHERE id = 1").fetchall()
    return int(rows[0][0]) if rows else 0


_BAD_RECORD = (DamagedRecord, InvalidInputError, duckdb.ProgrammingError,
               duckdb.DataError, duckdb.IntegrityError, duckdb.NotSupportedError,
               ValueError, TypeError, KeyError, IndexError)
"""What a record itself can be to blame for. DuckDB's I/O, memory and transaction
errors, and OSError, are the machine's: they fail the replay and leave the log as it is."""


def replay(con: duckdb.DuckDBPyConnection, home: Path) -> tuple[int, tuple[int, str] | None]:
    """Apply the records not yet in the database, inside the caller's transaction, which
    must have done nothing else yet (a record that fails is found by starting that
    transaction again); return how many were applied and the journal head they end on
    (None without events). Records that cannot be applied are quarantined (the module's
    docstring). The caller empties the file after its COMMIT."""
    records: list[Record] = []
    bad: list[tuple[Path, BadLine]] = []
    for path in log_paths(home):
        found, unreadable = scan(path)
        records += found
        bad += [(path, line) for line in unreadable]
    if bad:  # set aside before the log is emptied
        quarantine(home, bad)
    done = applied_lsn(con)
    todo = sorted((record for record in records if record.lsn > done),
                  key=lambda record: record.lsn)
    if not todo:
        return 0, None
    try:
        items = [item for record in todo for item in record.items]
        restored = restore_blobs(home, items)
        head = apply(con, [item for item in items if item[0] != BLOB])
    except _BAD_RECORD as exc:
        log.warning("the owner log of %s does not apply as a whole (%s): record by record",
                    home, exc)
        con.execute("ROLLBACK")
        con.execute("BEGIN TRANSACTION")
        restored, head, applied = _apply_each(con, home, todo)
    else:
        applied = len(todo)
    if restored:
        log.warning("restored %d blob files of %s from its owner log", restored, home)
    con.execute("UPDATE owner_log SET applied_lsn = ? WHERE id = 1", [todo[-1].lsn])
    log.warning("applied %d owner-log records of %s left by an owner that stopped "
                "without flushing", applied, home)
    return applied, head


def _apply_each(con: duckdb.DuckDBPyConnection, home: Path, todo: list[Record],
                ) -> tuple[int, tuple[int, str] | None, int]:
    """Apply ``todo`` one record at a time in the caller's transaction; a record that
    fails is quarantined and the transaction starts again without it. Return the blobs
    restored, the journal head and how many records were applied."""
    path = {record.line: source for source in log_paths(home)
            for record in scan(source)[0]}
    left = list(todo)
    while True:
        restored, head = 0, None
        for record in left:
            try:
                restored += restore_blobs(home, record.items)
                head = apply(con, [i for i in record.items if i[0] != BLOB]) or head
            except _BAD_RECORD as exc:
                quarantine(home, [(path.get(record.line, log_path(home)),
                                   BadLine(record.line, f"{type(exc).__name__}: {exc}",
                                           record.lsn))])
                left.remove(record)
                con.execute("ROLLBACK")
                con.execute("BEGIN TRANSACTION")
                break
        else:
            return restored, head, len(left)


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
