"""The statements every hooked tool call runs (precheck and observe).

They are named here rather than inline in the engine because the store owner answers
the reads from memory and defers the writes to its owner log
(:mod:`osiris.store.write_behind`). A statement this module does not name still runs
on DuckDB, after everything deferred has been flushed: a new query is always correct,
at worst slower. ``tests/store/test_write_behind.py`` checks that a steady-state tool
call of a client session runs no DuckDB statement at all in the owner.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# -- reads -----------------------------------------------------------------------------

SESSION_TASK = "SELECT task_id FROM client_sessions WHERE session_id = ?"
TASK_OWNER = "SELECT owner FROM tasks WHERE task_id = ?"
TASK_STATE = "SELECT state FROM tasks WHERE task_id = ?"
TASK_REF_COUNT = "SELECT count(*) FROM task_refs WHERE task_id = ?"
CONTEXT_BY_SOURCE = (
    "SELECT split_part(kind, '.', 1) AS source, sum(context_tokens),"
    " sum(greatest(context_tokens, 0)) FROM ledger WHERE task_id = ? GROUP BY source")
LAST_EVENT_TS = "SELECT max(ts_us) FROM events WHERE task_id = ?"
TOOL_RESULT = ("SELECT ref, created_us, tokens FROM tool_results WHERE task_id = ?"
               " AND cache_key = ?")
REF_EXISTS = "SELECT 1 FROM refs WHERE ref = ?"
REF_MEDIA_TYPE = "SELECT media_type FROM refs WHERE ref = ?"
TASK_HOLDS_REF = "SELECT 1 FROM task_refs WHERE task_id = ? AND ref = ?"
REFS_FROM_PREFIX = "SELECT ref FROM refs WHERE ref >= ? AND ref < ? ORDER BY ref LIMIT 2"
"""The refs a short ref may stand for: those in ``[prefix, prefix + 'g')`` (hex digits
sort below ``g``), two at most (two: it is ambiguous)."""
PRINCIPAL_HOLDS_REF = ("SELECT 1 FROM task_refs r JOIN tasks t USING (task_id)"
                       " WHERE r.ref = ? AND t.owner = ? LIMIT 1")
TASK_EXISTS = "SELECT 1 FROM tasks WHERE task_id = ?"
MEMORY_EXISTS = "SELECT 1 FROM memory WHERE entry_id = ?"
RECENT_CALLS = (
    "SELECT seq, tool, args_hash, fingerprint, family, is_error, error_signature,"
    " error_text, mutating, novel, ref, targets FROM calls WHERE task_id = ?"
    " ORDER BY seq DESC LIMIT ?")
CALL_WITH_ERROR = "SELECT 1 FROM calls WHERE task_id = ? AND error_signature = ? LIMIT 1"
CALL_WITH_RESULT = "SELECT 1 FROM calls WHERE task_id = ? AND result_digest = ? LIMIT 1"
CONTEXT_ITEMS = (
    "SELECT ref, sum(context_tokens) AS tokens, min(ts_us) AS first_us,"
    " arg_min(detail->>'kind', ts_us) AS kind, arg_min(detail->>'tool', ts_us) AS tool"
    " FROM ledger WHERE task_id = ? AND ref IS NOT NULL"
    " AND (kind LIKE 'payload.%' OR kind LIKE 'prompt.%' OR kind = 'drop_receipt')"
    " GROUP BY ref HAVING sum(context_tokens) > 0 ORDER BY first_us, ref")
CALL_COUNT = "SELECT count(*) FROM calls WHERE task_id = ?"

# A client's reads, as routing remembers them (osiris.engine.routing): the newest
# ``route.served`` event of a file and window in one context, whether the client compacted
# its history since an event, whether a file's read was shaped since the last compaction.
SERVED_READ = (
    "SELECT seq, body->>'sha256', body->>'tool_use_id' FROM events WHERE task_id = ?"
    " AND kind = 'route.served' AND body->>'path' = ? AND coalesce(body->>'offset', '')"
    " = ? AND coalesce(body->>'limit', '') = ? AND coalesce(body->>'subagent', '') = ?"
    " ORDER BY seq DESC LIMIT 1")
WHOLE_READ = (
    "SELECT seq, body->>'ref', body->>'content_sha256', body->>'tool_use_id' FROM events"
    " WHERE task_id = ? AND kind = 'route.served' AND body->>'path' = ?"
    " AND coalesce(body->>'subagent', '') = ? AND coalesce(body->>'offset', '') = ''"
    " AND coalesce(body->>'limit', '') = '' ORDER BY seq DESC LIMIT 1")
COMPACTED_SINCE = ("SELECT 1 FROM events WHERE task_id = ? AND seq > ?"
                   " AND kind = 'client.compacted' LIMIT 1")
READ_SHAPED = (
    "SELECT 1 FROM events e WHERE e.task_id = ? AND e.kind = 'route.read_shaped'"
    " AND e.body->>'path' = ? AND NOT EXISTS (SELECT 1 FROM events c WHERE"
    " c.task_id = e.task_id AND c.kind = 'client.compacted' AND c.seq > e.seq) LIMIT 1")

# -- writes ----------------------------------------------------------------------------

UPDATE_TASK_STATE = ("UPDATE tasks SET state = ?, state_hash = ?, updated_us = ?,"
                     " status = coalesce(?, status) WHERE task_id = ?")
TOOL_RESULT_HIT = ("UPDATE tool_results SET hits = hits + 1 WHERE task_id = ? AND"
                   " cache_key = ?")

RECORD_FAILURE = (
    "INSERT INTO failures (task_id, signature, tool, last_args_hash, attempts, first_us,"
    " last_us, error_text) VALUES (?, ?, ?, ?, 1, ?, ?, ?) ON CONFLICT (task_id, signature)"
    " DO UPDATE SET attempts = failures.attempts + 1, last_us = excluded.last_us,"
    " last_args_hash = excluded.last_args_hash, resolved = false")

FAILURE_TEXT = "SELECT error_text FROM failures WHERE task_id = ? AND signature = ?"
RESOLVE_FAILURE = ("UPDATE failures SET resolved = true, lesson = ? WHERE task_id = ? AND"
                   " signature = ?")

WRITE_ONLY = frozenset({RECORD_FAILURE, RESOLVE_FAILURE})
"""Writes deferred as they are, run in order at the flush. Of their table the store
owner answers only :data:`FAILURE_TEXT` from memory (a failure's first text, which
neither statement changes once recorded); any other read of it runs on DuckDB, after
the flush."""


@dataclass(frozen=True)
class Insert:
    """An INSERT of one row whose columns are bound in order."""

    table: str
    columns: tuple[str, ...]
    #: Positions of the primary key when conflicts are ignored (ON CONFLICT DO NOTHING).
    ignore_conflict_on: tuple[int, ...] | None = None
    #: The statement the engine runs (built from the fields: table and column names are
    #: constants of this module, never input).
    sql: str = field(init=False)

    def __post_init__(self) -> None:
        marks = ", ".join("?" for _ in self.columns)
        tail = " ON CONFLICT DO NOTHING" if self.ignore_conflict_on is not None else ""
        names = ", ".join(self.columns)
        sql = f"INSERT INTO {self.table} ({names}) VALUES ({marks}){tail}"  # noqa: S608
        object.__setattr__(self, "sql", sql)


EVENT = Insert("events", ("seq", "ts_us", "task_id", "actor", "kind", "body", "prev_hash",
                          "hash"))
LEDGER = Insert("ledger", ("ts_us", "task_id", "event_seq", "kind", "ref", "tokens",
                           "encoding", "saved_claimed", "saved_proven", "overhead_tokens",
                           "cost_model", "cost_usd", "context_tokens", "detail"))
REF = Insert("refs", ("ref", "size_bytes", "tokens", "encoding", "media_type", "created_us",
                      "redaction_version", "redactions"))
TASK_REF = Insert("task_refs", ("task_id", "ref", "created_us", "via"),
                  ignore_conflict_on=(0, 1))
TOOL_RESULT_ROW = Insert("tool_results", ("task_id", "cache_key", "tool", "args_hash", "ref",
                                          "size_bytes", "tokens", "ttl_s", "created_us"),
                         ignore_conflict_on=(0, 1))
TASK = Insert("tasks", ("task_id", "created_us", "updated_us", "objective", "project_id",
                       "agent_id", "parent_task_id", "status", "state", "state_hash", "owner"))
MEMORY = Insert("memory", ("entry_id", "scope", "scope_id", "kind", "key", "value", "task_id",
                           "created_us"))
USAGE_REPORT = Insert("usage_reports", ("ts_us", "task_id", "event_seq", "provider",
                                        "prompt_tokens", "cache_read_tokens",
                                        "cache_write_tokens", "output_tokens",
                                        "estimated_prompt_tokens", "raw"))
CHECKPOINT = Insert("checkpoints", ("checkpoint_id", "task_id", "created_us", "mode",
                                    "state_ref", "body"))
CALL = Insert("calls", ("task_id", "seq", "ts_us", "tool", "args_hash", "family",
                        "fingerprint", "result_digest", "ref", "is_error", "error_signature",
                        "error_text", "mutating", "novel", "targets", "paths"),
              ignore_conflict_on=(0, 1))

INSERTS: dict[str, Insert] = {spec.sql: spec for spec in
                              (EVENT, LEDGER, REF, TASK_REF, TOOL_RESULT_ROW, CALL, TASK,
                               MEMORY, USAGE_REPORT, CHECKPOINT)}
"""Every deferrable INSERT, by its SQL text."""
