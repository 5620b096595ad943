"""The large-home generator: a small build, checked the way OSIRIS checks a home."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from osiris.config import Settings
from osiris.core.task_state import TaskState
from osiris.engine import Engine
from osiris.engine.audit import audit_task
from osiris.engine.health import collect_health
from osiris.errors import InvalidInputError
from osiris.harness.bench.large_home import build_large_home, verify_large_home
from osiris.store.state import Store
from tests.conftest import home_rows

pytestmark = pytest.mark.slow  # builds a large home

TASKS, EVENTS = 50, 5_000
END_US = 1_790_000_000_000_000


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    home = tmp_path_factory.mktemp("large") / "home"
    stages: list[str] = []
    result = build_large_home(home, TASKS, EVENTS, seed=7, end_us=END_US,
                              template_scale=0.3, handoff_share=0.1,
                              progress=lambda stage, _done, _total: stages.append(stage))
    assert {"templates", "render", "chain", "insert"} <= set(stages)
    return home, result


def test_the_home_has_the_requested_size(built: tuple[Path, dict[str, Any]]) -> None:
    home, result = built
    assert result["counts"]["tasks"] == TASKS
    assert result["counts"]["events"] == EVENTS == result["head_seq"]
    assert home_rows(home, "SELECT count(*), min(seq), max(seq), count(DISTINCT seq) FROM events"
                 ) == [(EVENTS, 1, EVENTS, EVENTS)]
    assert home_rows(home, "SELECT count(*) FROM tasks") == [(TASKS,)]
    assert home_rows(home, "SELECT count(DISTINCT task_id) FROM events") == [(TASKS,)]
    # Every table the engine writes per task is filled, and every blob is on disk.
    for table in ("ledger", "calls", "task_refs", "refs", "tool_results", "failures",
                  "memory", "usage_reports", "handoffs"):
        assert result["counts"][table] > 0, table
    refs = [r for (r,) in home_rows(home, "SELECT ref FROM refs")]
    store = Store(Settings(home=home))
    assert all(store.refs.check(ref).ok for ref in refs)
    store.close()
    # Times fall in the 30 days before END_US, in journal order per task.
    low, high = home_rows(home, "SELECT min(ts_us), max(ts_us) FROM events")[0]
    assert END_US - 30 * 86_400_000_000 <= low < high <= END_US
    assert home_rows(home, "SELECT count(*) FROM (SELECT ts_us < lag(ts_us) OVER (PARTITION BY"
                       " task_id ORDER BY seq) AS back FROM events) WHERE back") == [(0,)]


def test_the_data_covers_what_the_engine_journals(built: tuple[Path, dict[str, Any]]) -> None:
    _home, result = built
    kinds = result["event_kinds"]
    for kind in ("task.start", "task.update", "observe.result", "observe.error",
                 "observe.dropped", "observe.head", "precheck", "recall", "prune.advice",
                 "handoff.create", "handoff.accept"):
        assert kinds.get(kind, 0) > 0, kind
    ledger = result["ledger_kinds"]
    for kind in ("payload.externalize", "payload.inline", "drop_receipt", "usage.provider",
                 "prompt.head"):
        assert ledger[kind]["rows"] > 0, kind
    assert ledger["drop_receipt"]["saved_proven"] > 0
    tasks_with = result["tasks_with"]
    assert tasks_with["drift_verdicts"].get("critical", 0) > 0
    assert tasks_with["precheck_verdicts"].get("block", 0) > 0
    assert tasks_with["loopguard_patterns"].get("repeated_failure", 0) > 0
    assert tasks_with["facts"]["handoff_child"] > 0
    assert tasks_with["facts"]["redacted_payload"] > 0


def test_no_template_value_survives(built: tuple[Path, dict[str, Any]]) -> None:
    home, _ = built
    for needle in ("tmpl-", "t_7e57", "\ue000", "2020-09-1"):
        like = f"%{needle}%"
        assert home_rows(home, "SELECT count(*) FROM events WHERE body LIKE ? OR actor LIKE ?"
                           " OR task_id LIKE ?", [like] * 3) == [(0,)], needle
        assert home_rows(home, "SELECT count(*) FROM tasks WHERE state LIKE ? OR objective LIKE ?"
                           " OR agent_id LIKE ? OR project_id LIKE ?", [like] * 4) == [(0,)]


def test_chain_and_health(built: tuple[Path, dict[str, Any]]) -> None:
    home, result = built
    health = collect_health(Settings(home=home))
    assert health["healthy"], health["problems"]
    assert health["journal"]["chain_ok"]
    assert health["journal"]["head_seq"] == EVENTS
    assert health["journal"]["head_hash"] == result["head_hash"]
    witness = json.loads((home / "journal.witness").read_text())
    assert witness == {"seq": EVENTS, "hash": result["head_hash"]}


def test_states_match_their_hashes_and_the_journal(built: tuple[Path, dict[str, Any]]) -> None:
    home, _ = built
    for task_id, text, digest in home_rows(home, "SELECT task_id, state, state_hash FROM tasks"):
        state = TaskState.from_dict(json.loads(text))
        assert state.task_id == task_id
        assert state.state_hash() == digest  # canonical JSON, hashed as the engine does
        journaled = home_rows(home, "SELECT body->>'state_hash' FROM events WHERE task_id = ? AND"
                                " body LIKE '%\"state_hash\"%' ORDER BY seq DESC LIMIT 1",
                          [task_id])
        assert journaled == [(digest,)]


def test_audit_is_lossless(built: tuple[Path, dict[str, Any]]) -> None:
    home, _ = built
    checked = verify_large_home(home, sample=8, seed=1)
    assert checked["healthy"]
    assert checked["audits"] and all(a["lossless"] for a in checked["audits"].values())
    store = Store(Settings(home=home))
    try:
        children = [t for (t,) in home_rows(home, "SELECT task_id FROM tasks"
                                              " WHERE parent_task_id IS NOT NULL")]
        parents = [t for (t,) in home_rows(home, "SELECT DISTINCT parent_task_id FROM tasks"
                                             " WHERE parent_task_id IS NOT NULL")]
        assert parents and children
        for task in (*parents, *children):
            report = audit_task(store, task)
            assert report.lossless, (task, report.integrity_violations)
    finally:
        store.close()


def test_the_engine_keeps_working_on_the_home(built: tuple[Path, dict[str, Any]],
                                              tmp_path: Path) -> None:
    home = tmp_path / "copy"
    shutil.copytree(built[0], home)
    task_id = home_rows(home, "SELECT task_id FROM tasks WHERE parent_task_id IS NULL"
                          " ORDER BY updated_us DESC LIMIT 1")[0][0]
    with Engine(Settings(home=home)) as engine:
        resumed = engine.plan("resume", task_id=task_id)
        assert resumed["integrity"] == {"state_matches_journal": True}
        observed = engine.observe(task_id, "result", tool="Bash", args={"command": "ls"},
                                  result="README.md\nsrc\ntests\n")
        assert observed["task_id"] == task_id
        fresh = engine.plan("start", objective="Check the large home", steps=["a", "b"])
        engine.observe(fresh["task_id"], "result", tool="Read",
                       args={"file_path": "src/app.py"}, result="print('hi')\n" * 400)
        assert audit_task(engine.store, task_id).lossless
        assert audit_task(engine.store, fresh["task_id"]).lossless
    health = collect_health(Settings(home=home))
    assert health["healthy"], health["problems"]
    assert health["journal"]["head_seq"] > EVENTS


def test_a_home_that_is_not_empty_is_refused(built: tuple[Path, dict[str, Any]]) -> None:
    with pytest.raises(InvalidInputError, match="already holds"):
        build_large_home(built[0], 10, 100)
