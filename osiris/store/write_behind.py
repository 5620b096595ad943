"""Write-behind for the store owner: tool calls answered from memory, rows written later.

DuckDB costs 0.4-2.8 ms per statement on these machines, and a hooked tool call runs
about 10 (precheck) to 22 (observe) of them. The store owner is the home's only writer,
so it can keep what those statements read in memory, exactly:

- :class:`~osiris.store.hot.HotCache` holds, per task, what the statements of
  :mod:`osiris.store.statements` read (state, refs, context by source and by ref, the
  recent calls, cached tool results, the last event's time), loaded from DuckDB the
  first time a task is touched and then kept up to date by the same statements' writes
  (:mod:`osiris.store.hot`).
- :class:`DeferredConnection` is the ``tx.con`` the engine sees in the owner. A named
  read is answered from the cache; a named write updates the cache and is deferred. At
  COMMIT the deferred statements go to the owner log (:mod:`osiris.store.owner_log`),
  ``fdatasync``'d, and only then does the call return: that is the durability point.
- Any other statement (a checkpoint, a handoff, a dashboard query) first flushes what
  is deferred, then runs on DuckDB inside a real transaction that also holds the
  transaction's own deferred writes; if it writes, the cache is dropped and reloaded on
  demand. A rollback drops the cache too. So an unknown statement is always correct.
- :class:`WriteBehind` flushes: the deferred rows of many calls, in one DuckDB
  transaction, batched per table, with the log number they end on; then the log is
  emptied and the journal witness advances. The owner's timer flushes rows that have
  waited a moment *beside* the calls (:meth:`WriteBehind.take`, then
  :meth:`WriteBehind.write` on a connection of its own, outside the store: a flush
  takes DuckDB 50-100 ms, which held every call back while it ran inside); a read that
  needs DuckDB, a slow call and closing flush inside the store (:meth:`WriteBehind.flush`),
  after waiting for a flush beside them to end.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from osiris.errors import StoreError
from osiris.store import journal, owner_log
from osiris.store.fsutil import atomic_write, fsync_dir, fsync_file
from osiris.store.hot import DONE, HANDLERS, PLAIN, HotCache, Rows, TaskHot, load_task
from osiris.store.owner_log import Statement

Blob = tuple[str, bytes, Path]
"""A blob a call wrote without fsync: its ref, its bytes, its file."""

log = logging.getLogger(__name__)

FLUSH_ROWS = 4_000
"""Deferred statements after which a commit flushes at once (bounds memory and replay)."""

class DeferredConnection:
    """``tx.con`` in the owner: hot statements from memory, the rest on DuckDB."""

    def __init__(self, behind: WriteBehind, con: duckdb.DuckDBPyConnection,
                 join: Callable[[duckdb.DuckDBPyConnection | None], None]) -> None:
        self._behind = behind
        self._con = con
        self._join = join
        self.deferred: list[Statement] = []
        self.slow = False
        self._slow_writes = False
        self._mutated = False
        #: Statements that ran on DuckDB (the tests' check that hot calls run none).
        self.duckdb_statements = 0

    # -- what the engine calls -----------------------------------------------------

    def execute(self, sql: str, params: list[Any] | None = None) -> Any:
        if not self.slow and not self._behind.broken:
            handler = HANDLERS.get(sql)
            if handler is not None and isinstance(params, list) \
                    and all(isinstance(p, PLAIN) for p in params):
                answer = handler(self, params)
                if answer is not None:
                    return answer
            self.go_slow(sql)
        if not sql.lstrip()[:6].upper().startswith(("SELECT", "WITH")):
            self._slow_writes = True
        self.duckdb_statements += 1
        return self._con.execute(sql, params) if params is not None else self._con.execute(sql)

    def __getattr__(self, name: str) -> Any:
        # Anything else a DuckDB connection offers runs there, as a possible write.
        self.go_slow(name)
        self._slow_writes = True
        return getattr(self._con, name)

    # -- modes ---------------------------------------------------------------------

    def go_slow(self, reason: str = "a read of the store") -> None:
        """Continue this transaction on DuckDB: flush earlier transactions' rows (in a
        transaction of their own), BEGIN, and run this transaction's deferred writes."""
        if self.slow:
            return
        self._behind.slow_reasons[" ".join(reason.split())[:60]] += 1
        self._behind.flush(self._con)
        self._con.execute("BEGIN TRANSACTION")
        self.slow = True
        self._join(self._con)
        for sql, params in self.deferred:  # the cache already holds them
            self._con.execute(sql, params)
            self.duckdb_statements += 1
        self.deferred = []

    def commit(self, head: tuple[int, str] | None, blobs: list[Blob] | None = None) -> bool:
        """Make the transaction durable, with the blob files the call wrote without
        fsync (:data:`Blob`); True when it ran on DuckDB."""
        if self.slow:
            self._behind.sync_blobs(blobs or [])  # no log line holds them: fsync now
            self._con.execute("COMMIT")
            self._join(None)
            if self._slow_writes:
                self._behind.reset(self._con)
            return True
        if self.deferred or blobs:
            self._behind.record(self.deferred, head, blobs or [])
        if self._behind.cache.trim():
            self._behind.reset(self._con)
        return False

    def rollback(self, blobs: list[Blob] | None = None) -> None:
        """Undo: DuckDB's part rolls back, the deferred part is dropped, and so is the
        cache (it may hold this transaction's changes). Blob files stay (immutable, and
        nothing refers to them); the next flush fsyncs them."""
        self._behind.note_unsynced(blobs or [])
        if self.slow:
            with contextlib.suppress(duckdb.Error):
                self._con.execute("ROLLBACK")
            self._join(None)
        self.deferred = []
        if self._mutated or self._slow_writes:
            self._behind.reset(self._con)

    # -- used by the handlers (osiris.store.hot.Deferred) ----------------------------

    @property
    def cache(self) -> HotCache:
        """The owner's hot data."""
        return self._behind.cache

    def flush(self) -> None:
        """Write what earlier transactions deferred (before reading DuckDB whole)."""
        self._behind.flush(self._con)

    def committed_rows(self, sql: str, params: list[Any] | None = None,
                       ) -> list[tuple[Any, ...]]:
        """Every row of a read of what DuckDB holds."""
        self.duckdb_statements += 1
        return [tuple(r) for r in self._con.execute(sql, params or []).fetchall()]

    def task(self, task_id: Any) -> TaskHot | None:
        """The task's hot data, loaded on first use (after a flush)."""
        if not isinstance(task_id, str):
            return None
        cache = self._behind.cache
        hot = cache.tasks.get(task_id)
        if hot is None:
            self._behind.flush(self._con)
            hot = load_task(self._con, task_id)
            self.duckdb_statements += 1
            cache.loads += 1
            if hot is None:
                return None
            cache.tasks[task_id] = hot
        else:
            cache.tasks.move_to_end(task_id)
        return hot

    def defer(self, sql: str, params: list[Any]) -> Rows:
        self.deferred.append((sql, params))
        self._mutated = True
        return DONE

    def committed_row(self, sql: str, params: list[Any]) -> tuple[Any, ...] | None:
        """A keyed lookup in what DuckDB holds (for tables the deferred rows never miss:
        the cache records every deferred row of them)."""
        self.duckdb_statements += 1
        rows = self._con.execute(sql, params).fetchall()
        return tuple(rows[0]) if rows else None


@dataclass
class Batch:
    """Deferred rows taken for a flush beside the calls (:meth:`WriteBehind.take`)."""

    items: list[Statement]
    lsn: int
    """The number of the last log record they come from."""
    head: tuple[int, str] | None
    unsynced: dict[Path, bytes]
    created: set[str]
    log_file: int
    """The log file that holds their records (appends went to the other one)."""


class WriteBehind:
    """The owner's deferred rows, their log, and the flushes that write them.

    Locks: the store's mutex (held by every call, and by :meth:`take` and
    :meth:`flush`), then ``_flushing`` (held from :meth:`take` to the end of
    :meth:`write`, and by :meth:`flush`). :meth:`write` runs without the store's mutex and
    never takes it, so a call that needs DuckDB waits for the write to end, never the
    other way round."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.log = owner_log.OwnerLog(home)
        self.unsynced: dict[Path, bytes] = {}
        """Blob files written without fsync whose bytes are in the log (until a flush)."""
        self.cache = HotCache()
        self.pending: list[Statement] = []
        self._pending_head: tuple[int, str] | None = None
        self._lsn = 0
        self._oldest: float | None = None
        self.recovered = False
        #: A flush failed while the cache had to be dropped: everything runs on DuckDB
        #: (each call retries the flush first) until one succeeds.
        self.broken = False
        #: Why transactions continued on DuckDB (the statement's start), by count.
        self.slow_reasons: collections.Counter[str] = collections.Counter()
        #: Flushes done and the rows they wrote (reported by the benchmark).
        self.flushes = 0
        self.flushed_rows = 0
        #: Held while rows are written to DuckDB (see the class's docstring).
        self._flushing = threading.Lock()
        #: Guards ``unsynced`` between the calls and a write beside them.
        self._books = threading.Lock()
        #: A batch whose write failed: the next flush writes it first.
        self._failed: Batch | None = None

    def recover(self, con: duckdb.DuckDBPyConnection) -> None:
        """At the owner's first transaction: apply what a crashed owner left in the log."""
        con.execute("BEGIN TRANSACTION")
        try:
            _, head = owner_log.replay(con, self.home)
            self._lsn = owner_log.applied_lsn(con)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        self.log.truncate()
        if head is not None:
            _advance_witness(self.home, head)
        self.recovered = True

    def record(self, items: list[Statement], head: tuple[int, str] | None,
               blobs: list[Blob] | None = None) -> None:
        """Log one committed transaction's statements, and the bytes of the blob files it
        wrote without fsync (the durability point)."""
        logged = [*items, *(owner_log.blob_item(ref, data) for ref, data, _ in blobs or [])]
        self.log.append(self._lsn + 1, logged)
        self._lsn += 1
        self.note_unsynced(blobs or [])
        self.pending.extend(items)
        if head is not None:
            self._pending_head = head
        if self._oldest is None:
            self._oldest = time.monotonic()

    def unwritten(self) -> bool:
        """Rows not yet in DuckDB: deferred, being written beside the calls, or left by
        a failed write."""
        return bool(self.pending) or self._failed is not None or self._flushing.locked()

    def note_unsynced(self, blobs: list[Blob]) -> None:
        """Blob files written without fsync, for the next flush to fsync."""
        if blobs:
            with self._books:
                self.unsynced.update((path, data) for _, data, path in blobs)

    def due(self, age_s: float) -> bool:
        """True when rows have waited ``age_s`` or there are too many (or a write
        failed)."""
        return self._failed is not None or (bool(self.pending) and (
            len(self.pending) >= FLUSH_ROWS or (
                self._oldest is not None and time.monotonic() - self._oldest >= age_s)))

    def sync_blobs(self, blobs: list[Blob]) -> None:
        """fsync blob files written without it (rewriting one that is gone or changed),
        then their directories."""
        folders: dict[Path, None] = {}
        for ref, data, path in blobs:
            try:
                fsync_file(path)
            except FileNotFoundError:
                log.warning("blob file %s vanished before its fsync: written again", path)
                atomic_write(path, data)
            folders[path.parent] = None
            del ref
        for folder in folders:
            fsync_dir(folder)

    def _sync(self, unsynced: dict[Path, bytes]) -> None:
        try:
            self.sync_blobs([("", data, path) for path, data in unsynced.items()])
        except OSError as exc:
            raise StoreError(f"the store owner could not fsync blob files of {self.home} "
                             f"({exc}); their copies stay in its owner log") from exc

    def _apply(self, con: duckdb.DuckDBPyConnection, items: list[Statement],
               lsn: int) -> None:
        """``items`` in one DuckDB transaction that records ``lsn`` as applied."""
        began = False
        try:
            con.execute("BEGIN TRANSACTION")
            began = True
            owner_log.apply(con, items)
            con.execute("UPDATE owner_log SET applied_lsn = ? WHERE id = 1", [lsn])
            con.execute("COMMIT")
        except BaseException as exc:
            if began:
                with contextlib.suppress(duckdb.Error):
                    con.execute("ROLLBACK")
            if isinstance(exc, duckdb.Error):
                raise StoreError(
                    f"the store owner could not write {len(items)} acknowledged rows "
                    f"to {self.home} ({exc}); they are safe in its owner log and are "
                    "written when the store opens next (free disk space, then retry)"
                ) from exc
            raise
        self.flushes += 1
        self.flushed_rows += len(items)
        self.broken = False

    def flush(self, con: duckdb.DuckDBPyConnection) -> None:
        """Inside the store: write every deferred row to DuckDB in one transaction
        (outside any other), after a flush beside the calls has ended (and first the rows
        of one that failed). Blob files the log holds copies of are fsynced first: both
        log files are emptied after."""
        with self._flushing:
            failed = self._failed
            items = [*(failed.items if failed else ()), *self.pending]
            with self._books:
                unsynced = {**(failed.unsynced if failed else {}), **self.unsynced}
            if not items:
                if unsynced:  # only blobs wait: make them durable, empty the log
                    self._sync(unsynced)
                    self._forget_synced(unsynced)
                    self.log.truncate()
                return
            self._sync(unsynced)
            self._apply(con, items, self._lsn)
            self._failed = None
            self._forget_synced(unsynced)
            self.cache.created.clear()
            self.pending = []
            self._oldest = None
            self.log.truncate()
            head = self._pending_head or (failed.head if failed else None)
            if head is not None:
                _advance_witness(self.home, head)
                self._pending_head = None

    def take(self) -> Batch | None:
        """Inside the store: the deferred rows, for :meth:`write` to flush beside the
        calls; appends go to the other log file from here on. None when there is
        nothing to take, or a write failed, or the other file still holds records:
        :meth:`flush` then."""
        if not self.pending or self._failed is not None \
                or not self._flushing.acquire(blocking=False):
            return None
        left = self.log.switch()
        if left is None:
            self._flushing.release()
            return None
        with self._books:
            unsynced = dict(self.unsynced)
        batch = Batch(self.pending, self._lsn, self._pending_head, unsynced,
                      set(self.cache.created), left)
        self.pending, self._pending_head, self._oldest = [], None, None
        return batch

    def write(self, batch: Batch, con: duckdb.DuckDBPyConnection) -> None:
        """Outside the store: write ``batch`` to DuckDB on ``con`` (a connection of the
        caller's own, closed here), empty its log file and advance the witness. On
        failure the rows stay in the log and in memory, and the next flush writes them
        first."""
        try:
            self._sync(batch.unsynced)
            self._apply(con, batch.items, batch.lsn)
            self.log.empty(batch.log_file)
            self._forget_synced(batch.unsynced)
            # Tasks the batch inserted are in DuckDB now (a set operation: atomic under
            # the GIL against a call adding one).
            self.cache.created.difference_update(batch.created)
            if batch.head is not None:
                _advance_witness(self.home, batch.head)
        except BaseException:
            self._failed = batch
            raise
        finally:
            con.close()
            self._flushing.release()

    def _forget_synced(self, synced: dict[Path, bytes]) -> None:
        """Blob files fsynced by a flush leave ``unsynced`` (unless written since)."""
        with self._books:
            for path, data in synced.items():
                if self.unsynced.get(path) is data:
                    del self.unsynced[path]

    def reset(self, con: duckdb.DuckDBPyConnection) -> None:
        """Drop the cache, after writing what is deferred (see :class:`HotCache`)."""
        try:
            self.flush(con)
        except Exception as exc:  # the caller's own outcome stands; calls go slow
            log.error("write-behind: %s", exc)
            self.broken = True
        self.cache.clear()

    def close(self) -> None:
        """Close the log file."""
        self.log.close()


def _advance_witness(home: Path, head: tuple[int, str]) -> None:
    try:
        journal.write_witness(home, *head)
    except OSError as exc:  # the audit reports the lag; the rows are committed
        log.warning("the journal witness of %s could not advance to event %d: %s",
                    home, head[0], exc)
