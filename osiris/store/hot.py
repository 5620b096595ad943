"""The store owner's hot statements, answered from memory.

:class:`HotCache` holds, per task, what the statements of :mod:`osiris.store.statements`
read (state, refs, context by source and by ref, the recent calls, cached tool results,
the last event's time), loaded from DuckDB the first time a task is touched and then
kept up to date by the same statements' writes. :data:`HANDLERS` maps each such
statement to the function that answers it from the cache (a read) or updates the cache
and defers it (a write), through a :class:`Deferred` connection
(:class:`osiris.store.write_behind.DeferredConnection`); a handler that returns None
sends the statement to DuckDB instead.
"""

from __future__ import annotations

import bisect
import collections
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Protocol

import duckdb

from osiris.core.prune import ContextItem, context_item
from osiris.store import statements

KEEP_CALLS = 512
"""Recent calls kept per task (LoopGuard reads the newest 300)."""
MAX_TASKS = 256
"""Tasks kept in memory; the least recently used is dropped beyond."""
MAX_REFS = 200_000
"""Known refs kept in memory before the set starts over."""
_ITEMS_ALL = (
    "SELECT ref, sum(context_tokens), min(ts_us), arg_min(detail->>'kind', ts_us),"
    " arg_min(detail->>'tool', ts_us) FROM ledger WHERE task_id = ? AND ref IS NOT NULL"
    " AND (kind LIKE 'payload.%' OR kind LIKE 'prompt.%' OR kind = 'drop_receipt')"
    " GROUP BY ref")
_CONTEXT_PREFIXES = ("payload.", "prompt.")
PLAIN = (str, int, float, bool, type(None))


class Rows:
    """An answer from memory, read like a DuckDB result."""

    __slots__ = ("_rows",)

    def __init__(self, rows: Sequence[tuple[Any, ...]]) -> None:
        self._rows = rows

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._rows[0] if self._rows else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        return list(self._rows)


DONE = Rows([])
"""The answer of a deferred write."""


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
    #: The client's reads as routing remembers them (:func:`_route_event`): (path, offset,
    #: limit, subagent) as SERVED_READ compares them → (seq, sha256, tool_use_id, ref,
    #: content_sha256) of the newest ``route.served`` event. None: an event held a value
    #: this cache does not read as DuckDB would (its statements then run there).
    served: dict[tuple[Any, ...], tuple[Any, ...]] | None = field(default_factory=dict)
    #: path → seq of the newest ``route.read_shaped`` event (None: as for ``served``)
    shaped: dict[str, int] | None = field(default_factory=dict)
    #: seq of the newest ``client.compacted`` event
    compacted: int | None = None


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
    hot = TaskHot(
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
    for seq, kind, body in con.execute(_ROUTE_EVENTS, [task_id]).fetchall():
        _route_event(hot, seq, kind, body)
    return hot


_ROUTE_KINDS = ("route.served", "route.read_shaped", "client.compacted")
_ROUTE_EVENTS = ("SELECT seq, kind, body FROM events WHERE task_id = ? AND kind IN"
                 " ('route.served', 'route.read_shaped', 'client.compacted') ORDER BY seq")


class _Unread(ValueError):
    """A JSON value whose ``->>`` text this cache does not reproduce."""


def _text(value: Any) -> str | None:
    """DuckDB's ``body->>'field'`` for the field's JSON value (None: SQL NULL)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    raise _Unread(repr(value))


def _route_event(hot: TaskHot, seq: Any, kind: Any, body: Any) -> None:
    """Fold one of the events routing reads back (:data:`_ROUTE_KINDS`) into ``hot``."""
    if kind not in _ROUTE_KINDS or not isinstance(seq, int):
        return
    if kind == "client.compacted":
        hot.compacted = seq if hot.compacted is None else max(hot.compacted, seq)
        return
    try:
        data = json.loads(body) if isinstance(body, str) else None
        if not isinstance(data, dict):
            raise _Unread("not an object")
        path = _text(data.get("path"))
        if kind == "route.read_shaped":
            if hot.shaped is not None and path is not None:
                hot.shaped[path] = max(seq, hot.shaped.get(path, seq))
            return
        key = (path, _text(data.get("offset")) or "", _text(data.get("limit")) or "",
               _text(data.get("subagent")) or "")
        row = (seq, _text(data.get("sha256")), _text(data.get("tool_use_id")),
               _text(data.get("ref")), _text(data.get("content_sha256")))
    except (_Unread, ValueError):
        if kind == "route.read_shaped":
            hot.shaped = None
        else:
            hot.served = None
        return
    if hot.served is not None and path is not None:
        known = hot.served.get(key)
        if known is None or known[0] < seq:
            hot.served[key] = row


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


class Deferred(Protocol):
    """What the handlers need of the transaction's connection."""

    @property
    def cache(self) -> HotCache:
        """The owner's hot data."""
        ...

    def task(self, task_id: Any) -> TaskHot | None:
        """The task's hot data, loaded on first use."""
        ...

    def defer(self, sql: str, params: list[Any]) -> Rows:
        """Keep a write for the next flush."""
        ...

    def flush(self) -> None:
        """Write what earlier transactions deferred."""
        ...

    def committed_row(self, sql: str, params: list[Any]) -> tuple[Any, ...] | None:
        """A keyed lookup in what DuckDB holds."""
        ...

    def committed_rows(self, sql: str, params: list[Any] | None = None,
                       ) -> list[tuple[Any, ...]]:
        """Every row of a read of what DuckDB holds."""
        ...


# -- the hot statements, read from and written to memory ---------------------------------

Handler = Callable[[Deferred, list[Any]], Any]


def _session_task(dc: Deferred, p: list[Any]) -> Rows:
    sessions = dc.cache.sessions
    task_id = sessions.get(p[0])
    if task_id is None:
        row = dc.committed_row(statements.SESSION_TASK, p)  # sessions are never deferred
        if row is None:
            return Rows([])
        task_id = sessions[p[0]] = str(row[0])
    return Rows([(task_id,)])


def _task_reader(read: Callable[[TaskHot, list[Any]], Any]) -> Handler:
    def handler(dc: Deferred, p: list[Any]) -> Any:
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


def _known(dc: Deferred, name: str, table: dict[str, Any] | set[str], sql: str,
           key: Any) -> tuple[bool, Any]:
    """Whether ``key`` exists (cache, else DuckDB) and its looked-up value. The first
    lookup reads the table's keys whole (flushed first) when there are not too many."""
    cache = dc.cache
    if name not in cache.complete and not table:
        dc.flush()
        counted = dc.committed_row(f"SELECT count(*) FROM {name}", [])  # noqa: S608
        if counted is not None and counted[0] <= MAX_REFS:
            for whole in dc.committed_rows(_WHOLE[name]):
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


def _ref_exists(dc: Deferred, p: list[Any]) -> Rows:
    found, _ = _known(dc, "refs", dc.cache.refs, statements.REF_MEDIA_TYPE, p[0])
    return Rows([(1,)] if found else [])


def _ref_media_type(dc: Deferred, p: list[Any]) -> Rows:
    found, media = _known(dc, "refs", dc.cache.refs, statements.REF_MEDIA_TYPE, p[0])
    return Rows([(media,)] if found else [])


def _insert_ref(dc: Deferred, p: list[Any]) -> Rows | None:
    if p[0] in dc.cache.refs:
        return None  # a second insert of one key: let DuckDB refuse it
    dc.cache.refs[p[0]] = p[4]
    return dc.defer(statements.REF.sql, p)


def _memory_exists(dc: Deferred, p: list[Any]) -> Rows:
    found, _ = _known(dc, "memory", dc.cache.memory, statements.MEMORY_EXISTS, p[0])
    return Rows([(1,)] if found else [])


def _insert_memory(dc: Deferred, p: list[Any]) -> Rows | None:
    if p[0] in dc.cache.memory:
        return None
    dc.cache.memory.add(p[0])
    return dc.defer(statements.MEMORY.sql, p)


def _insert_task(dc: Deferred, p: list[Any]) -> Rows | None:
    cache = dc.cache
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


def _update_state(dc: Deferred, p: list[Any]) -> Rows | None:
    hot = dc.task(p[4])
    if hot is None:
        return None
    hot.state = p[0]
    return dc.defer(statements.UPDATE_TASK_STATE, p)


def _insert_event(dc: Deferred, p: list[Any]) -> Rows | None:
    if p[2] is not None:
        hot = dc.task(p[2])
        if hot is None:
            return None
        hot.last_ts = p[1] if hot.last_ts is None else max(hot.last_ts, p[1])
        _route_event(hot, p[0], p[4], p[5])
    return dc.defer(statements.EVENT.sql, p)


def _strings(p: list[Any]) -> bool:
    return all(isinstance(v, str) for v in p[1:])


def _served_read(hot: TaskHot, p: list[Any]) -> Rows | None:
    if hot.served is None or not _strings(p):
        return None
    found = hot.served.get((p[1], p[2], p[3], p[4]))
    return Rows([] if found is None else [found[:3]])


def _whole_read(hot: TaskHot, p: list[Any]) -> Rows | None:
    if hot.served is None or not _strings(p):
        return None
    found = hot.served.get((p[1], "", "", p[2]))
    return Rows([] if found is None else [(found[0], found[3], found[4], found[2])])


def _compacted_since(hot: TaskHot, p: list[Any]) -> Rows | None:
    if not isinstance(p[1], int):
        return None
    return Rows([(1,)] if hot.compacted is not None and hot.compacted > p[1] else [])


def _read_shaped(hot: TaskHot, p: list[Any]) -> Rows | None:
    if hot.shaped is None or not _strings(p):
        return None
    seq = hot.shaped.get(p[1])
    # Shaped since the newest compaction: seqs are unique, so "no compaction after it".
    return Rows([(1,)] if seq is not None and (hot.compacted is None or seq > hot.compacted)
                else [])


def _insert_ledger(dc: Deferred, p: list[Any]) -> Rows | None:
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


def _link_ref(dc: Deferred, p: list[Any]) -> Rows | None:
    hot = dc.task(p[0])
    if hot is None:
        return None
    if p[1] in hot.refs:
        return DONE  # ON CONFLICT DO NOTHING
    hot.refs.add(p[1])
    return dc.defer(statements.TASK_REF.sql, p)


def _insert_tool_result(dc: Deferred, p: list[Any]) -> Rows | None:
    hot = dc.task(p[0])
    if hot is None:
        return None
    if p[1] in hot.results:
        return DONE
    hot.results[p[1]] = (p[4], p[8], p[6])
    return dc.defer(statements.TOOL_RESULT_ROW.sql, p)


def _tool_result_hit(dc: Deferred, p: list[Any]) -> Rows | None:
    return None if dc.task(p[0]) is None else dc.defer(statements.TOOL_RESULT_HIT, p)


def _insert_call(dc: Deferred, p: list[Any]) -> Rows | None:
    hot = dc.task(p[0])
    if hot is None or not isinstance(p[1], int):
        return None
    if p[1] in hot.call_seqs:
        return DONE
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


def _record_failure(dc: Deferred, p: list[Any]) -> Rows | None:
    hot = dc.task(p[0])
    if hot is None:
        return None
    hot.failures.setdefault(p[1], p[6])  # ON CONFLICT keeps the first text
    return dc.defer(statements.RECORD_FAILURE, p)


def _failure_text(hot: TaskHot, p: list[Any]) -> Rows:
    return Rows([(hot.failures[p[1]],)] if p[1] in hot.failures else [])


def _write_only(sql: str) -> Handler:
    def handler(dc: Deferred, p: list[Any]) -> Rows:
        return dc.defer(sql, p)
    return handler


HANDLERS: dict[str, Handler] = {
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
    statements.CALL_COUNT: _task_reader(lambda hot, p: Rows([(len(hot.call_seqs),)])),
    statements.SERVED_READ: _task_reader(_served_read),
    statements.WHOLE_READ: _task_reader(_whole_read),
    statements.COMPACTED_SINCE: _task_reader(_compacted_since),
    statements.READ_SHAPED: _task_reader(_read_shaped),
}
