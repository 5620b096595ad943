"""plan start / update / resume / status through the real engine and store."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from osiris.engine import Engine
from osiris.engine.audit import audit_task
from osiris.errors import InvalidInputError, NotFoundError
from tests.conftest import REPO, run_cli


def _start(engine: Engine, **kw: object) -> dict:
    args = {"objective": "fix PowerShell profile bug",
            "steps": ["reproduce", "find cause", "fix", "test"], "active_step": 1,
            "constraints": ["PowerShell 5.1 compatible"], "decisions": ["patch in place"]}
    args.update(kw)
    return engine.plan("start", **args)


def test_start_returns_a_sealed_manifest(engine: Engine) -> None:
    answer = _start(engine, budget={"tokens": 50_000})
    assert answer["task_id"].startswith("t_") and len(answer["task_id"]) == 26
    lines = answer["manifest"].split("\n")
    assert lines[0].startswith(f"OSIRIS/1 task={answer['task_id']} obj=\"fix PowerShell")
    assert "plan=1/4" in lines[0]
    assert lines[1] == "inv=0 files=0 refs=0 dec=1 con=1 budget=ok drift=none"
    assert lines[2] == f"SEAL=sha256:{answer['seal']}"
    assert answer["drift"] == {"verdict": "none"}
    assert answer["plan"] == {"steps": ["reproduce", "find cause", "fix", "test"],
                              "completed": [0], "active": 1, "remaining": [2, 3]}


def test_same_state_same_manifest_and_task_ids_are_unique(engine: Engine) -> None:
    a = _start(engine)
    status = engine.plan("status", task_id=a["task_id"])
    again = engine.plan("status", task_id=a["task_id"])
    assert status["seal"] == a["seal"] == again["seal"]
    assert status["manifest"] == again["manifest"]
    assert _start(engine)["task_id"] != a["task_id"]


def test_update_append_is_normal_growth_and_keeps_the_prefix(engine: Engine) -> None:
    a = _start(engine)
    b = engine.plan("update", task_id=a["task_id"], decisions=["log to ~/profile.log"],
                    constraints=["PowerShell 5.1 compatible"])  # already present: no-op
    assert b["drift"]["verdict"] == "normal_growth"
    assert b["drift"]["prefill"]["tokens"] > 0
    assert b["drift"]["prefill"]["extra_cost_usd"] == 0.0
    assert "dec=2 con=1" in b["manifest"]
    assert b["seal"] != a["seal"]


def test_plan_change_is_minor_drift_with_a_position(engine: Engine) -> None:
    a = _start(engine)
    b = engine.plan("update", task_id=a["task_id"],
                    steps=["reproduce", "find cause", "fix", "test", "document"])
    assert b["drift"]["verdict"] == "minor"
    prefill = b["drift"]["prefill"]
    assert prefill["zone"] == "zone_b"
    assert prefill["from_token"] > 0
    assert b["plan"]["completed"] == [0]


def test_rewrite_of_a_pinned_decision_is_a_semantic_break_and_refused(engine: Engine) -> None:
    a = _start(engine)
    b = engine.plan("update", task_id=a["task_id"],
                    decisions=[{"index": 0, "text": "rewrite the profile from scratch"}])
    assert b["drift"]["verdict"] == "semantic_break"
    assert b["drift"]["semantic_break"] is True
    assert b["drift"]["cause"] == "pinned_rewrite"
    assert b["rejected_rewrites"] == [{"collection": "decisions", "index": 0,
                                       "pinned_text": "patch in place"}]
    resumed = engine.plan("resume", task_id=a["task_id"])
    assert resumed["decisions"] == ["patch in place"]


def test_rewrite_behind_osiris_back_is_detected_and_restored_on_resume(
        engine: Engine, osiris_home: Path) -> None:
    a = _start(engine)
    engine.plan("update", task_id=a["task_id"], decisions=["second decision"])
    with contextlib.ExitStack() as stack:
        if engine.store.db.exclusive:  # the owner holds the file: a write beside the engine
            con = stack.enter_context(engine.store.transaction()).con
        else:  # anyone's: DuckDB's own client, say
            con = stack.enter_context(duckdb.connect(str(osiris_home / "osiris.duckdb")))
        state = json.loads(con.execute("SELECT state FROM tasks WHERE task_id = ?",
                                       [a["task_id"]]).fetchone()[0])
        state["decisions"][0]["text"] = "rewrite everything"
        con.execute("UPDATE tasks SET state = ? WHERE task_id = ?", [json.dumps(state),
                                                                     a["task_id"]])
    resumed = engine.plan("resume", task_id=a["task_id"])
    assert resumed["drift"]["verdict"] == "semantic_break"
    assert resumed["drift"]["cause"] == "pinned_rewrite"
    assert resumed["integrity"] == {"state_matches_journal": False, "pinned_restored": True}
    assert resumed["decisions"] == ["patch in place", "second decision"]
    again = engine.plan("resume", task_id=a["task_id"])
    assert again["integrity"] == {"state_matches_journal": True}
    assert again["drift"]["verdict"] == "none"


def test_stale_and_foreign_seals_are_reported_at_once(engine: Engine) -> None:
    a = _start(engine)
    b = engine.plan("update", task_id=a["task_id"], constraints=["no admin rights"])
    stale = engine.observe(a["task_id"], "action", seal=a["manifest"])
    assert stale["drift"]["verdict"] == "normal_growth"
    assert "out of date" in stale["drift"]["detail"]
    assert stale["manifest"] == engine.plan("status", task_id=a["task_id"])["manifest"]
    current = engine.observe(a["task_id"], "action", seal=f"SEAL=sha256:{b['seal']}")
    assert current["drift"] == {"verdict": "none"}
    assert "manifest" not in current
    foreign = engine.observe(a["task_id"], "action", seal="sha256:" + "ab" * 32)
    assert foreign["drift"]["verdict"] == "critical"
    with pytest.raises(InvalidInputError, match="SEAL=sha256"):
        engine.observe(a["task_id"], "action", seal="not a seal")


def test_status_reports_pressure_measured_declared_unknown(engine: Engine) -> None:
    a = _start(engine)
    engine.observe(a["task_id"], "head", result="You are a coding agent. " * 50,
                   usage={"input_tokens": 1200, "cache_read_input_tokens": 30_000,
                          "cache_creation_input_tokens": 800, "output_tokens": 300})
    status = engine.plan("status", task_id=a["task_id"])
    pressure = status["pressure"]
    assert pressure["declared_tokens"] == 32_000
    assert 0 < pressure["measured_tokens"] < 32_000
    assert pressure["unknown_tokens"] == 32_000 - pressure["measured_tokens"]
    assert pressure["used_tokens"] == 32_000
    assert pressure["window_tokens"] == 200_000
    assert set(pressure["measured_by_source"]) == {"answer", "prompt"}
    assert status["budget_detail"]["source"] == "provider"


def test_provider_usage_is_stored_beside_the_estimate(engine: Engine,
                                                      osiris_home: Path) -> None:
    a = _start(engine)
    answer = engine.observe(a["task_id"], "action",
                            usage={"prompt_tokens": 9000, "completion_tokens": 100,
                                   "prompt_tokens_details": {"cached_tokens": 8192}})
    assert answer["usage"]["prompt_tokens"] == 9000
    assert answer["usage"]["estimated_prompt_tokens"] > 0
    with engine.store.read() as con:
        row = con.execute("SELECT provider, prompt_tokens, cache_read_tokens,"
                          " estimated_prompt_tokens FROM usage_reports").fetchone()
    assert row[:3] == ("openai", 9000, 8192)
    assert row[3] == answer["usage"]["estimated_prompt_tokens"]
    with pytest.raises(InvalidInputError, match="usage"):
        engine.observe(a["task_id"], "action", usage={"input_tokens": -3})


def test_budget_moves_from_ok_to_warn_to_over(engine: Engine) -> None:
    a = _start(engine, budget={"tokens": 10_000})
    tid = a["task_id"]
    assert a["budget"] == "ok"
    warn = engine.observe(tid, "action", usage={"input_tokens": 8500, "output_tokens": 0})
    assert warn["budget"] == "warn"
    over = engine.observe(tid, "action", usage={"input_tokens": 2000, "output_tokens": 0})
    assert over["budget"] == "over"
    assert "budget=over" in engine.plan("status", task_id=tid)["manifest"]


def test_every_change_is_journaled_and_the_task_audits_clean(engine: Engine) -> None:
    a = _start(engine)
    tid = a["task_id"]
    engine.plan("update", task_id=tid, decisions=["d2"], active_step=2)
    engine.observe(tid, "contract", result='{"tools": [{"name": "Bash"}]}')
    engine.plan("resume", task_id=tid)
    with engine.store.read() as con:
        kinds = [r[0] for r in con.execute(
            "SELECT kind FROM events WHERE task_id = ? ORDER BY seq", [tid]).fetchall()]
        answers = con.execute("SELECT count(*), sum(overhead_tokens) FROM ledger"
                              " WHERE task_id = ? AND kind LIKE 'answer.%'",
                              [tid]).fetchone()
    assert kinds == ["task.start", "task.update", "observe.contract", "task.resume"]
    assert answers[0] == 4 and answers[1] > 0
    report = audit_task(engine.store, tid)
    assert report.lossless, report.integrity_violations
    assert report.items_externalized == 1


def test_bad_input_is_a_clear_error(engine: Engine) -> None:
    with pytest.raises(InvalidInputError, match="objective"):
        engine.plan("start", objective="   ")
    with pytest.raises(InvalidInputError, match="unknown plan mode"):
        engine.plan("explode", task_id="t_1")
    with pytest.raises(NotFoundError, match="does not exist"):
        engine.plan("status", task_id="t_doesnotexist")
    a = _start(engine)
    with pytest.raises(InvalidInputError, match="active_step"):
        engine.plan("update", task_id=a["task_id"], active_step=99)
    with pytest.raises(InvalidInputError, match="budget"):
        engine.plan("update", task_id=a["task_id"], budget={"tokens": "lots"})
    with pytest.raises(InvalidInputError, match="task id"):
        engine.plan("status", task_id="../../etc/passwd")


_WRITER = """
import json, sys
from osiris.config import Settings
from osiris.engine import Engine
engine = Engine(Settings.from_env())
a = engine.plan("start", objective="survive a restart", steps=["one", "two", "three"],
                active_step=1, constraints=["c1"], decisions=["d1", "d2"])
engine.plan("update", task_id=a["task_id"], decisions=["d3"])
b = engine.plan("status", task_id=a["task_id"])
print(json.dumps({"task_id": a["task_id"], "manifest": b["manifest"], "seal": b["seal"]}))
"""


def test_resume_after_a_real_process_restart(osiris_home: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, "-c", _WRITER], capture_output=True, text=True,
                         env=env, check=True, timeout=120)
    first = json.loads(out.stdout)
    resumed = subprocess.run(
        [sys.executable, "-c", "import json; from osiris.config import Settings; "
         "from osiris.engine import Engine; e = Engine(Settings.from_env()); "
         f"print(json.dumps(e.plan('resume', task_id={first['task_id']!r})))"],
        capture_output=True, text=True, env=env, check=True, timeout=120)
    answer = json.loads(resumed.stdout)
    assert answer["seal"] == first["seal"]
    assert answer["manifest"] == first["manifest"]
    assert answer["decisions"] == ["d1", "d2", "d3"]
    assert answer["constraints"] == ["c1"]
    assert answer["objective"] == "survive a restart"
    assert answer["integrity"] == {"state_matches_journal": True}
    assert run_cli("audit", "--task", first["task_id"]).returncode == 0
