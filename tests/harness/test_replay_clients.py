"""The honest replay: retrieval with only what the agent can see, each client as it
behaves, OSIRIS with only the routing it has (issue 17)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from osiris.core.tokens import default_counter
from osiris.harness.replay.profiles import profile
from osiris.harness.replay.retrieval import longest_visible, query_for
from osiris.harness.replay.turns import ClientNativeSystem, Context, CountingCache, RawSystem
from osiris.harness.replay.workloads import Need, Session, Step
from osiris.harness.systems.osiris_engine import NeverPrune, OsirisSystem
from tests.conftest import run_cli

COUNTING = CountingCache(default_counter())


def _session(steps: list[Step], needs: dict[int, list[str]], use: int | None = None,
             client: str = "") -> Session:
    for index, texts in needs.items():
        steps[index].needs = [Need(t, len(steps) if use is None else use) for t in texts]
    return Session("t", "test", "You are an agent.", steps, final_text="done", client=client)


def test_longest_visible_substring() -> None:
    assert longest_visible("parse_config_value", "we saw parse_config once") == "parse_config"
    assert longest_visible("abc", "abc") is None  # under four characters
    assert longest_visible("XYZW", "nothing here") is None
    assert longest_visible("src/app/MainController.py", "open src/app/ and Main") == "src/app/"
    assert query_for("NEEDLE", "", "exact") == "NEEDLE"
    assert query_for("NEEDLE", "NEED", "paging") is None
    with pytest.raises(ValueError, match="unknown retrieval model"):
        query_for("x", "x", "oracle")


def _log(lines: int, needle: str, at: int) -> str:
    rows = [f"{i:05d} INFO worker ok" for i in range(lines)]
    rows[at] = f"{at:05d} INFO worker found {needle}"
    return "\n".join(rows)


def test_each_retrieval_model_uses_only_what_it_may(tmp_path: Path) -> None:
    # The agent later needs "checksum_9f3a2b"; its prompt shows "checksum" (its own text),
    # never the whole string.
    need = "checksum_9f3a2b"
    steps = [Step(0, "Bash", {"command": "run"}, _log(3000, need, 2400)),
             Step(1, "Bash", {"command": "next"}, "ok", agent_text="I need the checksum.")]
    found = {}
    for model in ("exact", "visible", "paging"):
        system = OsirisSystem(tmp_path / model, policy=NeverPrune())
        result = system.replay(_session(steps, {0: [need]}), COUNTING, retrieval=model)
        system.close()
        found[model] = (result.needs_found, result.extra_calls)
    assert found["exact"] == (1, 1)      # grep for the string itself: one call
    assert found["visible"][0] == 1      # grep for "checksum" (visible), then it is there
    assert found["visible"][1] == 1
    # Paging from the start: the need sits at line 2,400, past the bound of ten windows.
    assert found["paging"] == (0, 10)


def test_visible_falls_back_to_paging_when_nothing_is_visible(tmp_path: Path) -> None:
    need = "ZQXJ_7731"
    steps = [Step(0, "Bash", {"command": "run"}, _log(600, need, 450)),
             Step(1, "Bash", {"command": "next"}, "ok")]
    system = OsirisSystem(tmp_path / "h", policy=NeverPrune())
    result = system.replay(_session(steps, {0: [need]}), COUNTING, retrieval="visible")
    system.close()
    assert result.needs_found == 1
    assert result.extra_calls >= 3  # pages of 200 lines until line 450


def test_claude_code_shows_a_read_up_to_its_token_cap() -> None:
    # Measured on Claude Code 2.1.328: no line cap, but one Read shows at most 25,000
    # tokens (2,217 of 6,000 lines of prose), then a notice with the next offset.
    numbered = "\n".join(f"{n:>6}\u2192the quick brown fox jumps over lazy dog {n}"
                         for n in range(1, 6001))
    small = "\n".join(numbered.split("\n")[:1500])
    shown = {}

    class Spy(ClientNativeSystem):
        def keep_output(self, step: Step, text: str, ctx: Context):  # type: ignore[no-untyped-def]
            shown[step.i] = text
            return super().keep_output(step, text, ctx)

    steps = [Step(0, "Read", {"file_path": "/w/big.py"}, numbered),
             Step(1, "Read", {"file_path": "/w/small.py"}, small)]
    Spy().replay(_session(steps, {}), COUNTING, profile=profile("claude-code"))
    assert shown[1] == small  # under the cap: whole, however many lines
    lines = shown[0].split("\n")
    assert 1_500 < len(lines) < 6_000 and "Read with offset=" in lines[-1]
    assert COUNTING.count(shown[0]) <= 25_200


def test_codex_cuts_the_middle_of_long_shell_output_and_the_agent_greps_it_back() -> None:
    need = "MIDDLE_MARKER_XYZ"
    out = "\n".join(["head line"] * 1500 + [f"found {need}"] + ["tail line"] * 3000)
    steps = [Step(0, "shell", {"command": "cat log"}, out),
             Step(1, "shell", {"command": "next"}, "ok", agent_text="the MIDDLE_MARKER")]
    session = _session(steps, {0: [need]})
    native = ClientNativeSystem().replay(session, COUNTING, profile=profile("codex"))
    raw = RawSystem().replay(session, COUNTING, profile=profile("codex"))
    assert raw.extra_calls == 0 and raw.needs_found == 1  # raw keeps the whole output
    assert native.needs_found == 1 and native.extra_calls == 1  # cut: grep -n "MIDDLE_MARKER"
    assert native.prompt_tokens[1] < raw.prompt_tokens[1]


def test_claude_code_compacts_every_system_alike() -> None:
    outputs = [f"chunk {i}\n" + ("word " * 12 + "\n") * 2_500 + f"KEY_{i}_END" for i in range(8)]
    steps = [Step(i, "Bash", {"command": f"cat part{i}"}, out) for i, out in enumerate(outputs)]
    session = _session(steps, {0: ["KEY_0_END"]}, use=7)
    result = RawSystem().replay(session, COUNTING, profile=profile("claude-code"),
                                retrieval="exact")
    assert result.compactions >= 1
    assert max(result.prompt_tokens) < 200_000
    assert result.needs_found == 1 and result.extra_calls >= 1  # fetched back after it


def test_osiris_inside_claude_code_changes_no_output(tmp_path: Path) -> None:
    big = "\n".join(f"row {i} " + "x" * 40 for i in range(3000))
    steps = [Step(0, "Read", {"file_path": "/w/a.py"}, big),
             Step(1, "Bash", {"command": "ls"}, "a.py\nb.py")]
    session = _session(steps, {})
    claude = profile("claude-code")
    native = ClientNativeSystem().replay(session, COUNTING, profile=claude)
    system = OsirisSystem(tmp_path / "h")
    inside = system.replay(session, COUNTING, profile=claude)
    loop = system.replay(session, COUNTING, profile=profile("agent-loop"))
    system.close()
    assert inside.modes == {"observed": 2}  # the hooks saw both calls
    # The output reached the model whole: OSIRIS only adds its head and hook texts.
    assert inside.prompt_tokens[-1] >= native.prompt_tokens[-1]
    assert inside.prompt_tokens[-1] - native.prompt_tokens[-1] < 2_000
    assert loop.prompt_tokens[-1] < native.prompt_tokens[-1] / 3  # where it owns the history


def test_osiris_replay_takes_client_and_retrieval(tmp_path: Path) -> None:
    trace = Path("datasets/traces/swe-agent__SWE-agent/pydicom__pydicom-1458.traj").resolve()
    done = run_cli("replay", str(trace), "--json", "--quiet", "--client", "claude-code",
                   "--retrieval", "paging")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["retrieval"] == "paging" and doc["client"] == "claude-code"
    assert doc["sessions"][0]["client"] == "claude-code"
    bad = run_cli("replay", str(trace), "--retrieval", "oracle")
    assert bad.returncode == 2 and "invalid choice" in bad.stderr
