"""Write-behind answers what DuckDB answers, for any sequence of calls (hypothesis).

Two real engines on two real DuckDB files, with the same clock and task ids, take the
same generated sequence of calls: one as the store owner runs by default (answered from
memory, :mod:`osiris.store.write_behind`), one with every statement on DuckDB
(``OSIRIS_WRITE_BEHIND=off``). Every answer, error or not, must be the same, and so must
every table once the deferred rows are written. The sequences mix what the cache answers
alone: hooked calls of several sessions, repeats and oscillations that the loop guard
reads from the recent calls, failures and their fixes, plain observes on planned tasks,
recalls of any ref by any task (the refs a task may read), drops and status reads,
and a client's reads inside the roots as routing remembers them: whole and windowed,
by the main agent and a subagent, re-read unchanged (a pointer) or after an edit (the
changed lines), shaped, and compactions between them.
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
reads = st.tuples(st.sampled_from(["read", "read", "read", "edit", "compact"]),
                  st.integers(0, 2), st.integers(0, 4), st.booleans(), st.integers(0, 4))
CALLS = st.lists(st.one_of(hook_call, hook_call, task_call, recall, others, reads, reads),
                 min_size=5, max_size=40)
BIG = "x = 1\n" * 3000
ROUTING = "[routing]\nread_shape = true\nread_shape_min_tokens = 8000\n"


class Run:
    """One engine and what the sequence has made so far (the same in both runs)."""

    def __init__(self, home: Path, workspace: Path, *, write_behind: bool) -> None:
        owned = replace(Settings(home=home, prune_threshold_tokens=2_000,
                                 roots=(workspace.resolve(),)),
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
        """A Read of one of the workspace's files through the hooks, whole or a window,
        by the session's main agent or a subagent, as Claude Code returns it."""
        path = self.workspace / ("big.py" if b % 2 else "mid.py")
        args: dict[str, Any] = {"file_path": str(path)}
        text = path.read_text()
        if b == 4:
            args.update(offset=10, limit=40)
            text = "".join(text.splitlines(keepends=True)[9:49])
        session, agent = f"session:s{a % 2}", "agent-1" if a == 2 else None
        before = self.engine.precheck(session, "Read", args=args, client=ClaudeCode.traits,
                                      cwd=str(self.workspace), subagent=agent)
        after = self.engine.observe(session, "result", tool="Read", args=args, result=text,
                                    client=ClaudeCode.traits, cwd=str(self.workspace),
                                    subagent=agent, replaceable=True)
        return before, after

    def _edit(self, a: int, b: int, kind: str, size: int) -> Any:
        """The agent changes a line of a file (the same in both runs: one workspace)."""
        path = self.workspace / ("big.py" if b % 2 else "mid.py")
        lines = path.read_text().splitlines(keepends=True)
        lines[(a * 97 + b) % len(lines)] = f"y = {a}{b}{size}\n"
        path.write_text("".join(lines))
        return None

    def _compact(self, a: int, b: int, kind: str, size: int) -> Any:
        """The client compacted a session's history."""
        return self.engine.compacted(f"session:s{a % 2}", client=ClaudeCode.traits,
                                     cwd=str(self.workspace))

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


def _runs(root: Path) -> tuple[Run, Run]:
    """The two runs over one workspace: its routing rules, a large and a mid-size file."""
    workspace = root / "workspace"
    (workspace / ".osiris").mkdir(parents=True)
    (workspace / ".osiris" / "invariants.toml").write_text(ROUTING)
    (workspace / "big.py").write_text(BIG)
    (workspace / "mid.py").write_text("".join(f"value_{i} = {i} * 2\n" for i in range(400)))
    direct = Run(root / "direct", workspace, write_behind=False)
    behind = Run(root / "behind", workspace, write_behind=True)
    return direct, behind


@settings(max_examples=12, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(calls=CALLS)
def test_any_call_sequence_is_answered_alike_from_memory_and_from_duckdb(
        tmp_path: Path, calls: list[tuple[str, int, int, bool, int]]) -> None:
    direct, behind = _runs(Path(tmp_path) / f"example-{next(_examples)}")
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


READS = [("read", 0, 1), ("read", 0, 1), ("read", 0, 1), ("read", 0, 0), ("read", 0, 0),
         ("read", 2, 0), ("read", 0, 4), ("read", 0, 4), ("edit", 0, 0), ("read", 0, 0),
         ("reload", 0, 0), ("read", 0, 0), ("read", 2, 0), ("compact", 0, 0), ("read", 0, 0),
         ("read", 0, 1),
         ("read", 0, 1), ("read", 0, 4), ("edit", 1, 0), ("read", 0, 0), ("compact", 1, 0),
         ("read", 1, 0), ("read", 1, 0)]
"""Reads of one session and a subagent: a large file shaped, read again whole, then a
pointer; a mid-size file whole, then a pointer, changed (the changed lines), a window;
compactions between them (nothing shown before them is trusted after); the owner's
memory dropped once after a flush ("reload": what it knew is read back from DuckDB)."""


def test_a_clients_reads_are_answered_alike_from_memory_and_from_duckdb(
        tmp_path: Path) -> None:
    direct, behind = _runs(tmp_path)
    try:
        for n, (op, a, b) in enumerate(READS):
            if op == "reload":
                assert behind.engine.store.behind is not None
                behind.engine.store.flush()
                behind.engine.store.behind.cache.clear()
                continue
            expected, got = direct.call(op, a, b, False, 0), behind.call(op, a, b, False, 0)
            assert got == expected, f"call {n} {op} differs"
        tables = _tables(direct.engine), _tables(behind.engine)
        for name in TABLES:
            assert tables[0][name] == tables[1][name], f"table {name} differs"
        kinds = [e["kind"] for e in tables[1]["events"]]
        assert {k: kinds.count(k) for k in ("route.reread", "route.read_changed",
                                            "route.read_shaped", "client.compacted")} == \
            {"route.reread": 5, "route.read_changed": 3, "route.read_shaped": 2,
             "client.compacted": 2}, kinds
        # Memory answered every read; DuckDB saw only the rules' first load, the second
        # session's creation and the live refs a compaction lists.
        behind_store = behind.engine.store.behind
        assert behind_store is not None
        slow = dict(behind_store.slow_reasons)
        assert all(k.startswith(("INSERT INTO rule_sets", "INSERT INTO client_sessions",
                                 "SELECT tr.ref")) for k in slow), slow
        assert sum(slow.values()) <= 3, slow
    finally:
        direct.engine.close()
        behind.engine.close()
