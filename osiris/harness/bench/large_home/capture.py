"""The capture of a template session: after every engine call, how far each table had
grown and the mutable rows then, so that any prefix of a session is itself a session the
engine wrote (step 1)."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from osiris.engine import Engine
from osiris.harness.bench.large_home.common import TEMPLATE_T0_US
from osiris.store.db import fetch_row


class _ScriptClock:
    """The template clock: each engine call happens a scripted while after the last."""

    def __init__(self, rng: random.Random) -> None:
        self.now = TEMPLATE_T0_US
        self._rng = rng

    def now_us(self) -> int:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += int(seconds * 1_000_000) + self._rng.randrange(1_000, 999_000)


_MUTABLE_SQL = {
    "tasks": ("SELECT task_id, created_us, updated_us, objective, project_id, agent_id,"
              " parent_task_id, status, state, state_hash, owner FROM tasks"
              " WHERE list_contains(?::VARCHAR[], task_id) ORDER BY created_us, task_id"),
    "tool_results": ("SELECT task_id, cache_key, tool, args_hash, ref, size_bytes, tokens,"
                     " ttl_s, created_us, hits FROM tool_results"
                     " WHERE list_contains(?::VARCHAR[], task_id) ORDER BY created_us, cache_key"),
    "failures": ("SELECT task_id, signature, tool, last_args_hash, attempts, first_us, last_us,"
                 " resolved, lesson, error_text FROM failures"
                 " WHERE list_contains(?::VARCHAR[], task_id) ORDER BY first_us, signature"),
    "handoffs": ("SELECT handoff_id, parent_task_id, child_task_id, status, contract, result,"
                 " created_us, updated_us FROM handoffs"
                 " WHERE list_contains(?::VARCHAR[], parent_task_id) ORDER BY created_us"),
}
_APPEND_SQL = {
    # Append-only (events, ledger, calls, usage) and insert-only (task_refs, memory) rows,
    # in the order they were written; a cut keeps a prefix of each.
    "events": ("SELECT seq, ts_us, task_id, actor, kind, body FROM events"
               " WHERE list_contains(?::VARCHAR[], task_id) ORDER BY seq"),
    "ledger": ("SELECT id, ts_us, task_id, event_seq, kind, ref, tokens, encoding,"
               " saved_claimed, saved_proven, overhead_tokens, detail, cost_model, cost_usd,"
               " context_tokens FROM ledger WHERE list_contains(?::VARCHAR[], task_id)"
               " ORDER BY id"),
    "calls": ("SELECT task_id, seq, ts_us, tool, args_hash, family, fingerprint, result_digest,"
              " ref, is_error, error_signature, error_text, mutating, novel, targets, paths"
              " FROM calls WHERE list_contains(?::VARCHAR[], task_id) ORDER BY seq"),
    "usage_reports": ("SELECT id, ts_us, task_id, event_seq, provider, prompt_tokens,"
                      " cache_read_tokens, cache_write_tokens, output_tokens,"
                      " estimated_prompt_tokens, raw FROM usage_reports"
                      " WHERE list_contains(?::VARCHAR[], task_id) ORDER BY id"),
    "task_refs": ("SELECT task_id, ref, created_us, via FROM task_refs"
                  " WHERE list_contains(?::VARCHAR[], task_id) ORDER BY created_us, ref"),
    "memory": ("SELECT entry_id, scope, scope_id, kind, key, value, task_id, created_us"
               " FROM memory WHERE list_contains(?::VARCHAR[], task_id)"
               " ORDER BY created_us, entry_id"),
}


@dataclass
class _Snap:
    """Where a template unit stood right after one engine call."""

    ts: int
    seq: int
    ledger_id: int
    usage_id: int
    mutable: dict[str, tuple[tuple[Any, ...], ...]]


@dataclass
class _Capture:
    """One template unit (a task, or a parent and its child) as the engine wrote it."""

    name: str
    weight: float
    min_calls: int = 1
    tasks: list[str] = field(default_factory=list)
    snaps: list[_Snap] = field(default_factory=list)
    literals: dict[str, str] = field(default_factory=dict)
    """Template text -> what it is (``task``, ``objective``, ``agent``, ...)."""
    rows: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)


class _Recorder:
    """Drives the engine through scripted sessions and captures what each call wrote."""

    def __init__(self, engine: Engine, clock: _ScriptClock, rng: random.Random) -> None:
        self.engine = engine
        self.clock = clock
        self.rng = rng
        self.units: list[_Capture] = []
        self._known: set[str] = set()

    @property
    def unit(self) -> _Capture:
        return self.units[-1]

    def begin(self, name: str, weight: float, **literals: str) -> None:
        self.units.append(_Capture(name, weight))
        for kind, text in literals.items():
            self.unit.literals[text] = kind.rstrip("_0123456789")

    def call(self, op: Callable[[Engine], Mapping[str, Any]], gap: float = 10.0,
             ) -> dict[str, Any]:
        """Run one engine call ``gap`` seconds (and a little more) after the previous one;
        its answer as a plain dict (the templates read fields of any kind of answer)."""
        self.clock.advance(gap * self.rng.uniform(0.6, 1.6))
        answer = dict(op(self.engine))
        store = self.engine.store
        with store.read() as con:
            for (task_id,) in con.execute("SELECT task_id FROM tasks").fetchall():
                if task_id not in self._known:
                    self._known.add(task_id)
                    self.unit.tasks.append(task_id)
                    self.unit.literals[task_id] = "task"
            seq, ledger_id, usage_id = fetch_row(
                con, "SELECT (SELECT max(seq) FROM events), (SELECT coalesce(max(id), 0)"
                " FROM ledger), (SELECT coalesce(max(id), 0) FROM usage_reports)")
            mutable = {name: tuple(tuple(r) for r in con.execute(sql, [self.unit.tasks]
                                                                 ).fetchall())
                       for name, sql in _MUTABLE_SQL.items()}
        for (handoff_id, *_rest) in mutable["handoffs"]:
            self.unit.literals[handoff_id] = "handoff"
        self.unit.snaps.append(_Snap(self.clock.now, int(seq), int(ledger_id), int(usage_id),
                                     mutable))
        return answer

    def finish(self) -> None:
        """Read the append-only rows of every unit once all sessions ran."""
        with self.engine.store.read() as con:
            for unit in self.units:
                unit.rows = {name: [tuple(r) for r in con.execute(sql, [unit.tasks]).fetchall()]
                             for name, sql in _APPEND_SQL.items()}
