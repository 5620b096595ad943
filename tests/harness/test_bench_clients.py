"""The real-client benchmark: what Claude Code and Codex send the model, with and without
OSIRIS, and ``osiris bench clients`` end to end.

The short script is the issue's: one large read, one large shell output, one small call,
played by the scripted model inside the real binary (``.ci/install-node-tools``), bare
and with OSIRIS installed by ``osiris install``. Without the binaries the tests skip,
unless TEST_REQUIRE_NODE_TOOLS=1 (CI), where they fail.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from osiris.harness.real_clients import tables
from osiris.harness.real_clients.configs import BARE, OSIRIS, install
from osiris.harness.real_clients.model_script import (
    ANTHROPIC,
    FinalText,
    ModelRequest,
    ScriptedTurns,
    ToolCall,
    prompt_text,
    results_by_id,
)
from osiris.harness.real_clients.model_server import ModelServer
from osiris.harness.real_clients.run import CLAUDE_CODE, CODEX, Workspace, run_client
from osiris.harness.real_clients.sessions import measure, segments
from osiris.harness.real_clients.trace_plan import PathMap, plan
from osiris.harness.real_clients.trace_script import TraceScript
from osiris.harness.real_clients.workspaces import manifest, tarball_for, unpack
from osiris.harness.replay.workloads import Need, Session, Step
from osiris.server.definitions import OUTPUT_SCHEMAS
from tests.conftest import REPO
from tests.harness.real_clients import TOOLS, require_client

pytestmark = pytest.mark.slow  # real Claude Code and Codex sessions

BIG_LINES = 1200
"""About 17,000 cl100k tokens: under Claude Code's 25,000-token Read cap, far over Codex's cut."""
_REMINDER = re.compile(r"\n*<system-reminder>.*?</system-reminder>\n*", re.DOTALL)


def _big_file(project: Path) -> Path:
    path = project / "big.txt"
    path.write_text("".join(f"line {i:05d} of the large file the agent reads\n"
                            for i in range(1, BIG_LINES + 1)), encoding="utf-8")
    return path


def _script(client: str, big: Path) -> list[ToolCall]:
    large_shell = "seq 1 40000"
    small = "printf 'osiris-%s\\n' $((6 * 7))"
    if client == CLAUDE_CODE:
        return [ToolCall("Read", {"file_path": str(big)}, "toolu_read"),
                ToolCall("Bash", {"command": large_shell, "description": "numbers"},
                         "toolu_large"),
                ToolCall("Bash", {"command": small, "description": "answer"}, "toolu_small")]
    return [ToolCall("exec_command", {"cmd": f"cat {big}"}, "call_read"),
            ToolCall("exec_command", {"cmd": large_shell}, "call_large"),
            ToolCall("exec_command", {"cmd": small}, "call_small")]


def _what_reached_the_model(client: str, configuration: str, root: Path
                            ) -> tuple[dict[str, str], list[ModelRequest]]:
    workspace = Workspace(root / configuration).reset(client)
    big = _big_file(workspace.project)
    installed = install(configuration, client, workspace, TOOLS)
    calls = _script(client, big)
    model = ("--model", "claude-sonnet-4-5-20250929") if client == CLAUDE_CODE else (
        "-m", "gpt-5-codex")
    with ModelServer(ScriptedTurns([*calls, FinalText("Done.")])) as server:
        run = run_client(client, server, workspace, "read, list and answer", tools=TOOLS,
                         timeout_s=180, extra_args=(*installed.extra_args, *model))
    assert run.returncode == 0, run.describe()
    last = run.prompts[-1]
    results = {cid: text for cid, (text, _) in results_by_id(last).items()}
    assert set(results) == {c.call_id for c in calls}
    return results, run.prompts


@pytest.mark.parametrize("client", [CLAUDE_CODE, CODEX])
def test_installing_changes_exactly_the_large_outputs(
        client: str, tmp_path: Path) -> None:
    """With OSIRIS installed, the large read and the large shell output reach the model as
    a window or a preview with its ref; the small output is the bare client's."""
    require_client(client)
    bare, bare_prompts = _what_reached_the_model(client, BARE, tmp_path)
    with_osiris, osiris_prompts = _what_reached_the_model(client, OSIRIS, tmp_path)
    read, large, small = (c.call_id for c in _script(client, Path("x")))
    last = f"line {BIG_LINES:05d} of the large file"
    if client == CLAUDE_CODE:
        # Read: every line of a file under its 25,000-token cap, numbered.
        assert "line 00001 of the large file" in bare[read] and last in bare[read]
        # Bash: an output over its persist threshold becomes a preview and a path.
        assert "<persisted-output>" in bare[large]
        assert "40000" not in bare[large]
        assert _REMINDER.sub("", bare[small]).strip() == "osiris-42"
        # With OSIRIS: under the 25,000-token threshold the read passes whole (windows of
        # larger files: tests/harness/test_routing_real_clients.py).
        assert _REMINDER.sub("", with_osiris[read]).rstrip() == \
            _REMINDER.sub("", bare[read]).rstrip()
    else:
        # Codex cuts a shell output over ~10,000 bytes to its head and tail.
        assert "line 00001 of the large file" in bare[read]
        assert "chars truncated" in bare[read] or "tokens truncated" in bare[read]
        assert "line 00600 of the large file" not in bare[read]
        assert bare[small].endswith("Output:\nosiris-42\n")
        # With OSIRIS: a preview with the ref of the whole file (under the 64 KiB Codex
        # keeps in its record of a command), no cut by Codex.
        assert with_osiris[read].startswith("Process exited with code 0\n")
        assert f"whole output ({BIG_LINES:,} lines" in with_osiris[read]
        assert "truncated" not in with_osiris[read]
    if client == CLAUDE_CODE:  # the whole output, from the file Claude Code persisted
        assert "[osiris: whole output (40,000 lines" in with_osiris[large]
    else:  # past 64 KiB Codex itself kept its head and tail only, and OSIRIS says so
        assert with_osiris[large].startswith("Process exited with code 0\n")
        assert "[osiris: output as the client kept it, its middle cut (" in with_osiris[large]
    assert "40000" in with_osiris[large]  # the preview shows the tail
    assert len(with_osiris[large]) < 3_000
    assert _REMINDER.sub("", with_osiris[small]).strip().endswith("osiris-42")
    assert len(_REMINDER.sub("", with_osiris[small])) == len(_REMINDER.sub("", bare[small])) \
        or client == CODEX  # Codex's header carries a wall time
    # OSIRIS's own share: its MCP server's tools and instructions in the first prompt.
    first_bare = json.dumps(bare_prompts[0].body)
    first_osiris = json.dumps(osiris_prompts[0].body)
    assert "osiris" not in first_bare.lower().replace("osiris-42", "")
    assert "osiris_recall" in first_osiris
    assert len(first_osiris) > len(first_bare)
    # The tools publish an outputSchema; the client never puts it in front of the model
    # (it costs no prompt tokens): no field description of any answer record is there.
    described = {json.dumps(spec["description"])[1:-1]
                 for schema in OUTPUT_SCHEMAS.values()
                 for record in schema["$defs"].values()
                 for spec in record.get("properties", {}).values()}
    assert described and not [d for d in described if d in first_osiris]
    assert "outputSchema" not in first_osiris and "output_schema" not in first_osiris


def _tiny_session(project: Path) -> Session:
    (project / "notes.txt").write_text("alpha\nthe_anchor_value = 42\nomega\n",
                                       encoding="utf-8")
    steps = [Step(0, "Read", {"file_path": "/orig/notes.txt"}, "the_anchor_value = 42"),
             Step(1, "Bash", {"command": "echo one"}, "one"),
             Step(2, "WebFetch", {"url": "https://example.invalid"}, ""),
             Step(3, "Bash", {"command": "echo done"}, "done")]
    steps[0].needs = [Need("the_anchor_value", 3, "identifier"),
                      Need("not_in_this_workspace", 3, "identifier")]
    return Session("tiny", "traces", "", steps, client="claude-code")


TOOLS_OFFERED = [{"name": "Read"}, {"name": "Grep"}, {"name": "Bash"}]


def _ask(script: TraceScript, messages: list[dict[str, Any]]) -> Any:
    return script.reply(ModelRequest(0, ANTHROPIC, "/v1/messages",
                                     {"tools": TOOLS_OFFERED, "messages": messages}))


def _answered(call: ToolCall, result: str) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": [{"type": "tool_use", "id": call.call_id,
                                               "name": call.name, "input": call.input}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.call_id,
                                          "content": result}]}]


def _script_for(tmp_path: Path) -> tuple[TraceScript, Path]:
    project = tmp_path / "project"
    project.mkdir()
    session = _tiny_session(project)
    paths = PathMap("/orig", project, tmp_path / "tmp")
    return TraceScript(CLAUDE_CODE, plan(session, CLAUDE_CODE, paths), session, paths), project


def test_the_trace_script_keeps_skips_and_classifies_needs(tmp_path: Path) -> None:
    """The script alone, answering prompts a client would send (no binary needed)."""
    script, project = _script_for(tmp_path)
    assert script.calls[0].input == {"file_path": f"{project}/notes.txt"}
    assert script.calls[2].skip == "needs the network"
    history: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    read = _ask(script, history)
    assert isinstance(read, ToolCall) and read.name == "Read"
    history += _answered(read, "1\talpha\n2\tthe_anchor_value = 42")
    one = _ask(script, history)
    assert isinstance(one, ToolCall) and one.input == {"command": "echo one"}
    history += _answered(one, "one")
    done = _ask(script, history)
    # The WebFetch is skipped; the last Bash needs the anchor, which the prompt shows.
    assert isinstance(done, ToolCall) and done.input == {"command": "echo done"}
    assert [s.outcome for s in script.needs] == ["kept", "absent"]
    assert [e["kind"] for e in script.events] == ["trace", "trace", "skipped", "trace"]
    # A side query (no tools offered) never advances the script.
    assert script.reply(ModelRequest(0, ANTHROPIC, "/v1/messages", {"messages": history})
                        ) == FinalText("OK")


def _grep_after_compaction(script: TraceScript, read_result: str, summary: str
                           ) -> tuple[ToolCall, list[dict[str, Any]]]:
    """The Read answered, then the client compacted (the summary replaces the history):
    the retrieval the script asks for next, and the compacted history."""
    history: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    read = _ask(script, history)
    history += _answered(read, read_result)
    one = _ask(script, history)
    compacted = [{"role": "user", "content": summary}, *_answered(one, "one")]
    grep = _ask(script, compacted)
    assert isinstance(grep, ToolCall) and grep.name == "Grep"
    return grep, compacted


def test_a_need_the_prompt_lost_is_retrieved_with_the_clients_own_grep(
        tmp_path: Path) -> None:
    script, project = _script_for(tmp_path)
    # The client compacted: the Read's result is gone; the summary says "anchor".
    grep, compacted = _grep_after_compaction(script, "the_anchor_value = 42",
                                             "Summary: look for the anchor value.")
    assert grep.input["pattern"] == "anchor"  # the longest part the prompt shows
    assert grep.input["path"] == f"{project}/notes.txt"
    after = _ask(script, compacted + _answered(grep, "2:the_anchor_value = 42"))
    assert isinstance(after, ToolCall) and after.input == {"command": "echo done"}
    assert script.needs[0].outcome == "retrieved" and script.needs[0].calls == 1
    assert [e["kind"] for e in script.events] == ["trace", "trace", "skipped", "retrieval",
                                                  "trace"]


def test_needs_of_one_output_due_together_are_searched_in_one_call(tmp_path: Path) -> None:
    """As the replay does: the needs of one source due at one call are one search, the
    queries (each by the visible rule) joined; both come back from it."""
    project = tmp_path / "project"
    project.mkdir()
    session = _tiny_session(project)
    (project / "notes.txt").write_text(
        "alpha\nthe_anchor_value = 42\nthe_other_value = 7\nomega\n", encoding="utf-8")
    session.steps[0].output = "the_anchor_value = 42\nthe_other_value = 7"
    session.steps[0].needs = [Need("the_anchor_value", 3, "identifier"),
                              Need("the_other_value", 3, "identifier")]
    paths = PathMap("/orig", project, tmp_path / "tmp")
    script = TraceScript(CLAUDE_CODE, plan(session, CLAUDE_CODE, paths), session, paths)
    grep, compacted = _grep_after_compaction(
        script, "the_anchor_value = 42\nthe_other_value = 7",
        "Summary: the anchor value; the other value.")
    assert grep.input["pattern"] == "anchor|other"
    after = _ask(script, compacted + _answered(
        grep, "2:the_anchor_value = 42\n3:the_other_value = 7"))
    assert isinstance(after, ToolCall) and after.input == {"command": "echo done"}
    assert [s.outcome for s in script.needs] == ["retrieved", "retrieved"]
    assert [e["kind"] for e in script.events].count("retrieval") == 1


def test_segments_carry_the_clients_cache_breakpoints() -> None:
    body = {"system": [{"type": "text", "text": "a"},
                       {"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}}],
            "tools": [{"name": "Read"}],
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}]}
    assert [mark for _, mark in segments(body, ANTHROPIC)] == [False, True, False, True]


def test_workspaces_match_their_manifest_and_unpack_into_a_git_repo(tmp_path: Path) -> None:
    workspaces = REPO / "datasets" / "workspaces"
    assert len(manifest(workspaces)) == 6
    rel = "claude-code__tielec-ai-workflow-agent/issue-18/04_implementation/execute/x.txt"
    tarball = tarball_for(rel, workspaces)
    assert tarball is not None
    project = tmp_path / "project"
    project.mkdir()
    unpack(tarball, project)
    assert (project / "package.json").exists()
    status = subprocess.run(["git", "status", "--porcelain"], cwd=project, text=True,
                            capture_output=True, check=True)
    assert status.stdout == ""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=project, text=True,
                          capture_output=True, check=True).stdout
    again = tmp_path / "again"
    again.mkdir()
    unpack(tarball, again)
    assert subprocess.run(["git", "rev-parse", "HEAD"], cwd=again, text=True,
                          capture_output=True, check=True).stdout == head


def test_osiris_bench_clients_quick_writes_its_tables(tmp_path: Path) -> None:
    """The CLI stage on its one short Codex trace, every configuration."""
    require_client(CODEX)
    out = tmp_path / "reports"
    done = subprocess.run([sys.executable, "-m", "osiris", "bench", "clients", "--quick",
                           "--repo", str(REPO), "--out", str(out)],
                          capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = pl.read_parquet(out / "data" / "clients_sessions.parquet").to_dicts()
    by_config = {r["configuration"]: r for r in rows}
    # Codex has no Read: osiris-read and osiris-shell would be osiris again.
    assert set(by_config) == {"bare", "osiris", "osiris-observe", "context-mode"}
    bare = by_config["bare"]
    assert bare["status"] == "ok" and bare["client"] == CODEX
    assert bare["trace_calls"] == 19 and bare["skipped_calls"] == 1  # apply_patch
    assert bare["net_gain_cumulative_input_tokens"] == 0.0
    # OSIRIS adds its tool definitions to every prompt; with its hooks only watching it
    # changes no output, with its routing the large shell outputs become previews.
    observe, osiris = by_config["osiris-observe"], by_config["osiris"]
    assert osiris["first_prompt_tokens"] > bare["first_prompt_tokens"]
    assert observe["tool_result_tokens"] == bare["tool_result_tokens"]
    assert osiris["tool_result_tokens"] < bare["tool_result_tokens"] / 2
    assert osiris["needs_kept"] + osiris["needs_retrieved"] == osiris["needs_total"]
    turns = pl.read_parquet(out / "data" / "clients_turns.parquet")
    assert turns.filter(pl.col("configuration") == "bare").height == bare["requests"]
    # The mini-swe-agent profile ran beside it (its one short trajectory), or says why not.
    looped = pl.read_parquet(out / "data" / "mini_sessions.parquet").to_dicts()
    assert sorted(r["configuration"] for r in looped) == ["bare", "osiris"]
    assert all(r["status"] == "ok" or r["status"].startswith("not installed:")
               for r in looped), looped


def test_measure_counts_every_request_of_a_run(tmp_path: Path) -> None:
    require_client(CODEX)
    workspace = Workspace(tmp_path / "cx").reset(CODEX)
    project = workspace.project
    session = _tiny_session(project)
    session.steps[0] = Step(0, "shell", {"command": "cat notes.txt"}, "the_anchor_value = 42",
                            needs=session.steps[0].needs)
    session.steps[1] = Step(1, "shell", {"command": "echo one"}, "one")
    session.steps[3] = Step(3, "shell", {"command": "echo done"}, "done")
    paths = PathMap(None, project, workspace.tmp)
    script = TraceScript(CODEX, plan(session, CODEX, paths), session, paths)
    with ModelServer(script) as server:
        run = run_client(CODEX, server, workspace, "go", tools=TOOLS, timeout_s=120,
                         extra_args=("-m", "gpt-5-codex"))
    assert run.returncode == 0, run.describe()
    from osiris.core.cost_models import default_cost_models
    from osiris.core.tokens import default_counter
    from osiris.harness.real_clients.sessions import _Counts, neutraliser

    counts = _Counts(default_counter(), neutraliser(workspace, REPO))
    turns, row = measure(run, script, "go", counts, default_cost_models().models)
    assert row["requests"] == len(run.prompts) == 4
    assert row["trace_calls"] == 3 and row["skipped_calls"] == 1
    assert row["needs_kept"] == 1 and row["needs_absent"] == 1
    assert [t["gap_ms"] is not None for t in turns] == [False, True, True, True]
    # What the model wrote is billed: three calls' inputs and the final text.
    assert [t["output_tokens"] > 0 for t in turns] == [True] * 4
    assert row["output_tokens"] == sum(t["output_tokens"] for t in turns)
    models = default_cost_models().models
    unwritten = [dataclasses.replace(m, output_usd_per_mtok=0.0) for m in models]
    _, inputs_only = measure(run, script, "go", counts, unwritten)
    for model in models:
        assert model.output_usd_per_mtok > 0
        assert row[f"billed_cost_{model.name}"] == pytest.approx(
            inputs_only[f"billed_cost_{model.name}"]
            + model.output_cost(row["output_tokens"]), abs=1e-8)


def test_the_clients_section_leads_the_report_and_is_replaced_in_place() -> None:
    from osiris.harness.reports import report

    text = "# OSIRIS benchmark\n\n<!-- run -->\nRun x.\n<!-- /run -->\n\nReproduce with …\n"
    first = report.with_clients_section(text, "## Inside the real clients\n\nold\n")
    assert first.index("old") < first.index("Reproduce with")
    assert "## The replay" in first
    second = report.with_clients_section(first, "## Inside the real clients\n\nnew\n")
    assert "old" not in second and second.count(report.CLIENTS_START) == 1
    assert second.replace("new", "old") == first


def _counting_session(project: Path, calls: int) -> Session:
    """``calls`` shell outputs of about 9,000 tokens each: the prompt grows past a small
    window within a few turns."""
    steps = [Step(i, "Bash", {"command": f"seq 100000 103000 # {i}",
                              "description": "numbers"}, "") for i in range(calls)]
    return Session("counting", "traces", "", steps, client=CLAUDE_CODE)


def _play_counting(workspace: Workspace, *, server_window: int,
                   env: dict[str, str]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    from osiris.core.cost_models import default_cost_models
    from osiris.core.tokens import default_counter
    from osiris.harness.real_clients.sessions import MODEL_OF_CLIENT, _Counts, neutraliser

    session = _counting_session(workspace.project, 10)
    paths = PathMap(None, workspace.project, workspace.tmp)
    script = TraceScript(CLAUDE_CODE, plan(session, CLAUDE_CODE, paths), session, paths,
                         summaries=["Summary: the numbers were listed."] * 5)
    with ModelServer(script, context_window=server_window) as server:
        run = run_client(CLAUDE_CODE, server, workspace, "list the numbers", tools=TOOLS,
                         timeout_s=180, extra_env=env,
                         extra_args=("--model", MODEL_OF_CLIENT[CLAUDE_CODE]))
    assert run.returncode == 0, run.describe()
    counts = _Counts(default_counter(), neutraliser(workspace, REPO))
    return measure(run, script, "list the numbers", counts, default_cost_models().models)


def test_claude_code_told_the_window_compacts_before_the_refusal(tmp_path: Path) -> None:
    """With CLAUDE_CODE_AUTO_COMPACT_WINDOW (100,000: its minimum; it compacts near
    67,000) Claude Code compacts on its own, and the server's refusal at 200,000 never
    fires; the compaction request is billed like any other. Not told, it runs into a
    refusal at 100,000 and compacts only then: the row says it needed the refusal."""
    from osiris.harness.real_clients.sessions import compaction_env

    require_client(CLAUDE_CODE)
    told = Workspace(tmp_path / "told").reset(CLAUDE_CODE)
    turns, row = _play_counting(told, server_window=200_000,
                                env=compaction_env(CLAUDE_CODE, 100_000))
    assert row["compactions"] >= 1 and row["reactive_compactions"] == 0
    assert row["refused_requests"] == 0 and row["needed_refusal"] is False
    assert row["trace_calls"] == 10 and row["unanswered_calls"] == 0
    compacting = [t for t in turns if t["kind"] == "compaction"]
    assert len(compacting) == row["compactions"] == row["compaction_requests"]
    assert all(t["prompt_tokens"] > 60_000 for t in compacting)
    # Every turn, the compaction's included, is counted and billed (one prompt each).
    assert row["cumulative_input_tokens"] == sum(t["prompt_tokens"] for t in turns)

    blind = Workspace(tmp_path / "blind").reset(CLAUDE_CODE)
    _turns, row = _play_counting(blind, server_window=100_000, env={})
    assert row["compactions"] == 0 and row["reactive_compactions"] >= 1
    assert row["refused_requests"] >= 1 and row["needed_refusal"] is True


def test_codex_compacts_on_its_own_and_the_script_answers_with_a_summary(
        tmp_path: Path) -> None:
    """Codex knows its model's window (here made small) and compacts before any refusal,
    asking with its own prompt and no tools: the script answers with the trace's summary
    and the row counts a compaction, not a side query."""
    from osiris.core.cost_models import default_cost_models
    from osiris.core.tokens import default_counter
    from osiris.harness.real_clients.sessions import _Counts, neutraliser

    require_client(CODEX)
    workspace = Workspace(tmp_path / "cx").reset(CODEX)
    steps = [Step(i, "shell", {"command": f"seq 100000 103000 # {i}"}, "") for i in range(9)]
    session = Session("counting", "traces", "", steps, client=CODEX)
    paths = PathMap(None, workspace.project, workspace.tmp)
    script = TraceScript(CODEX, plan(session, CODEX, paths), session, paths,
                         summaries=["Summary: the numbers were listed."] * 5)
    with ModelServer(script, context_window=272_000) as server:
        run = run_client(CODEX, server, workspace, "list the numbers", tools=TOOLS,
                         timeout_s=180, extra_args=("-m", "gpt-5-codex", "-c",
                                                    "model_context_window=40000"))
    assert run.returncode == 0, run.describe()
    counts = _Counts(default_counter(), neutraliser(workspace, REPO))
    _turns, row = measure(run, script, "list the numbers", counts,
                         default_cost_models().models)
    assert row["compactions"] >= 1 and row["refused_requests"] == 0
    assert row["compaction_requests"] == row["compactions"] == script.compaction_requests
    assert row["trace_calls"] == 9 and row["unanswered_calls"] == 0
    assert any("the numbers were listed" in prompt_text(p.body) for p in run.prompts)


@pytest.mark.parametrize("client", [CLAUDE_CODE, CODEX])
def test_the_trace_script_plays_each_segment_after_its_prompt(
        client: str, tmp_path: Path) -> None:
    """An interactive trace (three calls, a second prompt before the third): the first
    turn issues two calls and ends with the trace's answer; the third call is issued
    only after the second prompt reached the model."""
    from osiris.harness.real_clients.run import run_client_turns
    from osiris.harness.real_clients.trace_plan import Turn

    require_client(client)
    workspace = Workspace(tmp_path / client).reset(client)
    tool = "Bash" if client == CLAUDE_CODE else "shell"
    steps = [Step(i, tool, {"command": f"echo step-$(({i} + 100))"}, "") for i in range(3)]
    session = Session("talk", "traces", "", steps, client=client, final_text="All done.")
    paths = PathMap(None, workspace.project, workspace.tmp)
    turns = [Turn(2, "NOW THE THIRD STEP please", "Two steps done.")]
    script = TraceScript(client, plan(session, client, paths), session, paths, turns=turns,
                         final_text="All done.")
    model = ("--model", "claude-sonnet-4-5-20250929") if client == CLAUDE_CODE else (
        "-m", "gpt-5-codex")
    with ModelServer(script) as server:
        run = run_client_turns(client, server, workspace, ["FIRST go", turns[0].prompt],
                               tools=TOOLS, timeout_s=120, extra_args=model)
    assert run.returncode == 0, run.describe()
    answered = [(e.action or {}).get("text") or str((e.action or {}).get("input"))
                for e in run.requests if e.api is not None and e.action]
    assert [a for a in answered if a != "OK"] == [
        str(script.calls[0].input), str(script.calls[1].input), "Two steps done.",
        str(script.calls[2].input), "All done."]
    assert script.prompts_received == 1
    third = next(p for p in run.prompts if "step-102" in prompt_text(p.body))
    assert "NOW THE THIRD STEP please" in prompt_text(third.body)


CORPUS_SESSION = "corpus/claude-code/entire-cli-go"
"""An interactive Claude Code session of the corpus with a workspace, whose second typed
prompt comes after 8 calls."""


def test_an_interactive_corpus_session_is_played_prompt_by_prompt_and_compacts_on_its_own(
        tmp_path: Path) -> None:
    """The issue's Done test: the corpus session's first two typed prompts (the plan cut
    to their segments) through the real Claude Code, told a small window so it compacts
    early: both prompts reached the model, the client compacted on its own, nothing was
    refused."""
    from osiris.harness.real_clients.corpus import corpus_sessions
    from osiris.harness.real_clients.model_script import last_user_text
    from osiris.harness.real_clients.sessions import run_corpus_session

    require_client(CLAUDE_CODE)
    entry = next(e for e in corpus_sessions(REPO / "datasets" / "corpus")
                 if e.name == CORPUS_SESSION)
    log = tmp_path / "requests.jsonl"
    measured = run_corpus_session(entry, BARE, tools=TOOLS, repo=REPO, root=tmp_path / "run",
                                  compact_window=100_000, compact_percent=40, segments=2,
                                  timeout_s=600, log_path=log)
    assert measured.status == "ok", measured.row.get("stderr_tail")
    row = measured.row
    assert row["prompts_sent"] == row["prompts_received"] == 2
    assert row["compactions"] >= 1 and row["reactive_compactions"] == 0
    assert row["refused_requests"] == 0 and row["needed_refusal"] is False
    assert row["unanswered_calls"] == 0
    entries = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    asked = [last_user_text(ModelRequest(e["index"], e["api"], e["path"], e["body"]))
             for e in entries if e["api"] and isinstance(e["body"], dict)
             and not e["path"].endswith("/count_tokens")]
    from osiris.harness.importers.traces import load_trace

    typed = [p.text for p in load_trace(entry.path).user_prompts if p.kind == "typed"]
    first, second = typed[0], typed[1]
    assert any(first.strip()[:200] in text for text in asked)
    # The second prompt arrived after the first turn's answer, once.
    at = [i for i, text in enumerate(asked) if second.strip()[:200] in text]
    assert at and at[0] > 0


def test_the_first_prompt_table_compares_each_configuration_on_its_own_sessions() -> None:
    """A configuration run on fewer sessions than bare is compared with bare on those
    sessions: its extra tokens, not the difference between two sets of sessions."""
    def row(session: str, configuration: str, first: int) -> dict[str, Any]:
        return {"client": CLAUDE_CODE, "status": "ok", "session": session,
                "configuration": configuration, "first_prompt_tokens": first}
    rows = [row("small", "bare", 100), row("large", "bare", 9_000),
            row("small", "osiris", 120), row("large", "osiris", 9_020),
            row("large", "osiris-observe", 9_030)]
    lines = {line.split(" | ")[1]: line for line in tables.shares(rows)[2:]}
    assert lines["osiris-observe"].startswith(
        "| claude-code | osiris-observe | 1 | 9,030 | +30 |")
    assert lines["osiris"].startswith("| claude-code | osiris | 2 | 4,570 | +20 |")
    assert lines["bare"].startswith("| claude-code | bare | 2 | 4,550 | +0 |")
