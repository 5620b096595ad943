"""What OSIRIS's hooks can reach in a recorded session: each result counted as many times
as the client re-sent it, up to the next compaction, by what a hook may do with it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from osiris.core.routing import RoutingConfig
from osiris.core.tokens import default_counter
from osiris.harness.importers.records import Compaction, Trace, TraceStep
from osiris.harness.reports import report
from osiris.harness.reports.reach import (
    NO_HOOK,
    NOT_ROUTED,
    ROUTABLE,
    reach,
    reach_of,
    reach_rows,
    render,
)
from tests.conftest import REPO

COUNTER = default_counter()


def _step(i: int, tool: str, output: str, response: int) -> TraceStep:
    return TraceStep(i, tool, {}, output, False, f"call_{i}", response)


def test_a_result_counts_once_per_later_request_until_the_next_compaction() -> None:
    big = "\n".join(f"line {n} of a long build log" for n in range(600))
    small = "Process exited with code 0"
    trace = Trace("rollout.jsonl", "codex-cli", steps=[
        _step(0, "exec_command", big, 0),       # re-sent by requests 1 and 2
        _step(1, "write_stdin", small, 1),      # by request 2
        _step(2, "apply_patch", small, 2),      # by none: the compaction comes first
        _step(3, "exec_command", small, 3),     # by request 4, after the compaction
    ], usage=[{"input_tokens": 1_000}] * 5, compactions=[Compaction(3, None, "")])
    measured = reach(trace, "s", COUNTER)
    big_tokens, small_tokens = COUNTER.count(big), COUNTER.count(small)
    assert big_tokens > RoutingConfig().shell_preview_tokens > small_tokens
    assert measured.requests == 5 and measured.compactions == 1
    assert measured.resent == {ROUTABLE: 2 * big_tokens + small_tokens,
                               NO_HOOK: small_tokens}
    # Only the build log is over Codex's preview threshold.
    assert measured.over_threshold == 2 * big_tokens
    row = measured.row()
    assert row["tool_result_tokens_resent"] == 2 * big_tokens + 2 * small_tokens
    assert row["recorded_input_tokens"] == 5_000
    assert json.loads(row["by_tool"]) == {"exec_command": 2 * big_tokens + small_tokens,
                                          "write_stdin": small_tokens}


def test_a_codex_log_counts_over_its_own_threshold() -> None:
    """Codex routes by size and by the command's kind: a build log from
    ``shell_log_tokens``, a file printed with sed from ``shell_preview_tokens``."""
    config = RoutingConfig()
    log = "\n".join(f"compiled src/module_{n}.ts in {n} ms" for n in range(120))
    tokens = COUNTER.count(log)
    assert config.shell_log_tokens < tokens < config.shell_preview_tokens

    def over(command: str) -> int:
        step = TraceStep(0, "exec_command", {"cmd": command}, log, False, "call_0", 0)
        trace = Trace("rollout.jsonl", "codex-cli", steps=[step],
                      usage=[{"input_tokens": 1_000}] * 2)
        return reach(trace, "s", COUNTER).over_threshold

    assert over("bun run build") == tokens
    assert over("sed -n '1,120p' src/module.ts") == 0


def test_what_each_client_lets_a_hook_change() -> None:
    assert reach_of("codex-cli", "write_stdin") == NO_HOOK
    assert reach_of("codex-cli", "exec_command") == ROUTABLE
    assert reach_of("codex-cli", "apply_patch") == NOT_ROUTED
    assert reach_of("claude-code", "Read") == ROUTABLE
    assert reach_of("claude-code", "Bash") == ROUTABLE
    assert reach_of("claude-code", "mcp__github__get_issue") == ROUTABLE
    assert reach_of("claude-code", "mcp__osiris__osiris_recall") == NOT_ROUTED
    for tool in ("Grep", "Glob", "Edit", "Task", "Agent", "TodoWrite"):
        assert reach_of("claude-code", tool) == NOT_ROUTED
    # Claude Code's PostToolUseFailure may not replace a failed call's output; Codex's
    # PostToolUse replaces a command's output whatever its exit status.
    assert reach_of("claude-code", "Bash", failed=True) == NO_HOOK
    assert reach_of("codex-cli", "exec_command", failed=True) == ROUTABLE


def test_a_failed_claude_code_command_is_out_of_any_hooks_reach_and_of_the_ceiling() -> None:
    log = "\n".join(f"FAIL test_{n} expected {n} got {n + 1}" for n in range(400))
    usage = [{"input_tokens": 1_000, "output_tokens": 10}] * 3
    failed = TraceStep(0, "Bash", {"command": "pytest"}, log, True, "c0", 0)
    passed = TraceStep(0, "Bash", {"command": "pytest"}, log, False, "c0", 0)
    tokens = COUNTER.count(log)
    gone = reach(Trace("s.jsonl", "claude-code", steps=[failed], usage=usage), "s", COUNTER)
    assert gone.resent == {NO_HOOK: 2 * tokens}
    assert gone.removable == 0 and gone.ceiling_saving == 0
    kept = reach(Trace("s.jsonl", "claude-code", steps=[passed], usage=usage), "s", COUNTER)
    assert kept.resent == {ROUTABLE: 2 * tokens} and kept.removable > 0


def test_the_recorded_sessions_are_counted_whole_and_the_table_pools_each_client() -> None:
    rows = reach_rows(REPO / "datasets", COUNTER)
    by_name = {r["session"]: r for r in rows}
    # Every Claude Code and Codex session of the traces and the corpus, named as the
    # real-client tables name them; the agent loops' traces are not clients OSIRIS hooks.
    assert "corpus/codex/agentv-ci-node24" in by_name
    assert "claude-code__tielec-ai-workflow-agent/issue-18/04_implementation/execute" in by_name
    assert not any("swe-agent" in name for name in by_name)
    for row in rows:
        classes = (row["resent_routable"] + row["resent_not_routed"] + row["resent_no_hook"])
        assert classes == row["tool_result_tokens_resent"] > 0
        assert row["resent_routable_over_threshold"] <= row["resent_routable"]
        assert sum(json.loads(row["by_tool"]).values()) == row["tool_result_tokens_resent"]
        if row["client"] == "codex":  # its one tool without a hook
            assert (row["resent_no_hook"] == 0) == ("write_stdin" not in row["by_tool"])
    # The author's ci-node24 session polled its test runs with write_stdin; in Claude
    # Code, failed commands are out of reach (40% of cosmic-applet's routable output).
    assert by_name["corpus/codex/agentv-ci-node24"]["resent_no_hook"] > 0
    applet = by_name["corpus/claude-code/mclaude-cosmic-applet-2.0.76"]
    assert applet["resent_no_hook"] > 0.3 * (applet["resent_no_hook"]
                                             + applet["resent_routable"])
    lines = render(rows)
    pooled = [line for line in lines if line.startswith("| **pooled")]
    assert [line.split(" | ")[1] for line in pooled] == ["claude-code", "codex"]
    section = "\n".join(report.reach_section(rows))
    assert section.startswith("### What a hook can reach in the recorded sessions")
    assert "| corpus/codex/agentv-ci-node24 | codex |" in section
    assert report.reach_section([]) == []


def test_the_docs_say_what_share_each_client_lets_a_hook_reach(tmp_path: Path) -> None:
    import polars as pl

    from osiris.harness.reports.readme_blocks import Reports, _unhooked, block_reach

    assert "not counted" in block_reach(Reports(tmp_path))
    assert _unhooked(Reports(tmp_path)) == ""
    rows = reach_rows(REPO / "datasets", COUNTER)
    (tmp_path / "data").mkdir()
    pl.DataFrame(rows).write_parquet(tmp_path / "data" / "reach.parquet")
    text = block_reach(Reports(tmp_path))
    codex = [r for r in rows if r["client"] == "codex"]
    no_hook = sum(r["resent_no_hook"] for r in codex) / sum(
        r["tool_result_tokens_resent"] for r in codex)
    assert f"{no_hook:.0%} from `write_stdin`" in text
    assert "corpus/codex/agentv-ci-node24" in text
    assert "Claude Code sessions" in text and "Codex sessions" in text
    # The clairvoyant ceiling, pooled over the sessions with a bill per request.
    for client in ("claude-code", "codex"):
        billed = [r for r in rows if r["client"] == client and r["recorded_billed_cost"]]
        ceiling = sum(r["ceiling_billed_saving"] for r in billed) / sum(
            r["recorded_billed_cost"] for r in billed)
        assert f"would have saved at most {ceiling:.1%} of the bill of the {len(billed)}" \
            in text
    # Said where the README gives the savings, too.
    summary = _unhooked(Reports(tmp_path))
    assert f"it is {no_hook:.0%} of the tool output re-sent" in summary
    assert "corpus/codex/agentv-ci-node24" in summary
    # And the clairvoyant ceiling of each client, where the README gives the savings.
    from osiris.harness.reports.readme_blocks import _ceiling

    assert _ceiling(Reports(tmp_path / "none")) == ""
    ceiling = _ceiling(Reports(tmp_path))
    for client, title in (("claude-code", "Claude Code"), ("codex", "Codex")):
        billed = [r for r in rows if r["client"] == client and r["recorded_billed_cost"]]
        share = sum(r["ceiling_billed_saving"] for r in billed) / sum(
            r["recorded_billed_cost"] for r in billed)
        assert f"{share:.1%} of what the {len(billed)} recorded {title} sessions" in ceiling


def test_the_ceiling_keeps_the_lines_the_agent_quoted_later_and_prices_the_rest() -> None:
    """Each request that carried the Read is priced where the Read sat in its prompt: the
    first wrote it to the cache, the second read it, the third found the cache expired
    and paid it whole; the saving is the part a clairvoyant hook leaves out at those
    prices, against the bill of the same usage records."""
    from osiris.core.cost_models import default_cost_models
    from osiris.engine.routing import PREVIEW_FRAME_TOKENS
    from osiris.harness.reports.reach import recorded_cost

    lines = [f"{n:6}→def handler_{n:03d}(value): return value + {n:03d}" for n in range(1, 201)]
    read = "\n".join(lines)
    size = COUNTER.count(read)
    edit_args = {"file_path": "/w/m.py", "old_string": "def handler_017(value): "
                 "return value + 017", "new_string": "def handler_017(value): pass"}
    head = 5_000
    usage = [  # request 0 asks for the Read; 1 carries it first (written), 2 reads it
        {"input_tokens": 10, "cache_creation_input_tokens": head, "output_tokens": 20},
        {"input_tokens": 0, "cache_read_input_tokens": head + 10,
         "cache_creation_input_tokens": size, "output_tokens": 30},
        {"input_tokens": 3, "cache_read_input_tokens": head + 10 + size + 40,
         "cache_creation_input_tokens": 60, "output_tokens": 10},
        # an hour later: nothing cached, the whole prompt billed again
        {"input_tokens": head + 200 + size, "output_tokens": 10}]
    trace = Trace("s.jsonl", "claude-code", steps=[
        TraceStep(0, "Read", {"file_path": "/w/m.py"}, read, False, "c0", 0),
        TraceStep(1, "Edit", edit_args, "The file has been updated.", False, "c1", 1),
    ], usage=usage)
    measured = reach(trace, "s", COUNTER)
    model = default_cost_models().get("anthropic-5m")
    # The Read is re-sent by requests 1, 2 and 3; a clairvoyant hook shows its line 17.
    shown = COUNTER.count(lines[16]) + PREVIEW_FRAME_TOKENS
    assert measured.removable == (size - shown) * 3
    assert measured.ceiling_saving == pytest.approx(
        model.token_cost(size - shown, 1.25 + 0.1 + 1.0))
    assert measured.recorded_cost == recorded_cost(trace, model) == pytest.approx(sum(
        model.token_cost(u.get("input_tokens", 0))
        + model.token_cost(u.get("cache_creation_input_tokens", 0), 1.25)
        + model.token_cost(u.get("cache_read_input_tokens", 0), 0.1)
        + model.output_cost(u["output_tokens"]) for u in usage))
    # Without the records (two requests after the Read, the answer to the Edit's the
    # last), the first carry writes and the later one reads.
    bare = Trace("s.jsonl", "claude-code", steps=trace.steps, usage=[])
    assert reach(bare, "s", COUNTER).ceiling_saving == pytest.approx(
        model.token_cost(size - shown, 1.25 + 0.1))
    row = measured.row()
    assert row["resent_removable_keeping_needs"] == measured.removable
    assert row["ceiling_billed_saving"] == measured.ceiling_saving
    # Codex: input_tokens holds the cached part; a log without usage per request has no
    # bill, and then no ceiling share either.
    codex = Trace("r.jsonl", "codex-cli", steps=[_step(0, "exec_command", read, 0)],
                  usage=[{"input_tokens": 1_000, "cached_input_tokens": 800,
                          "output_tokens": 10}] * 2)
    openai = default_cost_models().get("openai-auto")
    assert recorded_cost(codex, openai) == pytest.approx(2 * (
        openai.token_cost(200) + openai.token_cost(800, 0.1) + openai.output_cost(10)))
    codex.usage = codex.usage[:1] + [{}] * 0
    codex.steps.append(_step(1, "exec_command", "ok", 3))
    assert recorded_cost(codex, openai) is None
    assert reach(codex, "r", COUNTER).row()["ceiling_billed_saving"] is None
