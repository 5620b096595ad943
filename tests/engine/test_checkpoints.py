"""Checkpoints: snapshots deduplicated, compaction reversible byte for byte, reports."""

from __future__ import annotations

import json

import pytest

from osiris.engine import Engine
from osiris.engine.audit import audit_task
from osiris.errors import InvalidInputError, NotFoundError
from osiris.harness.importers.traces import find_traces, load_trace
from tests.conftest import TRACES


def _session(engine: Engine, count: int = 8) -> tuple[str, dict[str, str]]:
    """A task with real outputs observed; returns the id and ref -> original text."""
    tid = engine.plan("start", objective="compaction round trip", steps=["a", "b"],
                      active_step=0, decisions=["keep everything"])["task_id"]
    originals: dict[str, str] = {}
    steps = [s for p in find_traces(TRACES)[:4] for s in load_trace(p).steps
             if len(s.output) > 200]
    for step in steps[:count]:
        answer = engine.observe(tid, "result", tool=step.tool, args=step.args,
                                result=step.output)
        originals[answer["ref"]] = engine.store.refs.get(answer["ref"]).decode()
    return tid, originals


def _restore_all(engine: Engine, tid: str, checkpoint_id: str, max_tokens: int,
                 ) -> dict[str, str]:
    restored: dict[str, str] = {}
    args: dict = {"checkpoint_id": checkpoint_id}
    pages = 0
    while True:
        page = engine.checkpoint(tid, "restore", max_tokens=max_tokens, **args)
        pages += 1
        for piece in page["items"]:
            restored[piece["ref"]] = restored.get(piece["ref"], "") + piece["text"]
        if not page["truncated"]:
            break
        args = page["next"]
        assert pages < 10_000
    return restored


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["trim", "compact", "clear"])
def test_every_compaction_mode_round_trips_exact_bytes(engine: Engine, mode: str) -> None:
    tid, originals = _session(engine)
    answer = engine.checkpoint(tid, mode)
    assert answer["checkpoint_id"].startswith("c_")
    assert answer["summary"].startswith("OSIRIS/1 task=")
    if mode == "trim":
        assert 0 < answer["leaving"] < len(originals)
    else:
        assert answer["leaving"] == len(originals)
    restored = _restore_all(engine, tid, answer["checkpoint_id"], max_tokens=700)
    assert len(restored) == answer["leaving"]
    for ref, text in restored.items():
        assert text == originals[ref]
    receipt = engine.observe(tid, "dropped", result=answer["checkpoint_id"])
    assert receipt["dropped"] == answer["leaving"]
    assert audit_task(engine.store, tid).lossless


def test_snapshot_round_trip_and_dedup(engine: Engine) -> None:
    tid, _ = _session(engine, 3)
    first = engine.checkpoint(tid, "snapshot")
    second = engine.checkpoint(tid, "snapshot")
    assert first["bytes_new"] > 0
    # Between the two only ledger-derived counts moved (the budget part and the index):
    # every other part is shared, not written again.
    parts = [json.loads(engine.store.refs.get(s["state_ref"]))["parts"] for s in (first, second)]
    shared = {name for name in parts[0] if parts[0][name] == parts[1][name]}
    assert shared >= {"constraints", "decisions", "plan", "files", "tool_results", "seals",
                      "zones", "flags"}
    assert second["bytes_new"] < first["bytes_new"]
    engine.plan("update", task_id=tid, decisions=["one more"])
    third = engine.checkpoint(tid, "snapshot")
    assert third["bytes_new"] < third["bytes_total"]
    restored = _restore_all(engine, tid, first["checkpoint_id"], max_tokens=100_000)
    assert list(restored) == [first["state_ref"]]
    resumed = engine.checkpoint(tid, "resume", checkpoint_id=first["checkpoint_id"])
    assert resumed["decisions"] == ["keep everything"]
    assert resumed["manifest"].startswith("OSIRIS/1")
    assert "one more" in engine.checkpoint(tid, "resume",
                                           checkpoint_id=third["checkpoint_id"])["decisions"]


def test_report_summarises_the_task(engine: Engine) -> None:
    tid, originals = _session(engine, 4)
    report = engine.checkpoint(tid, "report")
    assert report["objective"] == "compaction round trip"
    assert report["progress"] == "0/2"
    assert report["decisions"] == ["keep everything"]
    # The report's ledger figures are the task's ledger rows, summed: what the observes
    # booked (each externalized payload claims what its preview saved).
    with engine.store.read() as con:
        rows = con.execute(
            "SELECT kind, tokens, saved_claimed, saved_proven FROM ledger WHERE task_id = ?",
            [tid]).fetchall()
    ledger = report["ledger"]
    assert ledger["tokens_externalized"] == sum(t for k, t, _, _ in rows
                                                if k == "payload.externalize") > 0
    assert ledger["saved_claimed"] == sum(c or 0 for _, _, c, _ in rows) > 0
    assert ledger["saved_proven"] == sum(p or 0 for _, _, _, p in rows)
    assert report["audit"]["lossless"] is True
    assert report["audit"]["items_verified"] >= len(originals)


def test_bad_checkpoint_calls(engine: Engine) -> None:
    tid, _ = _session(engine, 1)
    with pytest.raises(InvalidInputError, match="unknown checkpoint mode"):
        engine.checkpoint(tid, "explode")
    with pytest.raises(InvalidInputError, match="checkpoint_id"):
        engine.checkpoint(tid, "restore")
    with pytest.raises(NotFoundError):
        engine.checkpoint(tid, "restore", checkpoint_id="c_0000")
    other = engine.plan("start", objective="other")["task_id"]
    snap = engine.checkpoint(tid, "snapshot")
    with pytest.raises(NotFoundError):
        engine.checkpoint(other, "resume", checkpoint_id=snap["checkpoint_id"])
