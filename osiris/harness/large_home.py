"""A large but valid OSIRIS home, built fast: realism from the real engine, volume by copy.

``build_large_home(home, tasks=10_000, events=1_000_000)`` fills an empty home with
what a busy month of agents would leave behind, so that the dashboard (and anything
else that reads a home) can be measured at scale. How:

1. **Templates, from the real engine.** A few scripted agent sessions run through
   :class:`osiris.engine.Engine` in a scratch home: plans with steps, prechecks
   (allowed, warned, blocked by an invariant and by LoopGuard, approval required and
   confirmed), tool results of every size (bystander to full engagement, an HTML page
   with ``<script>alert(1)</script>``, a payload with a secret that gets redacted),
   repeated errors (failures, lessons, LoopGuard patterns), recalls, drop receipts,
   provider usage, plan updates with drift, a system head observed twice with a
   changed date (a critical drift and its PrefillPlan), a contract change, a handoff
   to a child task, memory writes and a checkpoint report. After every engine call
   the capture notes how far each table had grown and snapshots the mutable rows, so
   any prefix of a session ("cut after call k") is itself a session the engine wrote.
2. **Compilation.** Every text the store holds (event bodies, task states, ledger
   details, ...) is split around what must change in a copy: task, handoff, agent and
   project ids, objectives, times, journal sequence numbers, and the hashes that
   depend on them (state hashes, seals and zone-B hashes, memory entry ids). The
   template journal starts at :data:`TEMPLATE_SEQ_BASE` and its clock at
   :data:`TEMPLATE_T0_US`, so sequence numbers and times are recognisable in any text.
3. **Replication.** Each generated task (or parent/child pair) is one template
   session cut after some call, with fresh ids, a fresh objective, an agent and a
   project, and its times moved into the last ``days`` days at its own pace. Cuts are
   chosen so that the journal holds the requested number of events. Events of all
   tasks are interleaved by time and numbered; the state of a task after each call is
   rendered and hashed exactly as :meth:`TaskState.state_hash` would, seals are
   recomputed for the new objective, and the hash chain is computed in order with
   :func:`osiris.core.hashing.journal_event_hash`.
4. **Bulk insert.** Blobs are content-addressed, so the few template blobs are copied
   once and shared by every task. Rows go in as Arrow tables through DuckDB's
   ``INSERT … SELECT`` in one write transaction of the store (its lock held); the
   journal witness is written after the commit, as :class:`~osiris.store.state.Store`
   does.

Run it as ``python -m osiris.harness.large_home HOME --tasks 10000 --events 1000000``.
"""

from __future__ import annotations

import argparse
import bisect
import json
import pickle
import random
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from osiris.config import Settings
from osiris.core.hashing import GENESIS_HASH, canonical_json, journal_event_hash, sha256_hex
from osiris.core.memory import MemoryEntry
from osiris.core.prefix import compute_zones
from osiris.core.task_state import TaskState
from osiris.engine import Engine
from osiris.errors import InvalidInputError, NotFoundError
from osiris.store import journal
from osiris.store.db import fetch_row
from osiris.store.refs import RefStore
from osiris.store.state import Store

Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``: called as the build advances (never prints)."""

TEMPLATE_T0_US = 1_600_000_000_000_000
"""The template clock starts here: every template time is a 16-digit number near it."""
TEMPLATE_SEQ_BASE = 97_300_000
"""The template journal's first event is ``TEMPLATE_SEQ_BASE + 1``: 8-digit numbers."""
_TIME_SPAN_US = 30 * 86_400 * 1_000_000  # a template time is within 30 days of T0
DAY_US = 86_400 * 1_000_000

# ---------------------------------------------------------------------------------------
# Template sessions: payloads and scripts run through the real engine
# ---------------------------------------------------------------------------------------

_MODULES = ("auth/session", "auth/tokens", "billing/invoice", "billing/tax", "api/routes",
            "api/schemas", "db/models", "ui/cart", "utils/retry", "workers/email",
            "search/index", "payments/stripe_client", "notifications/push", "core/config")
_WORDS = ("order", "invoice", "customer", "session", "token", "cart", "item", "price",
          "retry", "cache", "index", "payload", "tenant", "user", "event", "queue")

_RULES = '''
[[invariant]]
id = "tests-before-commit"
when = { tool = "git.commit" }
require = { state = "tests_passed" }
message = "Cannot commit while tests are failing"

[[invariant]]
id = "no-test-edit"
when = { path_glob = "tests/**" }
verdict = "require_approval"
message = "Modifying test suites requires explicit approval"

[[invariant]]
id = "no-force-push"
when = { tool = "Bash", args = { command = "git push .*--force" } }
verdict = "block"
message = "Never force-push"

[[invariant]]
id = "prefer-ripgrep"
when = { tool = "Bash", args = { command = "^grep -r" } }
verdict = "suggest_alternative"
alternative = "use the Grep tool"
message = "grep -r is slow here"

[[invariant]]
id = "careful-with-migrations"
when = { path_glob = "**/migrations/*.py" }
message = "Migrations are append-only"
'''

_HEAD = ("You are a coding agent working in a git repository. Today's date is {date}. "
         "Session 8f3c2a1b-9d4e-4f6a-b7c8-1234567890ab.\n"
         + "".join(f"Rule {i}: keep changes small, run the tests, explain what you did.\n"
                   for i in range(1, 41)))
_CONTRACT = {"tools": [{"name": n, "description": f"The {n} tool."} for n in
                       ("Bash", "Read", "Edit", "Write", "Grep", "Glob", "WebFetch")]}


def _py_source(rng: random.Random, module: str, lines: int) -> str:
    """A plausible Python module of about ``lines`` lines."""
    name = module.rsplit("/", 1)[-1]
    package = module.partition("/")[0]
    out = [f'"""{name.replace("_", " ").capitalize()}: part of the {package} package."""',
           "", "from __future__ import annotations", "", "import logging",
           "from dataclasses import dataclass", "", "log = logging.getLogger(__name__)", ""]
    n = 0
    while len(out) < lines:
        word, other = rng.choice(_WORDS), rng.choice(_WORDS)
        n += 1
        if n % 4 == 1:
            out += ["", "@dataclass", f"class {word.capitalize()}{other.capitalize()}{n}:",
                    f'    """A {word} of a {other}."""', "", f"    {word}_id: str",
                    f"    {other}_count: int = 0", ""]
        else:
            out += ["", f"def {word}_{other}_{n}(value: int, *, strict: bool = False) -> int:",
                    f'    """Compute the {word} for one {other}."""',
                    "    if strict and value < 0:",
                    f'        raise ValueError("negative {word}: %d" % value)',
                    f"    log.debug('{word}_{other}_{n} %s', value)",
                    f"    return value * {rng.randint(2, 97)} + {rng.randint(0, 9999)}"]
    return "\n".join(out[:lines]) + "\n"


def _grep_output(rng: random.Random, pattern: str, hits: int) -> str:
    return "".join(f"src/{rng.choice(_MODULES)}.py:{rng.randint(1, 900)}:    "
                   f"{pattern}({rng.choice(_WORDS)}_id, strict=True)\n" for _ in range(hits))


def _pytest_pass(rng: random.Random, module: str, tests: int) -> str:
    name = module.replace("/", "_")
    lines = [f"tests/test_{name}.py::test_{rng.choice(_WORDS)}_{i} PASSED "
             f"[{100 * (i + 1) // tests:3d}%]" for i in range(tests)]
    return ("============================= test session starts ==============================\n"
            "platform linux -- Python 3.11.7, pytest-8.3.2, pluggy-1.5.0\n"
            f"collected {tests} items\n\n" + "\n".join(lines)
            + f"\n\n============================== {tests} passed in "
              f"{rng.uniform(0.5, 30):.2f}s ==============================\n")


def _pytest_fail(rng: random.Random, module: str, tests: int, error: str) -> str:
    name = module.replace("/", "_")
    passed = "\n".join(f"tests/test_{name}.py::test_case_{i} PASSED" for i in range(tests - 1))
    return (f"collected {tests} items\n\n{passed}\n"
            f"tests/test_{name}.py::test_edge_case FAILED\n\n"
            "=================================== FAILURES ===================================\n"
            "________________________________ test_edge_case ________________________________\n"
            "\n    def test_edge_case():\n>       assert compute(3) == 42\n"
            f"E       {error}\n\ntests/test_{name}.py:{rng.randint(10, 300)}: {error}\n"
            "=========================== short test summary info ============================\n"
            f"FAILED tests/test_{name}.py::test_edge_case - {error}\n"
            f"========================= 1 failed, {tests - 1} passed in "
            f"{rng.uniform(0.5, 9):.2f}s =========================\n")


def _html_page(rng: random.Random) -> str:
    rows = "".join(f"<tr><td>{rng.choice(_WORDS)}</td><td>{rng.randint(1, 999)}</td></tr>\n"
                   for _ in range(60))
    return ("<!doctype html>\n<html><head><title>Release notes</title>\n"
            "<script>alert(1)</script>\n</head><body>\n<h1>Release notes</h1>\n"
            f"<p>Changes &amp; fixes.</p>\n<table>\n{rows}</table>\n"
            "<img src=x onerror=\"alert('xss')\">\n</body></html>\n")


def _env_dump(rng: random.Random) -> str:
    names = [f"APP_{w.upper()}_{i}={rng.randint(1, 10 ** 6)}" for i, w in enumerate(_WORDS)]
    return "\n".join([*names, "AWS_ACCESS_KEY_ID=AKIA" + "Z" * 16,
                      "GITHUB_TOKEN=ghp_" + "a1B2c3D4e5" * 4, "PATH=/usr/local/bin:/usr/bin"]
                     ) + "\n"


def _jsonl_log(rng: random.Random, records: int) -> str:
    levels = ("INFO", "INFO", "INFO", "WARN", "ERROR")
    return "".join(canonical_json({
        "level": rng.choice(levels), "ms": rng.randint(1, 4000),
        "msg": f"{rng.choice(_WORDS)} {rng.choice(('created', 'updated', 'failed'))}",
        "route": f"/api/{rng.choice(_WORDS)}s/{rng.randint(1, 99)}"}) + "\n"
        for _ in range(records))


def _git_diff(rng: random.Random, module: str) -> str:
    body = "".join(f"-    return value * {rng.randint(2, 9)}\n+    return value * "
                   f"{rng.randint(10, 99)}\n" for _ in range(rng.randint(2, 12)))
    return (f"diff --git a/src/{module}.py b/src/{module}.py\nindex 3f2a1b4..9c8d7e6 100644\n"
            f"--- a/src/{module}.py\n+++ b/src/{module}.py\n@@ -10,7 +10,7 @@\n{body}")


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

    def call(self, op: Callable[[Engine], dict[str, Any]], gap: float = 10.0,
             ) -> dict[str, Any]:
        """Run one engine call ``gap`` seconds (and a little more) after the previous one."""
        self.clock.advance(gap * self.rng.uniform(0.6, 1.6))
        answer = op(self.engine)
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


class _Session:
    """Helpers for one scripted task: the calls an agent makes, with plausible gaps."""

    def __init__(self, rec: _Recorder, task_id: str, obey_prune: int = 0) -> None:
        self.rec = rec
        self.rng = rec.rng
        self.task_id = task_id
        self.refs: list[str] = []
        self.obey_prune = obey_prune
        """How many payloads of a prune advice the agent drops (0: it ignores advice)."""

    def observe(self, tool: str, args: dict[str, Any], result: str, *, kind: str = "result",
                gap: float = 12.0, usage: dict[str, Any] | None = None) -> dict[str, Any]:
        tid = self.task_id
        answer = self.rec.call(lambda e: e.observe(tid, kind, tool=tool, args=args,
                                                   result=result, usage=usage), gap)
        if answer.get("mode") not in (None, "bystander") and "ref" in answer:
            self.refs.append(answer["ref"])
        for item in answer.get("prune", {}).get("drop", [])[:self.obey_prune]:
            self.dropped(item["ref"], gap=1.5)
        return answer

    def precheck(self, tool: str, args: dict[str, Any], *, confirmed: bool = False,
                 gap: float = 4.0) -> dict[str, Any]:
        tid = self.task_id
        return self.rec.call(lambda e: e.precheck(tid, tool, args=args, confirmed=confirmed),
                             gap)

    def recall(self, ref: str, op: str, gap: float = 6.0, **kw: Any) -> dict[str, Any]:
        tid = self.task_id
        return self.rec.call(lambda e: e.recall(ref, op, task_id=tid, **kw), gap)

    def plan(self, mode: str, gap: float = 20.0, **kw: Any) -> dict[str, Any]:
        tid = self.task_id
        return self.rec.call(lambda e: e.plan(mode, task_id=tid, **kw), gap)

    def head(self, date: str, gap: float = 3.0) -> dict[str, Any]:
        tid = self.task_id
        return self.rec.call(lambda e: e.observe(tid, "head", result=_HEAD.format(date=date)),
                             gap)

    def contract(self, tools: dict[str, Any], gap: float = 2.0) -> dict[str, Any]:
        tid = self.task_id
        return self.rec.call(lambda e: e.observe(tid, "contract", result=canonical_json(tools)),
                             gap)

    def dropped(self, ref: str, gap: float = 5.0) -> dict[str, Any]:
        tid = self.task_id
        return self.rec.call(lambda e: e.observe(tid, "dropped", result=ref), gap)

    def usage(self, prompt: int) -> dict[str, Any]:
        return {"input_tokens": self.rng.randint(500, 4000),
                "cache_read_input_tokens": prompt, "cache_creation_input_tokens":
                self.rng.randint(0, 3000), "output_tokens": self.rng.randint(80, 1500)}

    def read_module(self, module: str, lines: int, gap: float = 8.0) -> dict[str, Any]:
        args = {"file_path": f"src/{module}.py"}
        self.precheck("Read", args)
        return self.observe("Read", args, _py_source(self.rng, module, lines), gap=gap)

    def edit(self, module: str) -> dict[str, Any]:
        args = {"file_path": f"src/{module}.py", "old_string": "return value * 2",
                "new_string": f"return value * {self.rng.randint(3, 9)}"}
        self.precheck("Edit", args)
        return self.observe("Edit", args, f"The file src/{module}.py has been updated.",
                            gap=25.0)

    def run_tests(self, module: str, tests: int, *, error: str | None = None,
                  usage: dict[str, Any] | None = None) -> dict[str, Any]:
        args = {"command": f"python -m pytest -q tests/test_{module.replace('/', '_')}.py"}
        if error is None:
            return self.observe("Bash", args, _pytest_pass(self.rng, module, tests), gap=30.0,
                                usage=usage)
        return self.observe("Bash", args, _pytest_fail(self.rng, module, tests, error),
                            kind="error", gap=30.0, usage=usage)


def _start(rec: _Recorder, objective: str, agent: str, project: str, steps: list[str],
           obey_prune: int = 0, **kw: Any) -> _Session:
    answer = rec.call(lambda e: e.plan("start", objective=objective, steps=steps,
                                       active_step=0 if steps else None, agent_id=agent,
                                       project_id=project, **kw), 5.0)
    return _Session(rec, answer["task_id"], obey_prune)


def _rounds(base: int, scale: float) -> int:
    """How many work rounds a session runs at ``scale`` (at least 11: room for its
    special rounds, placed at fractions of the session)."""
    return max(11, round(base * scale))


_FEATURE_SPECIALS = ("html", "secret", "failures", "guards", "head", "duplicate", "jsonl",
                     "approval", "memory", "contract")


def _feature_session(rec: _Recorder, scale: float) -> None:
    """A long feature task: every kind of event the engine journals."""
    objective = "Add idempotency keys to invoice creation in the billing service"
    rec.begin("feature", 3.0, objective=objective, agent="tmpl-agent-feature",
              project="tmpl-project-feature")
    steps = ["Read the invoice code", "Design the idempotency key", "Implement the key",
             "Write the tests", "Update the API docs", "Open the pull request"]
    s = _start(rec, objective, "tmpl-agent-feature", "tmpl-project-feature", steps, 3,
               constraints=["Never change the public API of invoices",
                            "Keep the migration reversible"],
               budget={"tokens": 900_000, "cost_usd": 6.0})
    s.head("2020-09-13")
    s.contract(_CONTRACT)
    rng = rec.rng
    step = 0
    rounds = _rounds(34, scale)
    specials = {rounds * (i + 1) // 11: name for i, name in enumerate(_FEATURE_SPECIALS)}
    for r in range(rounds):
        module = _MODULES[r % len(_MODULES)]
        read = s.read_module(module, rng.choice((30, 60, 120, 250, 400, 900)))
        if r % 3 == 0 and "ref" in read:
            s.recall(read["ref"], ("outline", "grep", "range")[r % 9 // 3],
                     **({"pattern": "def "} if r % 9 // 3 == 1 else
                        {"start": 1, "end": 40} if r % 9 // 3 == 2 else {}))
        s.observe("Grep", {"pattern": f"{_WORDS[r % 16]}_", "path": "src"},
                  _grep_output(rng, f"{_WORDS[r % 16]}_total", rng.randint(3, 40)), gap=6.0)
        if r % 2 == 1:
            s.edit(module)
        s.run_tests(module, rng.randint(8, 90),
                    usage=s.usage(20_000 + 1500 * r) if r % 4 == 2 else None)
        _feature_special(s, specials.get(r))
        if r % 5 == 4:
            step = min(step + 1, len(steps) - 1)
            s.plan("update", completed=list(range(step)), active_step=step,
                   decisions=[f"Decision {r}: store the key in {_WORDS[r % 16]}_keys"]
                   if r % 10 == 9 else None)
        if r % 6 == 5 and s.refs:
            s.dropped(s.refs[-rng.randint(1, min(4, len(s.refs)))])
    s.rec.call(lambda e: e.checkpoint(s.task_id, "report"), 30.0)
    s.plan("update", completed=list(range(len(steps))), active_step=None)


def _feature_special(s: _Session, special: str | None) -> None:
    """The rare events of the feature session."""
    rng = s.rng
    if special == "html":
        s.observe("WebFetch", {"url": "https://example.com/release-notes"}, _html_page(rng))
    elif special == "secret":
        s.observe("Bash", {"command": "env"}, _env_dump(rng))
    elif special == "failures":  # the same failure 3 times: LoopGuard blocks the next run
        error = "AssertionError: assert 41 == 42"
        for _ in range(3):
            s.run_tests("billing/invoice", 24, error=error)
        s.precheck("Bash", {"command": "python -m pytest -q tests/test_billing_invoice.py"})
        s.plan("update", decisions=["Compute the key from the request body"])
        s.edit("billing/invoice")
        s.run_tests("billing/invoice", 24)
    elif special == "guards":
        s.precheck("Bash", {"command": "git push origin main --force"})
        s.precheck("Bash", {"command": "git commit -am 'Add idempotency keys'"})
        s.precheck("Bash", {"command": "grep -r invoice_key src"})
    elif special == "head":  # the head's date changed: a critical drift with a PrefillPlan
        s.head("2020-09-14")
        s.plan("resume")
    elif special == "duplicate":  # the same call, the same output: a duplicate and LoopGuard's note
        args = {"command": "git diff --stat"}
        diff = _git_diff(rng, "billing/invoice")
        s.observe("Bash", args, diff)
        s.observe("Bash", args, diff)
    elif special == "jsonl":
        log = s.observe("Bash", {"command": "kubectl logs deploy/billing --tail=400"},
                        _jsonl_log(rng, 400))
        s.recall(log["ref"], "jsonl", where={"level": "ERROR"}, fields=["msg", "route"])
        s.recall(log["ref"], "aggregate", fields=["level"])
    elif special == "approval":
        args = {"file_path": "tests/test_billing_invoice.py", "old_string": "x",
                "new_string": "y"}
        s.precheck("Edit", args)
        s.precheck("Edit", args, confirmed=True)
    elif special == "memory":
        s.plan("status")
        s.plan("memory", memory=[{"kind": "fact", "key": "idempotency", "scope": "project",
                                  "value": "keys live 24 h in invoice_keys"},
                                 {"kind": "preference", "key": "tests",
                                  "value": "run the invoice tests first"}])
        s.plan("memory", memory={"kind": "fact"})
    elif special == "contract":  # a new tool in the contract: minor drift
        s.contract({"tools": [*_CONTRACT["tools"], {"name": "TodoWrite",
                                                   "description": "Track todos."}]})


def _bugfix_session(rec: _Recorder, scale: float) -> None:
    """A medium bug hunt: errors with changing arguments, oscillation, a tight budget."""
    objective = "Fix the flaky retry test in the email worker"
    rec.begin("bugfix", 3.0, objective=objective, agent="tmpl-agent-bugfix",
              project="tmpl-project-bugfix")
    s = _start(rec, objective, "tmpl-agent-bugfix", "tmpl-project-bugfix",
               ["Reproduce the failure", "Find the cause", "Fix it", "Prove it is fixed"],
               budget={"tokens": 60_000})
    s.head("2020-09-13")
    rng = rec.rng
    rounds = _rounds(24, scale)
    for r in range(rounds):
        module = ("workers/email", "utils/retry")[r % 2]
        s.read_module(module, rng.choice((40, 150, 300)))
        error = f"TimeoutError: retry {r % 3} gave up after {rng.randint(2, 9)} attempts"
        s.observe("Bash", {"command": f"python -m pytest -q -k retry_{r} tests"},
                  _pytest_fail(rng, module, 12, error), kind="error",
                  usage={"prompt_tokens": 18_000 + 900 * r, "completion_tokens": 400,
                         "prompt_tokens_details": {"cached_tokens": 15_000}})
        if r % 3 == 2:
            s.precheck("Bash", {"command": f"python -m pytest -q -k retry_{r + 1} tests"})
        if r == rounds * 11 // 24:
            s.plan("update", active_step=1, decisions=["The clock is not monotonic in tests"])
        if r in {rounds * 4 // 24, rounds * 5 // 24, rounds * 16 // 24}:  # A/B/A/B
            for name in ("utils/retry", "workers/email"):
                s.observe("Read", {"file_path": f"src/{name}.py"}, f"# {name}\n" * 5, gap=3.0)
    s.plan("update", completed=[0, 1], active_step=2,
           decisions=["Use a monotonic clock in the retry loop"])
    s.edit("utils/retry")
    s.run_tests("utils/retry", 31)
    s.plan("update", completed=[0, 1, 2, 3], active_step=None)


def _lint_output(rng: random.Random, problems: int) -> str:
    codes = ("E501 line too long", "F401 unused import", "B008 call in default")
    return "".join(f"src/{rng.choice(_MODULES)}.py:{rng.randint(1, 400)}:{rng.randint(1, 80)}:"
                   f" {rng.choice(codes)}\n" for _ in range(problems)) \
        + f"Found {problems} errors.\n"


def _refactor_session(rec: _Recorder, scale: float) -> None:
    """A long refactor: big files, many edits, a rewritten plan, a refused rewrite of a
    pinned constraint, a stretch of calls that find nothing new (LoopGuard's runaway)."""
    objective = "Split the payments client into a transport layer and a retry layer"
    rec.begin("refactor", 3.0, objective=objective, agent="tmpl-agent-refactor",
              project="tmpl-project-refactor")
    steps = ["Map the call sites", "Extract the transport", "Extract the retries",
             "Move the callers", "Delete the old client"]
    s = _start(rec, objective, "tmpl-agent-refactor", "tmpl-project-refactor", steps, 2,
               constraints=["Keep the client's public signature"],
               budget={"cost_usd": 3.0})
    s.contract(_CONTRACT)
    rng = rec.rng
    s.observe("Glob", {"pattern": "src/**/*.py"},
              "".join(f"src/{m}.py\n" for m in _MODULES) * 3, gap=4.0)
    rounds = _rounds(26, scale)
    marks = {rounds * 6 // 26: "plan", rounds * 9 // 26: "rewrite",
             rounds * 12 // 26: "runaway", rounds * 15 // 26: "search"}
    for r in range(rounds):
        module = _MODULES[(r * 3) % len(_MODULES)]
        s.read_module(module, rng.choice((90, 300, 600, 1200)))
        for _ in range(1 + r % 3):
            s.edit(module)
        s.observe("Bash", {"command": "ruff check src"}, _lint_output(rng, rng.randint(0, 30)),
                  kind="error" if r % 4 == 1 else "result", gap=15.0,
                  usage={"prompt_tokens": 30_000 + 2_000 * r, "completion_tokens": 700,
                         "prompt_tokens_details": {"cached_tokens": 26_000}}
                  if r % 3 == 0 else None)
        s.run_tests(module, rng.randint(20, 200))
        if marks.get(r) == "plan":  # the plan itself changes: zone B drifts
            steps = [*steps[:3], "Add a circuit breaker", *steps[3:]]
            s.plan("update", steps=steps, active_step=2, completed=[0, 1])
        elif marks.get(r) == "rewrite":  # an attempt to rewrite a pinned constraint is refused
            s.plan("update", constraints=[{"index": 0, "text": "The signature may change"}])
        elif marks.get(r) == "runaway":  # thirteen searches that all come back empty
            for i in range(13):
                s.observe("Grep", {"pattern": f"legacy_{_WORDS[i]}", "path": "src"},
                          "No matches found\n", gap=3.0)
            s.precheck("Grep", {"pattern": "legacy_client", "path": "src"})
        elif marks.get(r) == "search":
            s.observe("WebSearch", {"query": "python retry jitter exponential backoff"},
                      "".join(f"{i}. https://example.org/{w}-retries - {w} retries explained\n"
                              for i, w in enumerate(_WORDS)), gap=20.0)
        elif r % 5 == 4:
            s.plan("update", completed=list(range(min(r // 5 + 1, len(steps) - 1))),
                   active_step=min(r // 5 + 1, len(steps) - 1))
    s.plan("update", completed=list(range(len(steps))), active_step=None,
           flags={"reviewed": True})


def _review_session(rec: _Recorder, scale: float) -> None:
    """A short read-only review: small results that stay inline."""
    objective = "Review the search indexing pull request"
    rec.begin("review", 4.0, objective=objective, agent="tmpl-agent-review",
              project="tmpl-project-review")
    s = _start(rec, objective, "tmpl-agent-review", "tmpl-project-review",
               ["Read the diff", "Check the tests", "Write the review"])
    rng = rec.rng
    s.observe("Bash", {"command": "gh pr diff 812"}, _git_diff(rng, "search/index"))
    for r in range(9):
        module = _MODULES[(r * 5) % len(_MODULES)]
        s.observe("Read", {"file_path": f"src/{module}.py"}, _py_source(rng, module, 25))
        s.observe("Grep", {"pattern": "index_", "path": f"src/{module}.py"},
                  _grep_output(rng, "index_", rng.randint(1, 6)), gap=4.0)
        if r % 3 == 2:
            s.plan("update", completed=list(range(r // 3 + 1)), active_step=min(r // 3 + 1, 2))
    s.run_tests("search/index", 14)


def _quick_session(rec: _Recorder, scale: float) -> None:
    """A tiny task: a question answered with one look."""
    objective = "Explain what the config loader does with empty values"
    rec.begin("quick", 4.0, objective=objective, agent="tmpl-agent-quick",
              project="tmpl-project-quick")
    s = _start(rec, objective, "tmpl-agent-quick", "tmpl-project-quick", [])
    s.read_module("core/config", 80)
    s.observe("Grep", {"pattern": "getenv", "path": "src"}, _grep_output(rec.rng, "getenv", 4))
    s.plan("status")


def _delegation_session(rec: _Recorder, scale: float) -> None:
    """A parent hands a subtask to a child agent, which completes it."""
    parent_objective = "Migrate the push notification service to the new queue"
    child_objective = "Port the push notification tests to the new queue client"
    rec.begin("delegation", 1.5, objective_1=parent_objective, objective_2=child_objective,
              agent_1="tmpl-agent-parent", agent_2="tmpl-agent-child",
              project="tmpl-project-delegation")
    p = _start(rec, parent_objective, "tmpl-agent-parent", "tmpl-project-delegation",
               ["Survey the service", "Delegate the tests", "Switch the queue"])
    rng = rec.rng
    read = p.read_module("notifications/push", 500)
    handed = p.rec.call(lambda e: e.handoff("create", task_id=p.task_id, contract={
        "objective": child_objective, "input_refs": [read["ref"]],
        "constraints": ["Do not touch the production settings"],
        "steps": ["Read the old tests", "Port them", "Run them"],
        "checks": {"required_fields": ["summary"], "commands_passed": ["pytest"],
                   "paths_forbidden": ["config/production/**"]},
        "budget": {"tokens": 200_000}, "deadline": 7200}), 30.0)
    accepted = p.rec.call(lambda e: e.handoff("accept", handoff_id=handed["handoff_id"],
                                              agent_id="tmpl-agent-child"), 60.0)
    rec.unit.min_calls = len(rec.unit.snaps)  # every copy keeps the child
    c = _Session(rec, accepted["task_id"])
    c.recall(read["ref"], "outline")
    for _ in range(5):
        c.read_module("notifications/push", rng.choice((40, 120)))
        c.edit("notifications/push")
    result = c.run_tests("notifications/push", 36)
    c.plan("update", completed=[0, 1, 2], active_step=None)
    rec.call(lambda e: e.handoff("complete", handoff_id=handed["handoff_id"],
                                 task_id=c.task_id,
                                 result={"summary": "36 tests ported and passing",
                                         "log": result.get("ref", "")}), 20.0)
    rec.call(lambda e: e.handoff("status", handoff_id=handed["handoff_id"],
                                 task_id=p.task_id), 40.0)
    for r in range(6):
        p.read_module(("notifications/push", "workers/email")[r % 2], rng.choice((60, 200)))
        p.edit("notifications/push")
    p.run_tests("notifications/push", 36)
    p.plan("update", completed=[0, 1, 2], active_step=None)


_SESSION_GROUPS = ((_feature_session, _bugfix_session, _quick_session),
                   (_refactor_session, _review_session, _delegation_session))
"""Template sessions, in two groups of about equal work that run side by side."""


@dataclass
class _Templates:
    """Everything the template sessions left behind."""

    units: list[_Capture]
    refs: list[tuple[Any, ...]]
    """Rows of the ``refs`` table (metadata of every template blob)."""
    blobs: list[RefStore]

    def blob(self, ref: str) -> bytes:
        """The verified bytes of a template blob."""
        for store in self.blobs:
            if store.exists(ref):
                return store.get(ref)
        raise NotFoundError(f"{ref} is in no template home")


def _run_group(scratch: Path, seed: int, scale: float, group: int,
               ) -> tuple[list[_Capture], list[tuple[Any, ...]]]:
    """Run one group of scripted sessions through the real engine in a scratch home."""
    rng = random.Random(f"{seed}/{group}")  # noqa: S311 (seeded: the same seed, the same home)
    project = scratch / "project"
    (project / ".osiris").mkdir(parents=True)
    (project / ".osiris" / "invariants.toml").write_text(_RULES, "utf-8")
    settings = Settings(home=scratch / "home", roots=(project,))
    clock = _ScriptClock(rng)
    store = Store(settings, exclusive=True, clock=clock)
    with store.read() as con:  # small queries: one thread each, the groups run side by side
        con.execute("SET threads = 1")
    # Start the template journal at TEMPLATE_SEQ_BASE: its sequence numbers are then
    # recognisable wherever the engine writes them into a text (LoopGuard's messages,
    # lessons). The scratch chain begins with this placeholder, so it has a "gap".
    with store.transaction() as tx:
        body = canonical_json({"purpose": "large-home template base"})
        digest = journal_event_hash(TEMPLATE_SEQ_BASE, TEMPLATE_T0_US, None, "system",
                                    "harness.template_base", body, GENESIS_HASH)
        tx.con.execute("INSERT INTO events VALUES (?, ?, NULL, 'system',"
                       " 'harness.template_base', ?, ?, ?)",
                       [TEMPLATE_SEQ_BASE, TEMPLATE_T0_US, body, GENESIS_HASH, digest])
    counter = iter(range(1, 1000))
    engine = Engine(settings, store=store,
                    task_ids=lambda: f"t_{next(counter):024x}".replace("t_0000", "t_7e57"))
    rec = _Recorder(engine, clock, rng)
    try:
        for session in _SESSION_GROUPS[group]:
            clock.advance(3600)
            session(rec, scale)
        rec.finish()
        with store.read() as con:
            refs = [tuple(r) for r in con.execute(
                "SELECT ref, size_bytes, tokens, encoding, media_type, redaction_version,"
                " redactions FROM refs ORDER BY ref").fetchall()]
            if fetch_row(con, "SELECT count(*) FROM checkpoints")[0]:
                raise AssertionError("template sessions must not take snapshots")
    finally:
        engine.close()
    return rec.units, refs


def _group_to_file(scratch: str, seed: str, scale: str, group: str, out: str) -> None:
    """Entry of a template process: run one group, pickle its capture to ``out``."""
    result = _run_group(Path(scratch), int(seed), float(scale), int(group))
    Path(out).write_bytes(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))


def _run_templates(scratch: Path, seed: int, scale: float = 1.0) -> _Templates:
    """All groups of sessions: the first here, each other one in a Python process of its
    own (a plain subprocess: unlike multiprocessing's spawn, it never re-runs the
    caller's ``__main__``)."""
    import osiris

    homes = [scratch / f"group{g}" for g in range(len(_SESSION_GROUPS))]
    outs = [scratch / f"group{g}.pickle" for g in range(len(_SESSION_GROUPS))]
    code = "import sys; from osiris.harness.large_home import _group_to_file; " \
           "_group_to_file(*sys.argv[1:])"
    workers = [subprocess.Popen(
        [sys.executable, "-c", code, str(homes[g]), str(seed), repr(scale), str(g),
         str(outs[g])], cwd=Path(osiris.__file__).resolve().parent.parent,
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for g in range(1, len(_SESSION_GROUPS))]
    try:
        results = [_run_group(homes[0], seed, scale, 0)]
    finally:
        errors = [worker.communicate()[1] for worker in workers]
    for g, (worker, err) in enumerate(zip(workers, errors, strict=True), start=1):
        if worker.returncode:
            raise RuntimeError(f"template group {g} failed:\n"
                               + err.decode("utf-8", "replace")[-3000:])
        # Our own file, written a moment ago by our own code in our scratch directory.
        results.append(pickle.loads(outs[g].read_bytes()))  # noqa: S301
    refs = {row[0]: row for _units, rows in results for row in rows}
    return _Templates([u for units, _rows in results for u in units],
                      [refs[r] for r in sorted(refs)],
                      [RefStore(Settings(home=h / "home").refs_dir) for h in homes])


# ---------------------------------------------------------------------------------------
# Compilation: texts split around what changes in a copy
# ---------------------------------------------------------------------------------------

CText = str | tuple[str, tuple[str, ...]]
"""A template text: plain, or a ``str.format`` pattern and the tokens filling its ``{}``."""

_MARK = "\ue000{}\ue001"
_TOKEN = re.compile(r"\ue000\d+\ue001|(?<![0-9A-Za-z_.])(?:[0-9a-f]{64}|[0-9a-f]{24}|\d{16}|\d{8})"
                    r"(?![0-9A-Za-z_])")

# Column roles per table: times and sequence numbers are mapped, the rest copied or,
# for texts, rendered. ``id`` columns come from the database's sequences.
_COLUMNS: dict[str, tuple[str, ...]] = {
    "events": ("seq", "ts_us", "task_id", "actor", "kind", "body"),
    "ledger": ("ts_us", "task_id", "event_seq", "kind", "ref", "tokens", "encoding",
               "saved_claimed", "saved_proven", "overhead_tokens", "detail", "cost_model",
               "cost_usd", "context_tokens"),
    "calls": ("task_id", "seq", "ts_us", "tool", "args_hash", "family", "fingerprint",
              "result_digest", "ref", "is_error", "error_signature", "error_text", "mutating",
              "novel", "targets", "paths"),
    "usage_reports": ("ts_us", "task_id", "event_seq", "provider", "prompt_tokens",
                      "cache_read_tokens", "cache_write_tokens", "output_tokens",
                      "estimated_prompt_tokens", "raw"),
    "task_refs": ("task_id", "ref", "created_us", "via"),
    "memory": ("entry_id", "scope", "scope_id", "kind", "key", "value", "task_id",
               "created_us"),
    "tasks": ("task_id", "created_us", "updated_us", "objective", "project_id", "agent_id",
              "parent_task_id", "status", "state", "state_hash", "owner"),
    "tool_results": ("task_id", "cache_key", "tool", "args_hash", "ref", "size_bytes",
                     "tokens", "ttl_s", "created_us", "hits"),
    "failures": ("task_id", "signature", "tool", "last_args_hash", "attempts", "first_us",
                 "last_us", "resolved", "lesson", "error_text"),
    "handoffs": ("handoff_id", "parent_task_id", "child_task_id", "status", "contract",
                 "result", "created_us", "updated_us"),
}
_TIMES = {"ts_us", "created_us", "updated_us", "first_us", "last_us"}
_SEQS = {"seq", "event_seq"}
_APPEND_TABLES = ("events", "ledger", "calls", "usage_reports")
_INSERT_TABLES = ("task_refs", "memory")
_MUTABLE_TABLES = ("tasks", "tool_results", "failures", "handoffs")


def render(text: CText, env: dict[str, str]) -> str:
    """A compiled text with its tokens replaced by ``env``."""
    if isinstance(text, str):
        return text
    pattern, keys = text
    return pattern.format(*map(env.__getitem__, keys))


@dataclass
class _Cols:
    """Rows of one table as columns, texts compiled."""

    data: dict[str, list[Any]]
    rows: int
    compiled: frozenset[str]
    """Columns holding at least one compiled text (the others are copied as they are)."""

    def keep(self, name: str, values: list[Any]) -> None:
        """Replace a column by values that are copied, never rendered."""
        self.data[name] = values
        self.compiled = self.compiled - {name}


class _Compiler:
    """Splits the texts of one template unit around its variable tokens."""

    def __init__(self, literals: dict[str, str], interesting: set[str]) -> None:
        # Longest first, so that no literal is cut by a shorter one inside it.
        self.markers = [(text, _MARK.format(i)) for i, text in
                        enumerate(sorted(literals, key=len, reverse=True))]
        self.interesting = interesting
        self.keys: set[str] = set()

    def text(self, value: str) -> CText:
        for literal, marker in self.markers:
            if literal in value:
                value = value.replace(literal, marker)
        pieces: list[str] = []
        keys: list[str] = []
        pos = 0
        for match in _TOKEN.finditer(value):
            token = match.group(0)
            if token[0] != "\ue000" and token not in self.interesting:
                continue
            pieces.append(value[pos:match.start()])
            keys.append(token)
            pos = match.end()
        if not keys:
            return value
        pieces.append(value[pos:])
        self.keys.update(keys)
        return "{}".join(p.replace("{", "{{").replace("}", "}}") for p in pieces), tuple(keys)

    def columns(self, table: str, rows: Sequence[tuple[Any, ...]]) -> _Cols:
        """Rows as compiled columns (in the order of ``_COLUMNS[table]``)."""
        names = _COLUMNS[table]
        out: dict[str, list[Any]] = {name: [] for name in names}
        for row in rows:
            for name, value in zip(names, row, strict=True):
                out[name].append(self.text(value) if isinstance(value, str) else value)
        compiled = frozenset(name for name, values in out.items()
                             if any(isinstance(v, tuple) for v in values))
        return _Cols(out, len(rows), compiled)


@dataclass
class _Seal:
    """A seal the template issued, and the state whose zones it stood for."""

    seal: str
    zone_b: str
    state: TaskState
    objective_marker: str = ""


@dataclass
class _Unit:
    """A compiled template unit: what a copy cut after ``k`` calls consists of."""

    name: str
    weight: float
    min_calls: int
    call_ts: list[int]
    markers: dict[str, tuple[str, str]]
    """marker -> (kind, template literal)."""
    task_markers: list[str]
    append: dict[str, _Cols]
    """Append- and insert-only tables, compiled, in write order."""
    upto: dict[str, list[int]]
    """Per table, how many of its rows exist after ``k`` calls (index ``k``)."""
    mutable: list[dict[str, _Cols]]
    """Per call ``k - 1``, the compiled rows of the mutable tables after it."""
    event_state: list[str | None]
    """Per event, the template state hash its body names (None when it names none)."""
    states: dict[str, CText]
    """Template state hash -> the compiled state text it is the hash of."""
    seals: list[_Seal]
    time_keys: list[str]
    seq_keys: list[str]

    @property
    def calls(self) -> int:
        return len(self.call_ts)

    def events_after(self, calls: int) -> int:
        return self.upto["events"][calls]


def _interesting_tokens(cap: _Capture) -> tuple[set[str], dict[str, str], list[_Seal]]:
    """Template tokens that change in a copy: times, sequence numbers, state hashes,
    seals and zone-B hashes, memory entry ids; plus state texts by hash and the seals."""
    states: dict[str, str] = {}
    seals: dict[str, _Seal] = {}
    for snap in cap.snaps:
        for row in snap.mutable["tasks"]:
            text = row[8]
            digest = sha256_hex(text)
            if digest != row[9]:
                raise AssertionError(f"template task {row[0]}: state_hash is not sha256(state)")
            if digest in states:
                continue
            states[digest] = text
            state = TaskState.from_dict(json.loads(text))
            for record in state.seals:
                if record.seal not in seals:
                    zones = compute_zones(state)
                    if zones.seal != record.seal:  # a seal is recorded with the state it seals
                        raise AssertionError(f"template seal {record.seal} is not the seal of "
                                             "the first state that records it")
                    seals[record.seal] = _Seal(record.seal, record.zone_b, state)
    tokens = set(states) | {s.seal for s in seals.values()} | {s.zone_b for s in seals.values()}
    tokens |= {row[0] for row in cap.rows["memory"]}
    texts = [v for table in cap.rows.values() for row in table for v in row
             if isinstance(v, str)]
    texts += [v for snap in cap.snaps for rows in snap.mutable.values() for row in rows
              for v in row if isinstance(v, str)]
    for text in texts:
        for token in _TOKEN.findall(text):
            is_time = len(token) == 16 and \
                TEMPLATE_T0_US <= int(token) < TEMPLATE_T0_US + _TIME_SPAN_US
            is_seq = len(token) == 8 and token.isdigit() and \
                TEMPLATE_SEQ_BASE < int(token) < TEMPLATE_SEQ_BASE + 1_000_000
            if is_time or is_seq:
                tokens.add(token)
    return tokens, states, list(seals.values())


def _compile(cap: _Capture) -> _Unit:
    """Compile one captured unit."""
    interesting, states, seals = _interesting_tokens(cap)
    comp = _Compiler(cap.literals, interesting)
    markers = {marker: (cap.literals[text], text) for text, marker in comp.markers}
    by_literal = dict(comp.markers)
    append = {name: comp.columns(name, [row[1:] if name in ("ledger", "usage_reports")
                                        else row for row in cap.rows[name]])
              for name in (*_APPEND_TABLES, *_INSERT_TABLES)}
    upto: dict[str, list[int]] = {name: [0] for name in append}
    for snap in cap.snaps:
        upto["events"].append(sum(1 for r in cap.rows["events"] if r[0] <= snap.seq))
        upto["calls"].append(sum(1 for r in cap.rows["calls"] if r[1] <= snap.seq))
        upto["ledger"].append(sum(1 for r in cap.rows["ledger"] if r[0] <= snap.ledger_id))
        upto["usage_reports"].append(sum(1 for r in cap.rows["usage_reports"]
                                         if r[0] <= snap.usage_id))
        upto["task_refs"].append(sum(1 for r in cap.rows["task_refs"] if r[2] <= snap.ts))
        upto["memory"].append(sum(1 for r in cap.rows["memory"] if r[7] <= snap.ts))
    # Recomputed for each copy, never rendered: keep the template values.
    append["memory"].keep("entry_id", [row[0] for row in cap.rows["memory"]])
    cache: dict[tuple[Any, ...], _Cols] = {}
    mutable = []
    for snap in cap.snaps:
        compiled = {}
        for name in _MUTABLE_TABLES:
            rows = snap.mutable[name]
            key = (name, rows)
            if key not in cache:
                cache[key] = comp.columns(name, rows)
                if name == "tasks":
                    cache[key].keep("state_hash", [row[9] for row in rows])
            compiled[name] = cache[key]
        mutable.append(compiled)
    event_state = []
    for body in (row[5] for row in cap.rows["events"]):
        digest = json.loads(body).get("state_hash")
        event_state.append(digest if digest in states else None)
    compiled_states = {digest: comp.text(text) for digest, text in states.items()}
    for seal in seals:
        seal.objective_marker = by_literal[seal.state.objective]
    times = sorted(k for k in comp.keys if len(k) == 16 and k.isdigit())
    seqs = sorted(k for k in comp.keys if len(k) == 8 and k.isdigit())
    return _Unit(
        name=cap.name, weight=cap.weight, min_calls=cap.min_calls,
        call_ts=[s.ts for s in cap.snaps], markers=markers,
        task_markers=[by_literal[t] for t in cap.tasks], append=append, upto=upto,
        mutable=mutable, event_state=event_state, states=compiled_states, seals=seals,
        time_keys=times, seq_keys=seqs)


# ---------------------------------------------------------------------------------------
# Planning: which unit each copy is, where it is cut, its ids and its times
# ---------------------------------------------------------------------------------------

AGENTS = ("claude-code", "claude-code", "claude-code", "codex", "codex", "cursor-agent",
          "aider", "gemini-cli", "openhands", "goose")
PROJECTS = ("shop-web", "billing-api", "search-service", "mobile-app", "infra-terraform",
            "data-pipeline", "auth-gateway", "design-system", "notifications", "ml-ranking",
            "admin-console", "docs-site", "payments-core", "inventory", "support-bot",
            "analytics-etl", "edge-proxy", "email-worker", "cli-tools", "kube-operators")
_VERBS = ("Fix", "Add", "Refactor", "Migrate", "Speed up", "Document", "Review", "Investigate",
          "Remove", "Upgrade", "Harden", "Port", "Split", "Simplify", "Test")
_THINGS = ("the login rate limiter", "invoice PDF rendering", "the search index rebuild",
           "CSV export", "the retry policy", "webhook signature checks",
           "the nightly backup job", "cart totals rounding", "feature flag evaluation",
           "the GraphQL schema", "session expiry", "image thumbnails", "the payments client",
           "audit logging", "the settings page", "the onboarding emails",
           "database connection pooling", "the OpenAPI spec", "error reporting",
           "the deploy pipeline", "currency conversion", "the cache warmer",
           "push notification batching", "the permissions model", "pagination of orders")
_PLACES = ("in the billing service", "in the web app", "for the mobile API",
           "in the worker pool", "across the monorepo", "in the admin dashboard",
           "behind the API gateway", "in the data pipeline", "for enterprise tenants", "")


def _objective(rng: random.Random) -> str:
    text = f"{rng.choice(_VERBS)} {rng.choice(_THINGS)} {rng.choice(_PLACES)}".strip()
    if rng.random() < 0.4:
        text += f" (#{rng.randint(100, 9999)})"
    if json.dumps(text, ensure_ascii=False)[1:-1] != text:  # rendered into JSON unescaped
        raise AssertionError(f"objective {text!r} would need JSON escaping")
    return text


@dataclass
class _Copy:
    """One generated task (or parent/child pair): a unit cut after ``calls`` calls."""

    unit: int
    want: float
    """Desired number of events before scaling (the cut is fitted to it)."""
    calls: int = 0
    start_us: int = 0
    pace: float = 1.0
    values: dict[str, str] = field(default_factory=dict)
    seqs: list[int] = field(default_factory=list)


def _cut_for(unit: _Unit, want: float) -> int:
    """The fewest calls (at least ``min_calls``) whose events reach ``want``."""
    k = bisect.bisect_left(unit.upto["events"], want)
    return max(unit.min_calls, min(k, unit.calls))


def _fit_cuts(units: list[_Unit], copies: list[_Copy], events: int,
              rng: random.Random) -> None:
    """Cut every copy so that the journal holds exactly ``events`` events (when it can)."""
    lo = sum(units[c.unit].events_after(units[c.unit].min_calls) for c in copies)
    hi = sum(units[c.unit].events_after(units[c.unit].calls) for c in copies)
    if not lo <= events <= hi:
        raise InvalidInputError(
            f"cannot make {events:,} events from {len(copies):,} tasks: these templates give "
            f"between {lo:,} and {hi:,} (at most ~{hi // max(len(copies), 1):,} per task)")

    def total(scale: float) -> int:
        return sum(units[c.unit].events_after(_cut_for(units[c.unit], c.want * scale))
                   for c in copies)

    low, high = 0.0, 1.0
    while total(high) < events:
        high *= 2
    for _ in range(60):
        mid = (low + high) / 2
        if total(mid) < events:
            low = mid
        else:
            high = mid
    for c in copies:
        c.calls = _cut_for(units[c.unit], c.want * high)
    diff = events - sum(units[c.unit].events_after(c.calls) for c in copies)
    order = list(range(len(copies)))
    while diff:
        rng.shuffle(order)
        moved = False
        for i in order:
            c, unit = copies[i], units[copies[i].unit]
            if diff > 0 and c.calls < unit.calls:
                step = unit.events_after(c.calls + 1) - unit.events_after(c.calls)
                if step <= diff:
                    c.calls, diff, moved = c.calls + 1, diff - step, True
            elif diff < 0 and c.calls > unit.min_calls:
                step = unit.events_after(c.calls) - unit.events_after(c.calls - 1)
                if step <= -diff:
                    c.calls, diff, moved = c.calls - 1, diff + step, True
            if not diff:
                break
        if not moved:
            break


def _plan_copies(units: list[_Unit], tasks: int, events: int, *, handoff_share: float,
                 days: float, end_us: int, rng: random.Random) -> list[_Copy]:
    """Choose each copy's unit, cut, ids, agent, project, objective, start and pace."""
    pairs = [i for i, u in enumerate(units) if len(u.task_markers) == 2]
    singles = [i for i, u in enumerate(units) if len(u.task_markers) == 1]
    n_pairs = round(tasks * handoff_share / 2) if pairs else 0
    per_task = events / tasks
    copies = []
    for _ in range(tasks - 2 * n_pairs):  # singles: a length drawn long-tailed, then a unit
        want = per_task * rng.lognormvariate(-0.5, 1.0)
        fits = [i for i in singles if units[i].events_after(units[i].calls) >= want]
        if not fits:
            fits = [max(singles, key=lambda i: units[i].calls)]
        pick = rng.choices(fits, weights=[units[i].weight for i in fits])[0]
        copies.append(_Copy(pick, want))
    copies += [_Copy(rng.choice(pairs), 2 * per_task * rng.lognormvariate(-0.5, 1.0))
               for _ in range(n_pairs)]
    rng.shuffle(copies)
    _fit_cuts(units, copies, events, rng)
    span = int(days * DAY_US)
    for c in copies:
        unit = units[c.unit]
        c.pace = rng.lognormvariate(0.0, 0.35)
        duration = int((unit.call_ts[c.calls - 1] - unit.call_ts[0]) * c.pace)
        c.start_us = end_us - duration - rng.randrange(max(span - duration, 1))
        project = rng.choice(PROJECTS)
        for marker, (kind, _literal) in unit.markers.items():
            if kind == "task":
                c.values[marker] = f"t_{rng.getrandbits(96):024x}"
            elif kind == "handoff":
                c.values[marker] = f"h_{rng.getrandbits(64):016x}"
            elif kind == "objective":
                c.values[marker] = _objective(rng)
            elif kind == "agent":
                c.values[marker] = rng.choice(AGENTS)
            else:
                c.values[marker] = project
    return copies


def _number_events(units: list[_Unit], copies: list[_Copy]) -> int:
    """Interleave every copy's events by time and give them their sequence numbers."""
    keys: list[tuple[int, int, int]] = []
    for i, c in enumerate(copies):
        unit = units[c.unit]
        t0, start, pace = unit.call_ts[0], c.start_us, c.pace
        times = unit.append["events"].data["ts_us"][:unit.events_after(c.calls)]
        keys.extend((start + int((t - t0) * pace), i, j) for j, t in enumerate(times))
        c.seqs = [0] * len(times)
    keys.sort()
    for seq, (_ts, i, j) in enumerate(keys, start=1):
        copies[i].seqs[j] = seq
    return len(keys)


# ---------------------------------------------------------------------------------------
# Rendering: a copy's rows, with its own ids, times, sequence numbers and hashes
# ---------------------------------------------------------------------------------------


class _Sink:
    """Columns of every table, filled copy by copy."""

    def __init__(self) -> None:
        self.tables: dict[str, dict[str, list[Any]]] = {
            name: {col: [] for col in cols} for name, cols in _COLUMNS.items()}

    def events_in_order(self) -> dict[str, list[Any]]:
        """The event columns sorted by sequence number (which runs from 1 without gaps)."""
        events = self.tables.pop("events")
        position = [0] * len(events["seq"])
        for i, seq in enumerate(events["seq"]):
            position[seq - 1] = i
        return {name: [values[i] for i in position] for name, values in events.items()}


class _Renderer:
    """Renders one copy's rows into a sink."""

    def __init__(self, unit: _Unit, copy: _Copy, sink: _Sink) -> None:
        self.unit, self.copy, self.sink = unit, copy, sink
        self.t0, self.start, self.pace = unit.call_ts[0], copy.start_us, copy.pace
        self.env = dict(copy.values)
        n_events = unit.events_after(copy.calls)
        self.seq_of = dict(zip(unit.append["events"].data["seq"][:n_events], copy.seqs,
                               strict=True))

    def when(self, t: int) -> int:
        """A template time moved into the copy's time."""
        return self.start + int((t - self.t0) * self.pace)

    def emit(self, table: str, cols: _Cols, rows: int) -> None:
        """Append the first ``rows`` rows of ``cols`` to the sink's ``table``."""
        out = self.sink.tables[table]
        env, seq_of = self.env, self.seq_of
        t0, start, pace = self.t0, self.start, self.pace
        for name in _COLUMNS[table]:
            values = cols.data[name] if rows == cols.rows else cols.data[name][:rows]
            if name in _TIMES:
                out[name].extend([start + int((t - t0) * pace) for t in values])
            elif name in _SEQS:
                out[name].extend(map(seq_of.__getitem__, values))
            elif name in cols.compiled:
                out[name].extend([v[0].format(*map(env.__getitem__, v[1]))
                                  if v.__class__ is tuple else v for v in values])
            else:
                out[name].extend(values)

    def run(self) -> None:
        from osiris.engine.governance import progress_row

        unit, env, calls = self.unit, self.env, self.copy.calls
        for key in unit.time_keys:
            env[key] = str(self.when(int(key)))
        for key in unit.seq_keys:  # a number past the cut is never rendered
            env[key] = str(self.seq_of.get(int(key), int(key)))
        for seal in unit.seals:
            zones = compute_zones(replace(seal.state, objective=env[seal.objective_marker]))
            env[seal.seal], env[seal.zone_b] = zones.seal, zones.zone_b

        # Memory entries are content-addressed: their ids change with their scope ids.
        mem = self.sink.tables["memory"]
        first = len(mem["entry_id"])
        self.emit("memory", unit.append["memory"], unit.upto["memory"][calls])
        old_ids = unit.append["memory"].data["entry_id"]
        for i in range(first, len(mem["entry_id"])):
            entry = MemoryEntry(mem["scope"][i], mem["scope_id"][i], mem["kind"][i],
                                mem["key"][i], json.loads(mem["value"][i]))
            env[old_ids[i - first]] = mem["entry_id"][i] = entry.entry_id

        # The state after each call, hashed as TaskState.state_hash does, for the events.
        n_events = unit.events_after(calls)
        for digest in unit.event_state[:n_events]:
            if digest is not None and digest not in env:
                env[digest] = sha256_hex(render(unit.states[digest], env))
        for table in ("events", "ledger", "usage_reports", "task_refs"):
            self.emit(table, unit.append[table], unit.upto[table][calls])
        out = self.sink.tables["calls"]
        first = len(out["seq"])
        self.emit("calls", unit.append["calls"], unit.upto["calls"][calls])
        for i in range(first, len(out["seq"])):  # a plan change's marker hashes its seq
            if out["tool"][i] == "osiris_plan":
                out["fingerprint"][i] = progress_row(out["seq"][i]).fingerprint
        snapshot = unit.mutable[calls - 1]
        for table in _MUTABLE_TABLES:
            self.emit(table, snapshot[table], snapshot[table].rows)
        tasks = self.sink.tables["tasks"]
        for i in range(len(tasks["state"]) - snapshot["tasks"].rows, len(tasks["state"])):
            tasks["state_hash"][i] = sha256_hex(tasks["state"][i])


# ---------------------------------------------------------------------------------------
# The build
# ---------------------------------------------------------------------------------------


def _render_all(units: list[_Unit], copies: list[_Copy], report: Progress,
                ) -> tuple[_Sink, dict[str, list[Any]]]:
    """Every copy's rows, and the journal's columns in sequence order."""
    sink = _Sink()
    for i, copy in enumerate(copies):
        _Renderer(units[copy.unit], copy, sink).run()
        if i % 500 == 0:
            report("render", i, len(copies))
    report("render", len(copies), len(copies))
    _dedupe_memory(sink)
    return sink, sink.events_in_order()


def _chain(ev: dict[str, list[Any]]) -> tuple[list[str], list[str]]:
    """Every event's prev_hash and hash, in order (the journal's own hash function)."""
    prevs, hashes = [], []
    prev = GENESIS_HASH
    for i, (ts, task, actor, kind, body) in enumerate(zip(
            ev["ts_us"], ev["task_id"], ev["actor"], ev["kind"], ev["body"], strict=True)):
        digest = journal_event_hash(i + 1, ts, task, actor, kind, body, prev)
        prevs.append(prev)
        hashes.append(digest)
        prev = digest
    return prevs, hashes


def _dedupe_memory(sink: _Sink) -> None:
    """An entry written by several copies (same scope, key and value) is stored once."""
    mem = sink.tables["memory"]
    first: dict[str, int] = {}
    for i, (entry, created) in enumerate(zip(mem["entry_id"], mem["created_us"], strict=True)):
        j = first.get(entry)
        if j is None or created < mem["created_us"][j]:
            first[entry] = i
    keep = sorted(first.values())
    for name in mem:
        column = mem[name]
        mem[name] = [column[i] for i in keep]


_INSERT_ORDER = ("events", "tasks", "task_refs", "calls", "tool_results", "failures",
                 "memory", "handoffs", "ledger", "usage_reports")


def _insert(store: Store, templates: _Templates, sink: _Sink, events: dict[str, list[Any]],
            prevs: list[str], hashes: list[str], report: Progress) -> None:
    """All rows in one write transaction; the witness follows the commit, lock held.

    Each table goes in as one Arrow table; the sink's Python lists (and ``prevs`` and
    ``hashes``) are emptied as soon as their table is built, so the process holds each
    row about once.
    """
    import pyarrow as pa

    n = len(hashes)
    head = hashes[-1] if hashes else GENESIS_HASH
    tables: dict[str, dict[str, list[Any]]] = {
        "events": {**events, "prev_hash": prevs, "hash": hashes}, **sink.tables}
    sink.tables = {}

    def witness() -> None:
        journal.write_witness(store.home, n, head)

    with store.db.write(on_commit=witness) as con:
        # fetchall: a result left unfinished would block register() below.
        if con.execute("SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM tasks)"
                       ).fetchall()[0][0]:
            raise InvalidInputError(f"{store.home} already holds tasks or events: "
                                    "build a large home into an empty home")
        for done, name in enumerate(_INSERT_ORDER):
            report("insert", done, len(_INSERT_ORDER) + 1)
            columns = tables.pop(name)
            cols = ", ".join(columns if name == "events" else _COLUMNS[name])
            order = ""
            if name in ("ledger", "usage_reports"):  # ids follow the journal
                columns["ord"] = list(range(len(columns["ts_us"])))
                order = " ORDER BY event_seq, ord"
            arrow = pa.table(columns)
            for values in columns.values():
                values.clear()
            con.register("bulk_rows", arrow)
            con.execute(f"INSERT INTO {name} ({cols}) SELECT {cols} FROM bulk_rows{order}")  # noqa: S608
            con.unregister("bulk_rows")
            del arrow
        ref_cols = ("ref", "size_bytes", "tokens", "encoding", "media_type",
                    "redaction_version", "redactions")
        con.register("bulk_refs", pa.table(
            {c: [r[i] for r in templates.refs] for i, c in enumerate(ref_cols)}))
        # A blob's metadata dates from its first use in the generated home.
        con.execute(
            "INSERT INTO refs (ref, size_bytes, tokens, encoding, media_type, created_us,"
            " redaction_version, redactions) SELECT r.ref, r.size_bytes, r.tokens, r.encoding,"
            " r.media_type, u.first_us, r.redaction_version, r.redactions FROM bulk_refs r"
            " JOIN (SELECT ref, min(created_us) AS first_us FROM task_refs GROUP BY ref) u"
            " USING (ref)")
        con.unregister("bulk_refs")
    report("insert", len(_INSERT_ORDER) + 1, len(_INSERT_ORDER) + 1)


def _copy_blobs(templates: _Templates, target: RefStore, refs: set[str]) -> int:
    """Copy the blobs the copies use (verified on read, written atomically)."""
    for ref in sorted(refs):
        target.put(templates.blob(ref))
    return len(refs)


def build_large_home(home: Path, tasks: int, events: int, *, seed: int = 0,
                     progress: Progress | None = None, days: float = 30.0,
                     handoff_share: float = 0.02, end_us: int | None = None,
                     template_scale: float = 1.0) -> dict[str, Any]:
    """Fill the empty OSIRIS home ``home`` with ``tasks`` tasks and ``events`` events.

    ``handoff_share`` of the tasks come as parent/child pairs of a handoff; times fall in
    the ``days`` days before ``end_us`` (now by default); ``template_scale`` shortens
    (below 1) or lengthens the template sessions. The same arguments give the same home.
    Returns the counts per table, what the data contains (:func:`summarize_home`),
    timings in seconds and the database's size.
    """
    if tasks < 1 or events < tasks:
        raise InvalidInputError("need at least one task and at least one event per task")
    if not 0 <= handoff_share <= 1:
        raise InvalidInputError("handoff_share must be between 0 and 1")
    report = progress or (lambda _stage, _done, _total: None)
    timings: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(stage: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        timings[stage] = round(now - clock, 3)
        clock = now

    home = Path(home)
    store = Store(Settings(home=home), exclusive=True)
    try:
        with store.read() as con:
            if fetch_row(con, "SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM"
                         " tasks)")[0]:
                raise InvalidInputError(f"{home} already holds tasks or events: build a large "
                                        "home into an empty home")
        with tempfile.TemporaryDirectory(prefix="osiris-large-home-") as scratch:
            report("templates", 0, len(_SESSION_GROUPS))
            templates = _run_templates(Path(scratch), seed, template_scale)
            units = [_compile(cap) for cap in templates.units]
            report("templates", len(_SESSION_GROUPS), len(_SESSION_GROUPS))
            lap("templates")
            end = end_us if end_us is not None else time.time_ns() // 1000
            copies = _plan_copies(units, tasks, events, handoff_share=handoff_share,
                                  days=days, end_us=end,
                                  rng=random.Random(seed))  # noqa: S311 (reproducible)
            total = _number_events(units, copies)
            lap("plan")
            sink, journal_rows = _render_all(units, copies, report)
            lap("render")
            report("chain", 0, total)
            prevs, hashes = _chain(journal_rows)
            head_hash = hashes[-1]
            report("chain", total, total)
            lap("chain")
            blobs = _copy_blobs(templates, store.refs, set(sink.tables["task_refs"]["ref"]))
            _insert(store, templates, sink, journal_rows, prevs, hashes, report)
            with store.read() as con:
                con.execute("CHECKPOINT")
            lap("insert")
        report("summary", 0, 1)
        summary = summarize_home(store)
        report("summary", 1, 1)
        lap("summary")
    finally:
        store.close()
    return {"home": str(home), "seed": seed, "head_seq": total, "head_hash": head_hash,
            "blobs_written": blobs, **summary,
            "templates": {u.name: {"calls": u.calls, "events": u.events_after(u.calls),
                                   "tasks": len(u.task_markers),
                                   "copies": sum(1 for c in copies if units[c.unit] is u)}
                          for u in units},
            "timings_s": timings, "seconds": round(sum(timings.values()), 3),
            "db_bytes": Settings(home=home).db_path.stat().st_size}


_SUMMARY_SQL = {
    "event_kinds": "SELECT kind, count(*) FROM events GROUP BY kind ORDER BY 2 DESC",
    "drift_verdicts": (  # journaled drift verdicts (plan updates, head/contract observes)
        "SELECT body->'drift'->>'verdict', count(DISTINCT task_id) FROM events"
        " WHERE body LIKE '%\"drift\":%' GROUP BY 1 ORDER BY 2 DESC"),
    "precheck_verdicts": ("SELECT body->>'verdict', count(DISTINCT task_id) FROM events"
                          " WHERE kind = 'precheck' GROUP BY 1 ORDER BY 2 DESC"),
    "precheck_sources": (
        "SELECT source, count(DISTINCT task_id) FROM (SELECT task_id,"
        " unnest(CAST(body->'sources' AS VARCHAR[])) AS source FROM events"
        " WHERE kind = 'precheck') GROUP BY 1 ORDER BY 2 DESC"),
    "loopguard_patterns": (  # patterns LoopGuard reported on observed calls
        "SELECT pattern, count(DISTINCT task_id) FROM (SELECT task_id,"
        " unnest(CAST(body->'loop' AS VARCHAR[])) AS pattern FROM events"
        " WHERE body LIKE '%\"loop\":%') GROUP BY 1 ORDER BY 2 DESC"),
}


def summarize_home(store: Store) -> dict[str, Any]:
    """What a home holds: rows per table, event and ledger kinds, and how many tasks
    had each drift verdict, precheck verdict and source, and LoopGuard pattern."""
    out: dict[str, Any] = {}
    with store.read() as con:
        out["counts"] = {name: int(fetch_row(con, f"SELECT count(*) FROM {name}")[0])  # noqa: S608
                         for name in ("tasks", "events", "ledger", "calls", "task_refs",
                                      "refs", "memory", "tool_results", "failures",
                                      "handoffs", "usage_reports", "checkpoints")}
        out["ledger_kinds"] = {
            str(kind): {"rows": int(rows), "tokens": int(tokens), "context_tokens": int(ctx),
                        "saved_claimed": int(claimed), "saved_proven": int(proven),
                        "overhead_tokens": int(overhead), "cost_usd": round(float(cost), 4)}
            for kind, rows, tokens, ctx, claimed, proven, overhead, cost in con.execute(
                "SELECT kind, count(*), sum(tokens), sum(context_tokens), sum(saved_claimed),"
                " sum(saved_proven), sum(overhead_tokens), sum(cost_usd) FROM ledger"
                " GROUP BY kind ORDER BY 2 DESC").fetchall()}
        tasks_with: dict[str, dict[str, int]] = {}
        for name, sql in _SUMMARY_SQL.items():
            tasks_with[name] = {str(k): int(v) for k, v in con.execute(sql).fetchall()}
        out["event_kinds"] = tasks_with.pop("event_kinds")
        out["tasks_with"] = tasks_with
        out["tasks_with"]["facts"] = {
            name: int(fetch_row(con, sql)[0]) for name, sql in (
                ("prune_advice", "SELECT count(DISTINCT task_id) FROM events"
                                 " WHERE kind = 'prune.advice'"),
                ("drop_receipt", "SELECT count(DISTINCT task_id) FROM ledger"
                                 " WHERE kind = 'drop_receipt'"),
                ("provider_usage", "SELECT count(DISTINCT task_id) FROM usage_reports"),
                ("failure", "SELECT count(DISTINCT task_id) FROM failures"),
                ("lesson", "SELECT count(DISTINCT task_id) FROM failures"
                           " WHERE lesson IS NOT NULL"),
                ("redacted_payload", "SELECT count(DISTINCT t.task_id) FROM task_refs t"
                                     " JOIN refs r USING (ref) WHERE r.redactions > 0"),
                ("handoff_child", "SELECT count(*) FROM tasks"
                                  " WHERE parent_task_id IS NOT NULL"),
                ("completed", "SELECT count(*) FROM tasks WHERE status = 'completed'"))}
    return out


def verify_large_home(home: Path, *, sample: int = 5, seed: int = 0) -> dict[str, Any]:
    """``osiris health`` and ``osiris audit`` of ``sample`` tasks (chosen with ``seed``);
    each audit says whether the task is a handoff child."""
    from osiris.health import collect_health
    from osiris.store.audit import audit_task

    settings = Settings(home=Path(home))
    health = collect_health(settings)
    store = Store(settings)
    try:
        with store.read() as con:
            ids = [(str(t), p is not None) for t, p in con.execute(
                "SELECT task_id, parent_task_id FROM tasks ORDER BY task_id").fetchall()]
        chosen = random.Random(seed).sample(ids, min(sample, len(ids)))  # noqa: S311
        audits = {task: {"child": child, **audit_task(store, task).as_dict()}
                  for task, child in chosen}
    finally:
        store.close()
    return {"healthy": health["healthy"], "journal": health.get("journal"),
            "problems": health["problems"], "audits": audits,
            "lossless": sum(1 for a in audits.values() if a["lossless"]),
            "audited": len(audits)}


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m osiris.harness.large_home HOME --tasks N --events M``."""
    parser = argparse.ArgumentParser(
        prog="python -m osiris.harness.large_home",
        description="Build a large, valid OSIRIS home (for dashboard measurements).")
    parser.add_argument("home", type=Path, help="an empty (or new) OSIRIS home directory")
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--days", type=float, default=30.0,
                        help="spread the tasks over this many days before now")
    parser.add_argument("--handoff-share", type=float, default=0.02,
                        help="share of tasks that are parent/child pairs of a handoff")
    parser.add_argument("--template-scale", type=float, default=1.0,
                        help="length of the template sessions (1 = full)")
    parser.add_argument("--verify", type=int, default=5, metavar="N",
                        help="afterwards run health and audit N tasks (0: skip)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    last = [""]

    def progress(stage: str, done: int, total: int) -> None:
        if stage != last[0] or done == total:
            sys.stderr.write(f"[{time.perf_counter() - started:7.1f}s] {stage} "
                             f"{done:,}/{total:,}\n")
            last[0] = stage

    result = build_large_home(args.home, args.tasks, args.events, seed=args.seed,
                              progress=progress, days=args.days,
                              handoff_share=args.handoff_share,
                              template_scale=args.template_scale)
    if args.verify:
        sys.stderr.write(f"[{time.perf_counter() - started:7.1f}s] verify\n")
        checked = verify_large_home(args.home, sample=args.verify, seed=args.seed)
        result["verify"] = {k: v for k, v in checked.items() if k != "audits"}
        result["verify"]["audits"] = {t: {"lossless": a["lossless"], "child": a["child"],
                                          "violations": a["integrity_violations"][:3]}
                                      for t, a in checked["audits"].items()}
    sys.stdout.write(json.dumps(result, indent=2) + "\n")
    healthy = result.get("verify", {}).get("healthy", True)
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main())
