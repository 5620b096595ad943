"""Write-behind answers what DuckDB answers, for any sequence of calls (hypothesis).

Two real engines on two real DuckDB files, with the same clock and task ids, take the
same generated sequence of calls: one as the store owner runs by default (answered from
memory, :mod:`osiris.store.write_behind`), one with every statement on DuckDB
(``OSIRIS_WRITE_BEHIND=off``). Every answer, error or not, must be the same, and so must
every table once the deferred rows are written. The sequences mix what the cache answers
alone: hooked calls of several sessions, repeats and oscillations that the loop guard
reads from the recent calls, failures and their fixes, plain observes on planned tasks,
recalls of any ref by any task (the refs a task may read), drops and status reads.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from osiris.clients.adapters import ClaudeCode
from osiris.config import Settings
from osiris.engine.facade import Engine
from osiris.errors import OsirisError
from osiris.store.state import Store
from tests.store.test_write_behind import HEAD, TABLES, StepClock, _tables

COMMANDS = ("ls", "pytest", "git status", "cat a.py")
RESULTS = ("ok\n", "FAILED test_x - AssertionError\n", "3 passed\n", HEAD, HEAD * 3)

hook_call = st.tuples(st.just("hook"), st.integers(0, 2), st.integers(0, 3),
                      st.booleans(), st.integers(0, 4))
task_call = st.tuples(st.just("task_observe"), st.integers(0, 3), st.integers(0, 3),
                      st.booleans(), st.integers(0, 4))
recall = st.tuples(st.just("recall"), st.integers(0, 3), st.integers(0, 60),
                   st.booleans(), st.integers(0, 4))
others = st.tuples(st.sampled_from(["plan", "status", "drop", "read"]), st.integers(0, 3),
                   st.integers(0, 60), st.booleans(), st.integers(0, 4))
CALLS = st.lists(st.one_of(hook_call, hook_call, task_call, recall, others),
                 min_size=5, max_size=40)


class Run:
    """One engine and what the sequence has made so far (the same in both runs)."""

    def __init__(self, home: Path, workspace: Path, *, write_behind: bool) -> None:
        owned = replace(Settings(home=home, prune_threshold_tokens=2_000),
                        write_behind=write_behind)
        ids = (f"t_{n:04d}" for n in itertools.count())
        self.engine = Engine(owned, store=Store.owned(owned, clock=StepClock()),
                             task_ids=lambda: next(ids))
        self.workspace = workspace
        self.tasks: list[str] = []
        self.refs: list[str] = []

    def call(self, op: str, a: int, b: int, error: bool, size: int) -> Any:
        """One call; an error is an answer too (its type and message)."""
        try:
            return getattr(self, f"_{op}")(a, b, "error" if error else "result", size)
        except OsirisError as exc:
            return ("error", type(exc).__name__, str(exc))

    def _task(self, a: int) -> str:
        if not self.tasks:
            self.tasks.append(self.engine.plan("start", objective="work")["task_id"])
        return self.tasks[a % len(self.tasks)]

    def _ref(self, b: int) -> str | None:
        return self.refs[b % len(self.refs)] if self.refs else None

    def _hook(self, a: int, b: int, kind: str, size: int) -> Any:
        """A client's hooked shell call, before and after."""
        session, args = f"session:s{a}", {"command": COMMANDS[b]}
        before = self.engine.precheck(session, "Bash", args=args, client=ClaudeCode.traits,
                                      cwd=str(self.workspace))
        after = self.engine.observe(session, kind, tool="Bash", args=args,
                                    result=RESULTS[size], client=ClaudeCode.traits,
                                    cwd=str(self.workspace))
        self.refs.append(after["ref"])
        return before, after

    def _read(self, a: int, b: int, kind: str, size: int) -> Any:
        """A Read of the workspace's file through the hooks."""
        session, args = f"session:s{a % 3}", {"file_path": str(self.workspace / "big.py")}
        before = self.engine.precheck(session, "Read", args=args, client=ClaudeCode.traits,
                                      cwd=str(self.workspace))
        after = self.engine.observe(session, "result", tool="Read", args=args,
                                    result=(self.workspace / "big.py").read_text(),
                                    client=ClaudeCode.traits, cwd=str(self.workspace))
        return before, after

    def _plan(self, a: int, b: int, kind: str, size: int) -> Any:
        answer = self.engine.plan("start", objective=f"objective {a}", steps=["a", "b"])
        self.tasks.append(answer["task_id"])
        return answer

    def _task_observe(self, a: int, b: int, kind: str, size: int) -> Any:
        """A plain observe on a planned task (the MCP tool's path)."""
        answer = self.engine.observe(self._task(a), kind, tool="Bash", args={"i": b},
                                     result=RESULTS[size] + f"{b}\n")
        self.refs.append(answer["ref"])
        return answer

    def _status(self, a: int, b: int, kind: str, size: int) -> Any:
        return self.engine.plan("status", task_id=self._task(a))

    def _recall(self, a: int, b: int, kind: str, size: int) -> Any:
        """Any ref, by the task given (its own refs only, another's refused) or by none."""
        ref = self._ref(b)
        task = self._task(a) if kind == "error" else None
        return ref and self.engine.recall(ref, "grep", pattern="FAILED|passed|ok",
                                          task_id=task)

    def _drop(self, a: int, b: int, kind: str, size: int) -> Any:
        ref = self._ref(b)
        return ref and self.engine.observe(self._task(a), "dropped", result=ref)


@settings(max_examples=12, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(calls=CALLS)
def test_any_call_sequence_is_answered_alike_from_memory_and_from_duckdb(
        tmp_path: Path, calls: list[tuple[str, int, int, bool, int]]) -> None:
    root = Path(tmp_path) / f"example-{next(_examples)}"
    workspace = root / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "big.py").write_text("x = 1\n" * 3000)
    direct = Run(root / "direct", workspace, write_behind=False)
    behind = Run(root / "behind", workspace, write_behind=True)
    assert behind.engine.store.behind is not None and direct.engine.store.behind is None
    try:
        for n, call in enumerate(calls):
            expected, got = direct.call(*call), behind.call(*call)
            assert got == expected, f"call {n} {call} differs"
        tables = _tables(direct.engine), _tables(behind.engine)
        for name in TABLES:
            assert tables[0][name] == tables[1][name], f"table {name} differs"
    finally:
        direct.engine.close()
        behind.engine.close()


_examples = itertools.count()
