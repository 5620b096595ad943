"""The context model of each system, on small hand-made sessions."""

from __future__ import annotations

from pathlib import Path

from osiris.core.cost_models import default_cost_models
from osiris.core.tokens import default_counter
from osiris.harness.bench.tokens import break_even, run_matrix
from osiris.harness.replay.profiles import profile
from osiris.harness.replay.turns import ClientNativeSystem, CountingCache, OracleSystem, RawSystem
from osiris.harness.replay.workloads import Need, Session, Step, derive_trace_needs, sweep_needs
from osiris.harness.systems.osiris_engine import NeverPrune, OsirisSystem

COUNTING = CountingCache(default_counter())


def _session(outputs: list[str], needs: list[list[str]]) -> Session:
    steps = [Step(i, "Bash", {"command": f"cmd {i}"}, out) for i, out in enumerate(outputs)]
    for step, texts in zip(steps, needs, strict=True):
        step.needs = [Need(t, len(steps)) for t in texts]
    return Session("t", "test", "You are an agent.", steps, final_text="done")


def test_raw_keeps_everything_and_oracle_only_the_needs() -> None:
    session = _session(["alpha " * 300 + "NEEDLE_ONE", "beta " * 300], [["NEEDLE_ONE"], []])
    raw = RawSystem().replay(session, COUNTING)
    oracle = OracleSystem().replay(session, COUNTING)
    assert raw.needs_found == oracle.needs_found == 1
    assert oracle.prompt_tokens[-1] < raw.prompt_tokens[-1] / 10
    assert len(raw.prompt_tokens) == 3  # one turn per call, one at the end


def test_claude_code_persists_a_big_bash_output_and_the_agent_greps_it() -> None:
    big = "\n".join(f"line {i} filler text" for i in range(5000)) + "\nTARGET_VALUE_42\n"
    session = _session([big], [["TARGET_VALUE_42"]])
    result = ClientNativeSystem().replay(session, COUNTING, profile=profile("claude-code"),
                                         retrieval="exact")
    assert result.needs_found == 1
    assert result.extra_calls == 1
    assert result.prompt_tokens[-1] - result.head_tokens < COUNTING.count(big) / 5


def test_osiris_recalls_what_its_previews_do_not_show(tmp_path: Path) -> None:
    outputs = ["\n".join(f"row {i}: value {i * 7}" for i in range(2000)) + "\nSECRET_SAUCE_77"]
    session = _session(outputs, [["SECRET_SAUCE_77", "row 1000: value 7000"]])
    system = OsirisSystem(tmp_path / "h", policy=NeverPrune())
    result = system.replay(session, COUNTING, retrieval="exact")
    system.close()
    assert result.needs_found == 2
    assert result.extra_calls == 1  # both from one output, one parallel recall
    assert "bystander" not in result.modes  # externalized
    raw = RawSystem().replay(session, COUNTING)
    assert result.prompt_tokens[-1] < raw.prompt_tokens[-1]


def test_net_gains_and_break_even(tmp_path: Path) -> None:
    sessions = [_session(["x " * n], [[]]) for n in (50, 5000)]
    for session, size in zip(sessions, (50, 5000), strict=True):
        session.name, session.size = f"s{size}", size
    rows = run_matrix(sessions, [RawSystem(), OsirisSystem(tmp_path / "h")],
                      models=default_cost_models().models)
    raw_rows = [r for r in rows if r["system"] == "raw"]
    assert all(r["net_gain_final_context_tokens"] == 0 for r in raw_rows)
    osiris = {r["size"]: r for r in rows if r["system"] == "osiris-adaptive"}
    assert osiris[50]["net_gain_final_excluding_fixed"] == 0.0  # bystander: untouched
    assert osiris[5000]["net_gain_final_context_tokens"] > 0.5
    small, large = (osiris[n]["net_gain_final_context_tokens"] for n in (50, 5000))
    # The size where the gain crosses zero, on the line between the two sizes (or the
    # smallest size when OSIRIS already wins there).
    expected = 50.0 if small >= 0 else round(50 + 4950 * -small / (large - small), 1)
    assert break_even(rows) == expected


def test_break_even_is_where_the_gain_crosses_zero() -> None:
    def rows(*points: tuple[int, float]) -> list[dict[str, object]]:
        return [{"system": "osiris-adaptive", "size": size,
                 "net_gain_final_context_tokens": gain} for size, gain in points]

    assert break_even(rows((100, -0.2), (200, 0.2), (400, 0.5))) == 150.0
    assert break_even(rows((400, 0.5), (100, -0.3), (200, -0.1))) == 233.3  # any order
    assert break_even(rows((100, 0.1), (200, 0.3))) == 100.0  # wins from the start
    assert break_even(rows((100, -0.4), (200, -0.1))) is None  # never wins
    assert break_even([]) is None


def test_sweep_needs_come_from_the_middle_and_the_end() -> None:
    payload = "\n".join([f"head_token_{i:03d} common" for i in range(30)]
                        + ["middle_unique_identifier common"] + ["common"] * 30
                        + ["final_unique_identifier common"])
    assert sweep_needs(payload) == ["middle_unique_identifier", "final_unique_identifier"]


def test_trace_needs_are_strings_used_later_and_never_seen_before() -> None:
    steps = [Step(0, "Bash", {"command": "ls src"}, "src/app/MainController.py\nsrc/old.py"),
             Step(1, "Read", {"file_path": "src/app/MainController.py"}, "class Main: pass"),
             Step(2, "Bash", {"command": "grep Main"}, "nothing")]
    derive_trace_needs(steps, task="fix src/old.py", final_text="")
    assert [n.text for n in steps[0].needs] == ["src/app/MainController.py"]
    assert steps[0].needs[0].use_step == 1
    assert steps[1].needs == []
