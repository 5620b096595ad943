"""Template sessions: scripts run through the real engine, captured call by call
(step 1)."""

from __future__ import annotations

import pickle
import random
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from osiris.config import Settings
from osiris.core.hashing import GENESIS_HASH, canonical_json, journal_event_hash
from osiris.engine import Engine
from osiris.errors import NotFoundError
from osiris.harness.bench.large_home.capture import _Capture, _Recorder, _ScriptClock
from osiris.harness.bench.large_home.common import TEMPLATE_SEQ_BASE, TEMPLATE_T0_US
from osiris.harness.bench.large_home.payloads import (
    _CONTRACT,
    _HEAD,
    _MODULES,
    _RULES,
    _WORDS,
    _env_dump,
    _git_diff,
    _grep_output,
    _html_page,
    _jsonl_log,
    _py_source,
    _pytest_fail,
    _pytest_pass,
)
from osiris.store.db import fetch_row
from osiris.store.refs import RefStore
from osiris.store.state import Store


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
    code = "import sys; from osiris.harness.bench.large_home.templates import _group_to_file; " \
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
