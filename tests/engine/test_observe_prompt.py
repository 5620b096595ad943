"""observe(kind="head"|"contract"): volatile tokens, drift and the PrefillPlan."""

from __future__ import annotations

from osiris.engine import Engine

HEAD = ("You are a coding agent. Today's date is 2026-11-30. "
        "Session 8f3c2a1b-9d4e-4f6a-b7c8-1234567890ab.\n" + "Rules: be careful.\n" * 40)


def test_head_is_recorded_with_volatile_tokens_and_a_ref(engine: Engine) -> None:
    tid = engine.plan("start", objective="o")["task_id"]
    answer = engine.observe(tid, "head", result=HEAD)
    assert answer["drift"] == {"verdict": "none"}  # first record: nothing to drift from
    assert answer["ref"].startswith("mem://sha256:")
    assert [v["kind"] for v in answer["volatile"]] == ["date", "uuid"]
    assert answer["volatile"][0]["token_position"] > 0
    assert engine.store.refs.get(answer["ref"]).decode() == HEAD


def test_head_change_is_critical_with_a_full_prefill(engine: Engine) -> None:
    tid = engine.plan("start", objective="o")["task_id"]
    engine.observe(tid, "head", result=HEAD)
    changed = engine.observe(tid, "head", result=HEAD.replace("2026-11-30", "2026-12-01"))
    drift = changed["drift"]
    assert drift["verdict"] == "critical"
    assert drift["prefill"]["zone"] == "head"
    assert drift["prefill"]["from_token"] == 0
    assert drift["prefill"]["tokens"] >= changed["tokens"]
    assert drift["prefill"]["extra_cost_usd"] > 0
    assert "drift=critical" in changed["manifest"]


def test_contract_change_is_minor_drift(engine: Engine) -> None:
    tid = engine.plan("start", objective="o", steps=["a"])["task_id"]
    engine.observe(tid, "contract", result='{"tools": ["Bash", "Read"]}')
    changed = engine.observe(tid, "contract", result='{"tools": ["Bash", "Read", "Edit"]}')
    assert changed["drift"]["verdict"] == "minor"
    assert changed["drift"]["prefill"]["zone"] == "zone_b"


def test_secrets_in_a_head_never_reach_the_store(engine: Engine) -> None:
    tid = engine.plan("start", objective="o")["task_id"]
    key = "AKIA" + "Z" * 16
    answer = engine.observe(tid, "head", result=f"aws key {key} in the prompt")
    assert answer["redacted"] == 1
    assert key.encode() not in engine.store.refs.get(answer["ref"])
