"""precheck verdicts, LoopGuard patterns, invariants (malformed, hot-reloaded), lessons."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from osiris.config import Settings
from osiris.engine import Engine
from osiris.errors import InvalidInputError
from tests.conftest import REPO, OpenEngine, run_cli

# The guard rails the large home uses too: each kind of rule once.
RULES = (resources.files("osiris.harness") / "data" / "invariants.toml").read_text("utf-8")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".osiris").mkdir(parents=True)
    (root / ".osiris" / "invariants.toml").write_text(RULES)
    return root


@pytest.fixture
def gov(settings: Settings, project: Path, open_engine: OpenEngine) -> Engine:
    return open_engine(Settings(home=settings.home, roots=(project,)))


def _task(engine: Engine, **kw: object) -> str:
    return engine.plan("start", objective="governed work", **kw)["task_id"]


def _bash(command: str) -> dict:
    return {"command": command}


def test_verdict_scenarios(gov: Engine, project: Path) -> None:
    tid = _task(gov)
    cases = [
        ("Bash", _bash("ls -la"), None, "allow"),
        ("Edit", {"file_path": str(project / "src/db/migrations/0003_x.py")}, None, "warn"),
        ("Bash", _bash("grep -r TODO ."), None, "suggest_alternative"),
        ("Edit", {"file_path": "tests/test_api.py"}, None, "require_approval"),
        ("Bash", _bash("git commit -m 'wip'"), None, "block"),
        ("Bash", _bash("git push origin main --force"), None, "block"),
    ]
    for tool, args, path, expected in cases:
        answer = gov.precheck(tid, tool, args=args, path=path)
        assert answer["verdict"] == expected, (tool, args, answer)
    commit = gov.precheck(tid, "Bash", args=_bash("git commit -m 'wip'"))
    assert "tests_passed" in commit["required_action"]
    assert commit["reasons"][0].startswith("invariant:tests-before-commit")
    alt = gov.precheck(tid, "Bash", args=_bash("grep -r TODO ."))
    assert alt["alternative"] == {"instead": "use the Grep tool"}
    assert "inv=5" in gov.plan("status", task_id=tid)["manifest"]


def test_require_approval_passes_only_when_the_same_action_is_confirmed(gov: Engine) -> None:
    tid = _task(gov)
    edit = {"file_path": "tests/test_api.py"}
    assert gov.precheck(tid, "Edit", args=edit)["verdict"] == "require_approval"
    other = gov.precheck(tid, "Edit", args={"file_path": "tests/other.py"}, confirmed=True)
    assert other["verdict"] == "require_approval"  # never asked for this one: ask first
    approved = gov.precheck(tid, "Edit", args=edit, confirmed=True)
    assert approved["verdict"] == "allow"
    assert approved["approved"] is True
    again = gov.precheck(tid, "Edit", args=edit, confirmed=True)
    assert again["verdict"] == "require_approval"  # an approval is used once
    blocked = gov.precheck(tid, "Bash", args=_bash("git push x --force"), confirmed=True)
    assert blocked["verdict"] == "block"  # a block cannot be confirmed away


def test_test_runs_set_the_flag_that_invariants_require(gov: Engine) -> None:
    tid = _task(gov)
    commit = _bash("git commit -am fix")
    gov.observe(tid, "result", tool="Bash", args=_bash("pytest -q"),
                result="..F\nFAILED tests/t.py::a\n1 failed, 2 passed in 0.1s")
    assert gov.precheck(tid, "Bash", args=commit)["verdict"] == "block"
    gov.observe(tid, "result", tool="Bash", args=_bash("pytest -q"),
                result="...\n3 passed in 0.1s")
    assert gov.precheck(tid, "Bash", args=commit)["verdict"] == "allow"
    gov.plan("update", task_id=tid, flags={"tests_passed": False})  # declared by the agent
    assert gov.precheck(tid, "Bash", args=commit)["verdict"] == "block"


def test_budget_warns_then_requires_approval(gov: Engine) -> None:
    tid = _task(gov, budget={"tokens": 10_000})
    gov.observe(tid, "action", usage={"input_tokens": 8600, "output_tokens": 0})
    warn = gov.precheck(tid, "Bash", args=_bash("ls"))
    assert warn["verdict"] == "warn"
    assert "budget" in warn["reasons"][0]
    gov.observe(tid, "action", usage={"input_tokens": 2000, "output_tokens": 0})
    over = gov.precheck(tid, "Bash", args=_bash("ls"))
    assert over["verdict"] == "require_approval"
    assert gov.precheck(tid, "Bash", args=_bash("ls"), confirmed=True)["verdict"] == "allow"


def test_exact_duplicate_read_is_answered_with_the_ref(gov: Engine) -> None:
    tid = _task(gov)
    read = {"file_path": "/src/app.py"}
    first = gov.observe(tid, "result", tool="Read", args=read, result="code\n" * 500)
    gov.observe(tid, "result", tool="Grep", args={"pattern": "x"}, result="nothing")
    answer = gov.precheck(tid, "Read", args=read)
    assert answer["verdict"] == "suggest_alternative"
    assert answer["alternative"]["ref"] == first["ref"]
    assert answer["alternative"]["op"] == "recall"
    gov.observe(tid, "result", tool="Edit", args={"file_path": "/src/app.py"}, result="ok")
    assert gov.precheck(tid, "Read", args=read)["verdict"] == "allow"  # changed since


def test_repeated_failure_blocks_until_progress(gov: Engine) -> None:
    tid = _task(gov)
    run = _bash("cd app && python run.py")
    for n in range(3):
        gov.observe(tid, "result", tool="Edit", args={"file_path": "run.py", "n": n},
                    result="ok")  # a fix attempt between runs does not excuse the loop
        answer = gov.observe(tid, "error", tool="Bash", args=run,
                             result=f'File "/tmp/x{n}/run.py", line {n + 3}\n'
                                    "ModuleNotFoundError: No module named 'yaml'")
    assert answer["loop"]["patterns"][0]["pattern"] == "repeated_failure"
    blocked = gov.precheck(tid, "Bash", args=run)
    assert blocked["verdict"] == "block"
    assert "loopguard:repeated_failure" in blocked["reasons"][0]
    assert "Bash:python run.py failed 3 times" in blocked["reasons"][0]
    assert "stop retrying" in blocked["required_action"]
    # Other programs of the same shell are not blocked by this failure.
    assert gov.precheck(tid, "Bash", args=_bash("cat run.py"))["verdict"] == "allow"
    # Progress lifts the block: a plan update...
    gov.plan("update", task_id=tid, decisions=["install pyyaml first"])
    assert gov.precheck(tid, "Bash", args=run)["verdict"] == "allow"
    # ...or, after three more failures, a change to the very file the run names.
    for _ in range(3):
        gov.observe(tid, "error", tool="Bash", args=run, result="ModuleNotFoundError: yaml")
    assert gov.precheck(tid, "Bash", args=run)["verdict"] == "block"
    gov.observe(tid, "result", tool="Edit", args={"file_path": "app/run.py"}, result="ok")
    assert gov.precheck(tid, "Bash", args=run)["verdict"] == "allow"


def test_loop_pattern_escalates_note_then_warn_then_block(gov: Engine) -> None:
    tid = _task(gov)
    verdicts = []
    for n in range(6):
        answer = gov.precheck(tid, "Read", args={"file_path": f"/nope/{n}.py"})
        verdicts.append((answer["verdict"], any("loop_pattern" in r for r in answer["reasons"])))
        gov.observe(tid, "error", tool="Read", args={"file_path": f"/nope/{n}.py"},
                    result=f"File does not exist: /nope/{n}.py")
    last = gov.precheck(tid, "Read", args={"file_path": "/nope/6.py"})
    # nothing, nothing, a note (2 calls), then warnings from 3 on, a block from 6 on
    assert verdicts == [("allow", False), ("allow", False), ("allow", True), ("warn", True),
                        ("warn", True), ("warn", True)]
    assert last["verdict"] == "block"
    assert "6 different Read calls end in the same error" in " ".join(last["reasons"])


def test_oscillation_and_runaway(gov: Engine) -> None:
    tid = _task(gov)
    a, b = _bash("git status"), _bash("git diff --stat")
    for _ in range(2):
        gov.observe(tid, "result", tool="Bash", args=a, result="On branch main\nclean")
        gov.observe(tid, "result", tool="Bash", args=b, result="0 files changed")
    answer = gov.precheck(tid, "Bash", args=a)
    assert answer["verdict"] == "warn"
    assert any("oscillation" in r for r in answer["reasons"])
    tid2 = _task(gov)
    for _ in range(12):  # the first brings news, the next 11 do not: with the next, 12
        gov.observe(tid2, "result", tool="Bash", args=_bash("sleep 1; cat status"),
                    result="waiting")
    warn = gov.precheck(tid2, "Bash", args=_bash("sleep 1; cat status"))
    # The repeat is also an exact duplicate (recall instead), which outranks the warning.
    assert warn["verdict"] == "suggest_alternative"
    assert any(r.startswith("loopguard:runaway") for r in warn["reasons"])
    for _ in range(12):
        gov.observe(tid2, "result", tool="Bash", args=_bash("sleep 1; cat status"),
                    result="waiting")
    block = gov.precheck(tid2, "Bash", args=_bash("sleep 1; cat status"))
    assert block["verdict"] == "block"
    assert "checkpoint" in block["required_action"]


def test_per_tool_exemptions_from_the_invariants_file(settings: Settings, tmp_path: Path,
                                                      open_engine: OpenEngine) -> None:
    root = tmp_path / "exempt"
    (root / ".osiris").mkdir(parents=True)
    (root / ".osiris" / "invariants.toml").write_text(
        '[loopguard]\nrunaway_warn = 5\n[[loopguard.exempt]]\ntool = "Bash"\n'
        'patterns = ["runaway", "oscillation", "exact_duplicate"]\n')
    engine = open_engine(Settings(home=settings.home, roots=(root,)))
    tid = _task(engine)
    for _ in range(8):
        engine.observe(tid, "result", tool="Bash", args=_bash("poll"), result="same")
        engine.observe(tid, "result", tool="Glob", args={"pattern": "*"}, result="a\nb")
    assert engine.precheck(tid, "Bash", args=_bash("poll"))["verdict"] == "allow"
    glob = engine.precheck(tid, "Glob", args={"pattern": "*"})
    assert glob["verdict"] != "allow"  # Glob is not exempt


def test_malformed_rules_keep_the_last_good_ones_and_hot_reload(
        gov: Engine, project: Path, settings: Settings, open_engine: OpenEngine) -> None:
    tid = _task(gov)
    push = _bash("git push origin main --force")
    assert gov.precheck(tid, "Bash", args=push)["verdict"] == "block"
    rules_file = project / ".osiris" / "invariants.toml"
    rules_file.write_text(RULES + "\n[[invariant]]\nid = 'broken\n")
    answer = gov.precheck(tid, "Bash", args=push)
    assert answer["verdict"] == "block"  # the last good rules stay in force
    assert "malformed" in answer["rules_problems"][0]
    assert "last good rules stay in force" in answer["rules_problems"][0]
    # A new process (or the owner's engine for a new client: other settings, so a new
    # engine), started while the file is broken, enforces them too (from the store).
    fresh = open_engine(Settings(home=settings.home, roots=(project,), log_level="INFO"))
    assert fresh is not gov
    assert fresh.precheck(tid, "Bash", args=push)["verdict"] == "block"
    health = run_cli("health", env={"OSIRIS_ROOTS": str(project)})
    doc = json.loads(health.stdout)
    assert "malformed" in doc["invariants"]["problems"][0]
    assert any("malformed" in w for w in doc["warnings"])
    # Fixed without a restart: a rule change is picked up on the next call.
    rules_file.write_text(RULES.replace("git push .*--force", "git push"))
    os.utime(rules_file, ns=(1, 1))
    fixed = gov.precheck(tid, "Bash", args=_bash("git push origin main"))
    assert fixed["verdict"] == "block"
    assert "rules_problems" not in fixed


def test_every_verdict_is_journaled_with_the_caller(gov: Engine) -> None:
    tid = _task(gov)
    gov.precheck(tid, "Bash", args=_bash("git commit -m x"), actor="agent-7")
    with gov.store.read() as con:
        actor, body = con.execute("SELECT actor, body FROM events WHERE kind = 'precheck'"
                                  ).fetchone()
    assert actor == "agent-7"
    assert json.loads(body)["verdict"] == "block"
    assert json.loads(body)["derived_tool"] == "git.commit"


def test_lessons_reach_the_next_agent_on_the_same_project(gov: Engine) -> None:
    tid = _task(gov, project_id="shop")
    for n in range(2):
        gov.observe(tid, "error", tool="Bash", args=_bash("npm test"),
                    result=f"Error: Cannot find module 'left-pad' (attempt {n})")
    gov.observe(tid, "result", tool="Edit", args={"file_path": "package.json"}, result="ok")
    gov.observe(tid, "result", tool="Bash", args=_bash("npm test"), result="42 passed")
    resumed = gov.plan("resume", task_id=tid)
    assert resumed["lessons"]
    assert "failed 2x, then succeeded after Edit" in resumed["lessons"][0]
    nxt = gov.plan("start", objective="next task", project_id="shop")
    assert nxt["lessons"] == resumed["lessons"]
    assert "lessons" not in gov.plan("start", objective="elsewhere", project_id="other")


def test_bad_precheck_input(gov: Engine) -> None:
    tid = _task(gov)
    with pytest.raises(InvalidInputError, match="tool is required"):
        gov.precheck(tid, "")
    with pytest.raises(InvalidInputError, match="args"):
        gov.precheck(tid, "Bash", args="rm -rf /")  # type: ignore[arg-type]


def test_two_processes_share_last_good_rules(settings: Settings, project: Path) -> None:
    code = ("import json; from osiris.config import Settings; from osiris.engine import Engine;"
            "e = Engine(Settings.from_env()); t = e.plan('start', objective='o')['task_id'];"
            "print(json.dumps(e.precheck(t, 'Bash', args={'command': 'git push a --force'})))")
    env = dict(os.environ, OSIRIS_ROOTS=str(project), PYTHONPATH=str(REPO))
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, check=True, timeout=120)
    assert json.loads(first.stdout)["verdict"] == "block"
    (project / ".osiris" / "invariants.toml").write_text("this is [not toml")
    second = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, check=True, timeout=120)
    answer = json.loads(second.stdout)
    assert answer["verdict"] == "block"
    assert answer["rules_problems"]
