"""Store: the one object the engine uses for persistence.

It ties the DuckDB database (tables, journal, ledger), the blob store and the
journal witness together, so that one engine call is one transaction: every
state change and the journal events that describe it commit together or not at all.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import duckdb

from osiris.config import Settings
from osiris.core.hashing import canonical_json, sha256_hex
from osiris.errors import NotFoundError, OsirisError, StoreError, missing_home_message
from osiris.store import journal, owner_log, statements
from osiris.store.db import Database
from osiris.store.fsutil import make_private_dirs, tighten_home
from osiris.store.refs import RefStore
from osiris.store.write_behind import FLUSH_ROWS, DeferredConnection, WriteBehind

log = logging.getLogger(__name__)


class Clock(Protocol):
    """Source of wall-clock time (injectable so replays are deterministic)."""

    def now_us(self) -> int:
        """Microseconds since the Unix epoch."""
        ...


class SystemClock:
    """The real clock."""

    def now_us(self) -> int:
        return time.time_ns() // 1000


@dataclass(frozen=True)
class RefMeta:
    """What the database records about a blob."""

    ref: str
    size_bytes: int
    tokens: int
    encoding: str
    media_type: str
    created_us: int
    redaction_version: str | None
    redactions: int


class Tx:
    """One write transaction: table writes plus the journal events describing them."""

    def __init__(self, con: duckdb.DuckDBPyConnection, cursor: journal.JournalCursor,
                 clock: Clock, actor: str) -> None:
        self.con = con
        self._cursor = cursor
        self._clock = clock
        self.actor = actor
        self.now_us = clock.now_us()

    def event(self, kind: str, body: dict[str, Any], *, task_id: str | None,
              actor: str | None = None) -> journal.JournalEvent:
        """Append a journal event (committed with the transaction)."""
        return journal.append_event(self.con, self._cursor, ts_us=self.now_us, task_id=task_id,
                                    actor=actor or self.actor, kind=kind, body=body)

    def insert_task(self, task_id: str, *, objective: str, state: dict[str, Any],
                    project_id: str | None = None, agent_id: str | None = None,
                    parent_task_id: str | None = None, owner: str | None = None) -> None:
        """Create a task row."""
        text = canonical_json(state)
        self.con.execute(
            statements.TASK.sql,
            [task_id, self.now_us, self.now_us, objective, project_id, agent_id, parent_task_id,
             "active", text, sha256_hex(text), owner],
        )

    def update_task(self, task_id: str, state: dict[str, Any] | str,
                    status: str | None = None) -> str:
        """Replace a task's state (its dict, or that dict's canonical JSON); the journal
        event says what changed. Return the state's hash (``TaskState.state_hash``)."""
        text = state if isinstance(state, str) else canonical_json(state)
        digest = sha256_hex(text)
        self.con.execute(statements.UPDATE_TASK_STATE,
                         [text, digest, self.now_us, status, task_id])
        return digest

    def record_ref(self, ref: str, *, size_bytes: int, tokens: int, encoding: str,
                   media_type: str, redaction_version: str | None, redactions: int) -> bool:
        """Record blob metadata once; True when the ref is new to the database."""
        row = self.con.execute(statements.REF_EXISTS, [ref]).fetchone()
        if row is not None:
            return False
        self.con.execute(statements.REF.sql,
                         [ref, size_bytes, tokens, encoding, media_type, self.now_us,
                          redaction_version, redactions])
        return True

    def link_ref(self, task_id: str, ref: str, via: str) -> None:
        """Make ``ref`` visible to ``task_id`` (idempotent)."""
        self.con.execute(statements.TASK_REF.sql, [task_id, ref, self.now_us, via])

    def ledger(self, *, kind: str, task_id: str | None, event_seq: int | None,
               encoding: str, tokens: int = 0, ref: str | None = None,
               saved_claimed: int = 0, saved_proven: int = 0, overhead_tokens: int = 0,
               cost_model: str | None = None, cost_usd: float = 0.0,
               context_tokens: int = 0, detail: dict[str, Any] | None = None) -> None:
        """Append a ledger row."""
        self.con.execute(
            statements.LEDGER.sql,
            [self.now_us, task_id, event_seq, kind, ref, tokens, encoding, saved_claimed,
             saved_proven, overhead_tokens, cost_model, cost_usd, context_tokens,
             canonical_json(detail or {})],
        )

    @property
    def last_event_seq(self) -> int:
        """Sequence number of the newest event in the chain (this transaction's included)."""
        return self._cursor.seq

    def last_event_of(self, task_id: str | None) -> int | None:
        """Sequence number of the newest event of ``task_id`` appended in this transaction."""
        for event in reversed(self._cursor.appended):
            if event.task_id == task_id:
                return event.seq
        return None

    def usage_report(self, *, task_id: str, event_seq: int, provider: str, prompt_tokens: int,
                     cache_read_tokens: int, cache_write_tokens: int, output_tokens: int,
                     estimated_prompt_tokens: int | None, raw: dict[str, Any]) -> None:
        """Store provider-reported usage (ground truth) beside OSIRIS's estimate."""
        self.con.execute(
            statements.USAGE_REPORT.sql,
            [self.now_us, task_id, event_seq, provider, prompt_tokens, cache_read_tokens,
             cache_write_tokens, output_tokens, estimated_prompt_tokens, canonical_json(raw)],
        )


class Store:
    """Persistence of one OSIRIS home, safe to use from many processes at once."""

    def __init__(self, settings: Settings, *, exclusive: bool = False,
                 clock: Clock | None = None, create: bool = True,
                 sole_writer: bool = False, write_behind: bool = False) -> None:
        """``create=False`` (read-only commands): open an existing home or raise
        NotFoundError, creating no directory or file; the default creates the home
        (the directory now, the database at the first read or write). ``sole_writer``
        (with ``exclusive``; the store owner): every event is appended through
        :meth:`Tx.event`, so the store keeps the journal head instead of reading it at
        the start of each transaction. ``write_behind`` (with both; the store owner):
        hooked tool calls are answered from memory and logged, their rows written to
        DuckDB later in batches (:mod:`osiris.store.write_behind`)."""
        self.settings = settings
        self.home = settings.home
        if create:
            try:
                make_private_dirs(self.home)
            except OSError as exc:
                raise StoreError(f"cannot create the OSIRIS home {self.home}: "
                                 f"{exc.strerror or exc}; point OSIRIS_HOME at a directory "
                                 "this user may write") from exc
        elif not settings.db_path.is_file():
            # A mistyped OSIRIS_HOME must be caught, not silently become a new empty home.
            raise NotFoundError(missing_home_message(self.home))
        # Every process that opens the home, the store owner first, takes group and other
        # permissions off what an older OSIRIS, or a light client with the user's umask
        # (`osiris run`'s spool, a hook log), left open.
        tighten_home(self.home)
        self.db = Database(settings.db_path, lock_timeout_s=settings.lock_timeout_s,
                           exclusive=exclusive, create=create)
        self.refs = RefStore(settings.refs_dir)
        self.clock: Clock = clock or SystemClock()
        self._local = threading.local()
        #: The journal's last committed (seq, hash), kept by a sole writer.
        self._sole_writer = sole_writer and exclusive
        self._head: tuple[int, str] | None = None
        self.behind = WriteBehind(self.home) if write_behind and self._sole_writer else None
        journal.remove_stale_temp_files(self.home)

    @classmethod
    def owned(cls, settings: Settings, *, clock: Clock | None = None) -> Store:
        """The store as the home's owner (:mod:`osiris.owner`) opens it for its life: the
        database held alone, the journal head kept here, and write-behind when
        ``settings.write_behind`` (OSIRIS_WRITE_BEHIND, on by default)."""
        return cls(settings, exclusive=True, sole_writer=True,
                   write_behind=settings.write_behind, clock=clock)

    @contextlib.contextmanager
    def transaction(self, actor: str = "system") -> Iterator[Tx]:
        """One atomic unit of work; nested calls join the outer one.

        After COMMIT, while the lock is still held, the journal witness advances to
        the last event appended, so the witness never runs ahead of the database. When
        that write fails the transaction stays committed and
        :class:`~osiris.errors.CommittedWithErrors` is raised; the witness lags (the
        audit says so) until the next commit moves it to the head.
        """
        outer: Tx | None = getattr(self._local, "tx", None)
        if outer is not None:
            yield outer
            return
        if self.behind is not None:
            with self._deferred_transaction(actor) as tx:
                yield tx
            return
        holder: list[Tx] = []

        replaying = owner_log.has_records(self.home)

        def advance_witness() -> None:
            cursor = holder[0]._cursor
            if self._sole_writer:  # committed: the next transaction starts from here
                self._head = (cursor.seq, cursor.hash)
            if cursor.appended or replaying:
                self._write_witness(cursor)

        def empty_owner_log() -> None:
            advance_witness()
            owner_log.OwnerLog(self.home).truncate()

        with self.db.write(on_commit=empty_owner_log if replaying else advance_witness) as con:
            if replaying:  # an owner died with acknowledged calls not yet written here
                owner_log.replay(con, self.home)
            head = self._head if self._sole_writer and not replaying else None
            cursor = journal.JournalCursor(*head) if head else journal.read_tail(con)
            tx = Tx(con, cursor, self.clock, actor)
            holder.append(tx)
            self._local.tx = tx
            try:
                yield tx
            finally:
                self._local.tx = None

    @contextlib.contextmanager
    def _deferred_transaction(self, actor: str) -> Iterator[Tx]:
        """The owner's transaction: hot statements from memory, durable in the owner log
        at commit; anything else continues on DuckDB (see osiris.store.write_behind)."""
        behind = self.behind
        assert behind is not None
        with self.db.hold() as con:
            if not behind.recovered:
                behind.recover(con)
            if self._head is None:
                behind.flush(con)
                tail = journal.read_tail(con)
                self._head = (tail.seq, tail.hash)
            cursor = journal.JournalCursor(*self._head)
            deferred = DeferredConnection(behind, con, self.db.join)
            tx = Tx(deferred, cursor, self.clock, actor)  # type: ignore[arg-type]
            self._local.tx = tx
            try:
                yield tx
                head = (cursor.seq, cursor.hash) if cursor.appended else None
                on_duckdb = deferred.commit(head, self._taken_blobs())
            except BaseException:
                deferred.rollback(self._taken_blobs())
                raise
            finally:
                self._local.tx = None
            self._head = (cursor.seq, cursor.hash)
            if on_duckdb and cursor.appended:
                self._write_witness(cursor)
            if len(behind.pending) >= FLUSH_ROWS:
                behind.flush(con)

    def _write_witness(self, cursor: journal.JournalCursor) -> None:
        try:
            journal.write_witness(self.home, cursor.seq, cursor.hash)
        except OSError as exc:
            raise StoreError(
                f"the journal witness {self.home / journal.WITNESS_NAME} could not "
                f"be updated to event {cursor.seq} ({exc}); it lags behind the "
                "journal until the next commit (osiris audit reports the lag)"
            ) from exc

    def flush(self, age_s: float = 0.0) -> bool:
        """The owner: write deferred rows that waited ``age_s`` to DuckDB; True if any.
        The rows are taken inside the store and written beside the calls, on a
        connection of their own (see osiris.store.write_behind)."""
        behind = self.behind
        if behind is None or not behind.due(age_s):
            return False
        with self.db.hold() as con:
            if not behind.due(age_s):
                return False
            batch = behind.take()
            if batch is None:
                behind.flush(con)
                return True
            own = con.cursor()
        behind.write(batch, own)
        return True

    @contextlib.contextmanager
    def read(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A read-only connection (shared with other readers). It sees every call
        acknowledged before it: the owner flushes its deferred rows first, and a process
        opening the file after an owner died applies the owner log first."""
        tx: Tx | None = getattr(self._local, "tx", None)
        if self.behind is not None:
            if tx is not None and isinstance(tx.con, DeferredConnection):
                tx.con.go_slow()
            else:
                with self.db.hold() as con:
                    self.behind.flush(con)
        elif tx is None and owner_log.has_records(self.home):
            try:
                with self.transaction():
                    pass  # applies the log
            except OsirisError as exc:  # a read-only home: read what the file holds
                log.warning("the owner log of %s could not be applied (%s): calls an owner "
                            "acknowledged before it stopped are not in this read", self.home,
                            exc)
        with self.db.read() as con:
            yield con

    @contextlib.contextmanager
    def reader(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection of its own for one long read (a reader's query through the
        store owner): it sees every acknowledged call, as :meth:`read` does, but runs
        beside the calls instead of holding the store while it lasts (a notebook's
        70-second query used to hold every hook of the home that long). Its user may
        ``interrupt()`` it from another thread. Outside the owner: :meth:`read`."""
        if not self.db.exclusive:
            with self.read() as con:
                yield con
            return
        with self.db.hold() as con:
            if self.behind is not None:
                self.behind.flush(con)
            cursor = con.cursor()
        try:
            yield cursor
        finally:
            cursor.close()

    def put_blob(self, data: bytes) -> tuple[str, bool]:
        """Store bytes in the ref store (outside any transaction: blobs are immutable).

        The owner (write-behind) writes a blob of at most ``MAX_LOGGED_BLOB`` without
        fsync and hands its bytes to this thread's next commit, whose owner-log line is
        fsync'd before the call is answered; a flush fsyncs the file before the log is
        emptied, and a replay rewrites a file that a crash left missing or torn."""
        if self.behind is None or len(data) > owner_log.MAX_LOGGED_BLOB:
            return self.refs.put(data)
        ref, new = self.refs.put(data, durable=False)
        if new:
            blobs = getattr(self._local, "blobs", None)
            if blobs is None:
                blobs = self._local.blobs = []
            blobs.append((ref, data, self.refs.path_for(ref)))
        return ref, new

    def _taken_blobs(self) -> list[tuple[str, bytes, Path]]:
        """The blobs this thread wrote without fsync since its last commit."""
        blobs: list[tuple[str, bytes, Path]] = getattr(self._local, "blobs", None) or []
        self._local.blobs = []
        return blobs

    def ref_meta(self, ref: str) -> RefMeta:
        """Metadata of a ref; NotFoundError when it was never recorded."""
        with self.read() as con:
            row = con.execute(
                "SELECT ref, size_bytes, tokens, encoding, media_type, created_us,"
                " redaction_version, redactions FROM refs WHERE ref = ?", [ref]).fetchone()
        if row is None:
            raise NotFoundError(f"{ref} is unknown to this OSIRIS home")
        return RefMeta(*row)

    def task_row(self, task_id: str) -> dict[str, Any]:
        """The task's row with its state parsed; NotFoundError when absent."""
        with self.read() as con:
            cur = con.execute("SELECT * FROM tasks WHERE task_id = ?", [task_id])
            names = [d[0] for d in cur.description]
            row = cur.fetchone()
        if row is None:
            raise NotFoundError(f"task {task_id!r} does not exist in {self.home}; "
                                "start one with plan(mode='start')")
        record = dict(zip(names, row, strict=True))
        record["state"] = json.loads(record["state"])
        return record

    def close(self) -> None:
        """Release held resources (the exclusive connection, if any); the owner writes
        its deferred rows first."""
        if self.behind is not None:
            try:
                if self.behind.unwritten():
                    with self.db.hold() as con:  # after any flush beside the calls
                        self.behind.flush(con)
            finally:
                self.behind.close()
        self.db.close()
