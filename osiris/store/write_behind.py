"""Write-behind for the store owner: tool calls answered from memory, rows written later.

DuckDB costs 0.4-2.8 ms per statement on these machines, and a hooked tool call runs
about 10 (precheck) to 22 (observe) of them. The store owner is the home's only writer,
so it can keep what those statements read in memory, exactly:

- :class:`HotCache` holds, per task, what the statements of
  :mod:`osiris.store.statements` read (state, refs, context by source and by ref, the
  recent calls, cached tool results, the last event's time), loaded from DuckDB the
  first time a task is touched and then kept up to date by the same statements' writes.
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

import bisect
import collections
import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import Any

import duckdb

from osiris.core.prune import ContextItem, context_item
from osiris.errors import StoreError
from osiris.store import journal, owner_log, statements
from osiris.store.fsutil import atomic_write, fsync_dir, fsync_file
from osiris.store.owner_log import Statement

Blob = tuple[str, bytes, Path]
"""A blob a call wrote without fsync: its ref, its bytes, its file."""

log = logging.getLogger(__name__)

KEEP_CALLS = 512
"""Recent calls kept per task (LoopGuard reads the newest 300)."""
MAX_TASKS = 256
"""Tasks kept in memory; the least recently used is dropped beyond."""
MAX_REFS = 200_000
"""Known refs kept in memory before the set starts over."""
FLUSH_ROWS = 4_000
"""Deferred statements after which a commit flushes at once (bounds memory and replay)."""

_ITEMS_ALL = (
    "SELECT ref, sum(context_tokens), min(ts_us), arg_min(detail->>'kind', ts_us),"
    " arg_min(detail->>'tool', ts_us) FROM ledger WHERE task_id = ? AND ref IS NOT NULL"
    " AND (kind LIKE 'payload.%' OR kind LIKE 'prompt.%' OR kind = 'drop_receipt')"
    " GROUP BY ref")
_CONTEXT_PREFIXES = ("payload.", "prompt.")
_PLAIN = (str, int, float, bool, type(None))


class Rows:
    """An answer from memory, read like a DuckDB result."""

    __slots__ = ("_rows",)

    def __init__(self, rows: Sequence[tuple[Any, ...]]) -> None:
        self._rows = rows

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._rows[0] if self._rows else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        return list(self._rows)


_DONE = Rows([])


@dataclass
class TaskHot:
    """What the hot statements read about one task."""

    owner: str | None
    state: str
    refs: set[str]
    #: split_part(kind, '.', 1) → [sum(context_tokens), sum(greatest(context_tokens, 0))]
    sources: dict[str, list[Any]]
    #: ref → [sum(context_tokens), min(ts_us), kind and tool of the earliest row]
    items: dict[str, list[Any]]
    last_ts: int | None
    #: cache_key → (ref, created_us, tokens)
    results: dict[str, tuple[Any, ...]]
    #: the newest calls as RECENT_CALLS returns them, oldest first
    calls: list[tuple[Any, ...]]
    calls_complete: bool
    call_seqs: set[int]
    digests: set[str]
    signatures: set[str]
    #: failure signature → its first error text (FAILURE_TEXT's answer)
    failures: dict[str, Any]
    #: CONTEXT_ITEMS' answer, kept while items are only added after the newest (None:
    #: made again from ``items`` at the next read)
    context: list[ContextItem] | None = None


def load_task(con: duckdb.DuckDBPyConnection, task_id: str) -> TaskHot | None:
    """Read one task's hot data from DuckDB (everything deferred is flushed first)."""
    found = con.execute("SELECT owner, state FROM tasks WHERE task_id = ?",
                        [task_id]).fetchall()
    if not found:
        return None
    row = found[0]

    def column(sql: str) -> list[Any]:
        return [r[0] for r in con.execute(sql, [task_id]).fetchall()]

    sources = {str(src): [total, positive] for src, total, positive in
               con.execute(statements.CONTEXT_BY_SOURCE, [task_id]).fetchall()}
    items = {str(r[0]): [r[1], r[2], r[3], r[4]]
             for r in con.execute(_ITEMS_ALL, [task_id]).fetchall()}
    recent = con.execute(statements.RECENT_CALLS, [task_id, KEEP_CALLS]).fetchall()
    seqs = set(column("SELECT seq FROM calls WHERE task_id = ?"))
    last = con.execute(statements.LAST_EVENT_TS, [task_id]).fetchall()[0]
    return TaskHot(
        owner=row[0], state=str(row[1]),
        refs=set(column("SELECT ref FROM task_refs WHERE task_id = ?")),
        sources=sources, items=items, last_ts=last[0] if last else None,
        results={str(r[0]): (r[1], r[2], r[3]) for r in con.execute(
            "SELECT cache_key, ref, created_us, tokens FROM tool_results WHERE task_id = ?",
            [task_id]).fetchall()},
        calls=[tuple(r) for r in reversed(recent)], calls_complete=len(seqs) <= KEEP_CALLS,
        call_seqs=seqs,
        digests=set(column("SELECT DISTINCT result_digest FROM calls WHERE task_id = ?"
                           " AND result_digest IS NOT NULL")),
        signatures=set(column("SELECT DISTINCT error_signature FROM calls WHERE task_id = ?"
                              " AND error_signature IS NOT NULL")),
        failures=dict(con.execute("SELECT signature, error_text FROM failures WHERE"
                                  " task_id = ?", [task_id]).fetchall()))


class HotCache:
    """Every task's hot data, the known refs and memory entries, the client sessions.

    Keyed lookups that miss (a ref, a memory entry, a session) are asked of DuckDB
    directly: every deferred row of those tables is in the cache, so DuckDB's answer
    plus the cache is the truth. That is why the cache is only ever dropped after a
    flush (:meth:`WriteBehind.reset`)."""

    def __init__(self) -> None:
        self.tasks: collections.OrderedDict[str, TaskHot] = collections.OrderedDict()
        #: ref → media type, for every ref known to exist
        self.refs: dict[str, Any] = {}
        self.memory: set[str] = set()
        self.sessions: dict[str, str] = {}
        self.task_ids: set[str] = set()
        #: Tasks inserted since the last flush (a task id must never be inserted twice).
        self.created: set[str] = set()
        #: Keyed tables read whole into the sets above (a miss there is then an answer).
        self.complete: set[str] = set()
        #: Loads from DuckDB and drops, for the benchmark and the tests.
        self.loads = 0
        self.drops = 0

    def clear(self) -> None:
        """Forget everything (it is reloaded from DuckDB on demand)."""
        self.tasks.clear()
        self.refs.clear()
        self.memory.clear()
        self.task_ids.clear()
        self.sessions.clear()
        self.complete.clear()
        self.drops += 1

    def trim(self) -> bool:
        """Drop the least recently used tasks beyond :data:`MAX_TASKS` (between calls);
        True when the keyed sets grew too big and need a reset."""
        while len(self.tasks) > MAX_TASKS:
            self.tasks.popitem(last=False)
        return len(self.refs) + len(self.memory) + len(self.task_ids) > 3 * MAX_REFS


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
            handler = _HANDLERS.get(sql)
            if handler is not None and isinstance(params, list) \
                    and all(isinstance(p, _PLAIN) for p in params):
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

    # -- used by the handlers ------------------------------------------------------

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
        return _DONE

    def committed_row(self, sql: str, params: list[Any]) -> tuple[Any, ...] | None:
        """A keyed lookup in what DuckDB holds (for tables the deferred rows never miss:
        the cache records every deferred row of them)."""
        self.duckdb_statements += 1
        rows = self._con.execute(sql, params).fetchall()
        return tuple(rows[0]) if rows else None


# -- the hot statements, read from and written to memory ---------------------------------

Handler = Callable[[DeferredConnection, list[Any]], Any]


def _session_task(dc: DeferredConnection, p: list[Any]) -> Rows:
    sessions = dc._behind.cache.sessions
    task_id = sessions.get(p[0])
    if task_id is None:
        row = dc.committed_row(statements.SESSION_TASK, p)  # sessions are never deferred
        if row is None:
            return Rows([])
        task_id = sessions[p[0]] = str(row[0])
    return Rows([(task_id,)])


def _task_reader(read: Callable[[TaskHot, list[Any]], Any]) -> Handler:
    def handler(dc: DeferredConnection, p: list[Any]) -> Any:
        hot = dc.task(p[0])
        return None if hot is None else read(hot, p)
    return handler


def _recent_calls(hot: TaskHot, p: list[Any]) -> Rows | None:
    limit = p[1]
    if not isinstance(limit, int) or limit < 0:
        return None
    if limit > len(hot.calls) and not hot.calls_complete:
        return None
    return Rows(list(reversed(hot.calls[-limit:])) if limit else [])


def _context_items(hot: TaskHot, p: list[Any]) -> Rows:
    """CONTEXT_ITEMS as :class:`~osiris.core.prune.ContextItem` rows (their first five
    fields are its columns), kept between reads: every observe reads them all."""
    if hot.context is None:
        rows = [context_item(ref, item[0], item[1], str(item[2]), item[3])
                for ref, item in hot.items.items() if item[0] is not None and item[0] > 0]
        rows.sort(key=_OBSERVED_REF)
        hot.context = rows
    return Rows(hot.context)


def _add_context_item(hot: TaskHot, ref: str) -> None:
    """A new ref's first ledger row: appended to the kept answer when it sorts last."""
    if hot.context is None:
        return
    tokens, ts_us, kind, tool = hot.items[ref]
    if tokens is None or tokens <= 0:
        return  # not in the answer (a later row may change that: it clears the answer)
    last = hot.context[-1] if hot.context else None
    if last is None or (ts_us, ref) > (last.observed_us, last.ref):
        hot.context.append(context_item(ref, tokens, ts_us, str(kind), tool))
    else:
        hot.context = None


_OBSERVED_REF = attrgetter("observed_us", "ref")


_WHOLE = {"refs": "SELECT ref, media_type FROM refs", "memory": "SELECT entry_id FROM memory",
          "tasks": "SELECT task_id FROM tasks"}


def _known(dc: DeferredConnection, name: str, table: dict[str, Any] | set[str], sql: str,
           key: Any) -> tuple[bool, Any]:
    """Whether ``key`` exists (cache, else DuckDB) and its looked-up value. The first
    lookup reads the table's keys whole (flushed first) when there are not too many."""
    cache = dc._behind.cache
    if name not in cache.complete and not table:
        dc._behind.flush(dc._con)
        counted = dc.committed_row(f"SELECT count(*) FROM {name}", [])  # noqa: S608
        if counted is not None and counted[0] <= MAX_REFS:
            dc.duckdb_statements += 1
            for whole in dc._con.execute(_WHOLE[name]).fetchall():
                if isinstance(table, dict):
                    table[whole[0]] = whole[1]
                else:
                    table.add(whole[0])
            cache.complete.add(name)
    if isinstance(table, dict):
        if key in table:
            return True, table[key]
    elif key in table:
        return True, None
    if name in cache.complete:
        return False, None
    row = dc.committed_row(sql, [key])
    if row is None:
        return False, None
    if isinstance(table, dict):
        table[key] = row[0]
    else:
        table.add(key)
    return True, row[0]


def _ref_exists(dc: DeferredConnection, p: list[Any]) -> Rows:
    found, _ = _known(dc, "refs", dc._behind.cache.refs, statements.REF_MEDIA_TYPE, p[0])
    return Rows([(1,)] if found else [])


def _ref_media_type(dc: DeferredConnection, p: list[Any]) -> Rows:
    found, media = _known(dc, "refs", dc._behind.cache.refs, statements.REF_MEDIA_TYPE, p[0])
    return Rows([(media,)] if found else [])


def _insert_ref(dc: DeferredConnection, p: list[Any]) -> Rows | None:
    if p[0] in dc._behind.cache.refs:
        return None  # a second insert of one key: let DuckDB refuse it
    dc._behind.cache.refs[p[0]] = p[4]
    return dc.defer(statements.REF.sql, p)


def _memory_exists(dc: DeferredConnection, p: list[Any]) -> Rows:
    found, _ = _known(dc, "memory", dc._behind.cache.memory, statements.MEMORY_EXISTS, p[0])
    return Rows([(1,)] if found else [])


def _insert_memory(dc: DeferredConnection, p: list[Any]) -> Rows | None:
    if p[0] in dc._behind.cache.memory:
        return None
    dc._behind.cache.memory.add(p[0])
    return dc.defer(statements.MEMORY.sql, p)


def _insert_task(dc: DeferredConnection, p: list[Any]) -> Rows | None:
    cache = dc._behind.cache
    task_id = p[0]
    if not isinstance(task_id, str) or task_id in cache.tasks or task_id in cache.created \
            or _known(dc, "tasks", cache.task_ids, statements.TASK_EXISTS, task_id)[0]:
        return None
    cache.created.add(task_id)
    cache.task_ids.add(task_id)
    cache.tasks[task_id] = TaskHot(
        owner=p[10], state=p[8], refs=set(), sources={}, items={}, last_ts=None, results={},
        calls=[], calls_complete=True, call_seqs=set(), digests=set(), signatures=set(),
        failures={})
    return dc.defer(statements.TASK.sql, p)


def _update_state(dc: DeferredConnection, p: list[Any]) -> Rows | None:
    hot = dc.task(p[4])
    if hot is None:
        return None
    hot.state = p[0]
    return dc.defer(statements.UPDATE_TASK_STATE, p)


def _insert_event(dc: DeferredConnection, p: list[Any]) -> Rows | None:
    if p[2] is not None:
        hot = dc.task(p[2])
        if hot is None:
            return None
        hot.last_ts = p[1] if hot.last_ts is None else max(hot.last_ts, p[1])
    return dc.defer(statements.EVENT.sql, p)


def _insert_ledger(dc: DeferredConnection, p: list[Any]) -> Rows | None:
    ts_us, task_id, kind, ref, context = p[0], p[1], p[3], p[4], p[12]
    if task_id is not None:
        hot = dc.task(task_id)
        if hot is None or not isinstance(kind, str):
            return None
        totals = hot.sources.setdefault(kind.split(".", 1)[0], [None, None])
        if context is not None:
            totals[0] = (totals[0] or 0) + context
            totals[1] = (totals[1] or 0) + max(context, 0)
        if ref is not None and (kind.startswith(_CONTEXT_PREFIXES) or kind == "drop_receipt"):
            detail = _detail(p[13])
            item = hot.items.get(ref)
            if item is None:
                hot.items[ref] = [context, ts_us, detail("kind"), detail("tool")]
                _add_context_item(hot, ref)
            else:
                hot.context = None
                if context is not None:
                    item[0] = (item[0] or 0) + context
                if ts_us < item[1]:
                    item[1:] = [ts_us, detail("kind"), detail("tool")]
    return dc.defer(statements.LEDGER.sql, p)


def _detail(text: Any) -> Callable[[str], Any]:
    """``detail->>'key'`` as DuckDB reads it."""
    try:
        doc = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        doc = None

    def get(key: str) -> Any:
        if not isinstance(doc, dict) or doc.get(key) is None:
            return None
        value = doc[key]
        return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return get


def _link_ref(dc: DeferredConnection, p: list[Any]) -> Rows | None:
    hot = dc.task(p[0])
    if hot is None:
        return None
    if p[1] in hot.refs:
        return _DONE  # ON CONFLICT DO NOTHING
    hot.refs.add(p[1])
    return dc.defer(statements.TASK_REF.sql, p)


def _insert_tool_result(dc: DeferredConnection, p: list[Any]) -> Rows | None:
    hot = dc.task(p[0])
    if hot is None:
        return None
    if p[1] in hot.results:
        return _DONE
    hot.results[p[1]] = (p[4], p[8], p[6])
    return dc.defer(statements.TOOL_RESULT_ROW.sql, p)


def _tool_result_hit(dc: DeferredConnection, p: list[Any]) -> Rows | None:
    return None if dc.task(p[0]) is None else dc.defer(statements.TOOL_RESULT_HIT, p)


def _insert_call(dc: DeferredConnection, p: list[Any]) -> Rows | None:
    hot = dc.task(p[0])
    if hot is None or not isinstance(p[1], int):
        return None
    if p[1] in hot.call_seqs:
        return _DONE
    hot.call_seqs.add(p[1])
    row = (p[1], p[3], p[4], p[6], p[5], p[9], p[10], p[11], p[12], p[13], p[8], p[14])
    bisect.insort(hot.calls, row, key=lambda r: r[0])
    if len(hot.calls) > KEEP_CALLS:
        del hot.calls[0]
        hot.calls_complete = False
    if p[7] is not None:
        hot.digests.add(p[7])
    if p[10] is not None:
        hot.signatures.add(p[10])
    return dc.defer(statements.CALL.sql, p)


def _record_failure(dc: DeferredConnection, p: list[Any]) -> Rows | None:
    hot = dc.task(p[0])
    if hot is None:
        return None
    hot.failures.setdefault(p[1], p[6])  # ON CONFLICT keeps the first text
    return dc.defer(statements.RECORD_FAILURE, p)


def _failure_text(hot: TaskHot, p: list[Any]) -> Rows:
    return Rows([(hot.failures[p[1]],)] if p[1] in hot.failures else [])


def _write_only(sql: str) -> Handler:
    def handler(dc: DeferredConnection, p: list[Any]) -> Rows:
        return dc.defer(sql, p)
    return handler


_HANDLERS: dict[str, Handler] = {
    statements.SESSION_TASK: _session_task,
    statements.TASK_OWNER: _task_reader(lambda hot, p: Rows([(hot.owner,)])),
    statements.TASK_STATE: _task_reader(lambda hot, p: Rows([(hot.state,)])),
    statements.TASK_REF_COUNT: _task_reader(lambda hot, p: Rows([(len(hot.refs),)])),
    statements.CONTEXT_BY_SOURCE: _task_reader(
        lambda hot, p: Rows([(src, t[0], t[1]) for src, t in hot.sources.items()])),
    statements.LAST_EVENT_TS: _task_reader(lambda hot, p: Rows([(hot.last_ts,)])),
    statements.TOOL_RESULT: _task_reader(
        lambda hot, p: Rows([hot.results[p[1]]] if p[1] in hot.results else [])),
    statements.REF_EXISTS: _ref_exists,
    statements.REF_MEDIA_TYPE: _ref_media_type,
    statements.TASK_HOLDS_REF: _task_reader(
        lambda hot, p: Rows([(1,)] if p[1] in hot.refs else [])),
    statements.MEMORY_EXISTS: _memory_exists,
    statements.MEMORY.sql: _insert_memory,
    statements.TASK.sql: _insert_task,
    statements.USAGE_REPORT.sql: _write_only(statements.USAGE_REPORT.sql),
    statements.CHECKPOINT.sql: _write_only(statements.CHECKPOINT.sql),
    statements.RECENT_CALLS: _task_reader(_recent_calls),
    statements.CALL_WITH_ERROR: _task_reader(
        lambda hot, p: Rows([(1,)] if p[1] in hot.signatures else [])),
    statements.CALL_WITH_RESULT: _task_reader(
        lambda hot, p: Rows([(1,)] if p[1] in hot.digests else [])),
    statements.CONTEXT_ITEMS: _task_reader(_context_items),
    statements.UPDATE_TASK_STATE: _update_state,
    statements.EVENT.sql: _insert_event,
    statements.LEDGER.sql: _insert_ledger,
    statements.REF.sql: _insert_ref,
    statements.TASK_REF.sql: _link_ref,
    statements.TOOL_RESULT_ROW.sql: _insert_tool_result,
    statements.TOOL_RESULT_HIT: _tool_result_hit,
    statements.CALL.sql: _insert_call,
    **{sql: _write_only(sql) for sql in statements.WRITE_ONLY},
    statements.RECORD_FAILURE: _record_failure,
    statements.FAILURE_TEXT: _task_reader(_failure_text),
}


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
