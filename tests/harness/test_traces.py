"""The trace importers: masked ids, model responses, task prompts and compactions."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from osiris.core.tokens import default_counter
from osiris.harness.importers.task_prompts import READ_REMINDER, read_result
from osiris.harness.importers.traces import find_traces, load_trace
from tests.conftest import TRACES, run_cli
from tests.harness.transcripts import SESSION_ID, claude_session_file

CLAUDE_DIR = TRACES / "claude-code__tielec-ai-workflow-agent"
ISSUE_18 = CLAUDE_DIR / "issue-18/04_implementation/execute/agent_log_raw.txt"
ISSUE_127 = CLAUDE_DIR / "issue-127/06_testing/revise/agent_log_raw.txt"
ISSUE_271 = CLAUDE_DIR / "issue-271/04_implementation/execute/agent_log_raw.txt"
CODEX_DIR = TRACES / "codex-cli__tielec-ai-workflow-agent/issue-119"
CODEX_REVIEW = CODEX_DIR / "01_requirements/review/agent_log_raw.txt"
HELDOUT = TRACES.parent / "traces-heldout"
MASK = "[REDACTED_TOKEN]"


def _masked(stream_json: str) -> str:
    """The same log with every tool and message id masked, as other tielec logs have them."""
    lines = []
    for raw in stream_json.splitlines():
        event = json.loads(raw)
        message = event.get("message") or {}
        if "id" in message:
            message["id"] = MASK
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_use":
                block["id"] = MASK
            elif block.get("type") == "tool_result":
                block["tool_use_id"] = MASK
        lines.append(json.dumps(event, ensure_ascii=False))
    return "\n".join(lines) + "\n"


def _steps(path: Path) -> list[tuple[str, dict[str, Any], str, bool, int]]:
    return [(s.tool, s.args, s.output, s.is_error, s.response) for s in load_trace(path).steps]


def test_masked_ids_import_to_the_same_steps(tmp_path: Path) -> None:
    # issue-127 answers its parallel calls in call order: order pairing is exact.
    masked = tmp_path / "masked.jsonl"
    masked.write_text(_masked(ISSUE_127.read_text("utf-8")), "utf-8")
    assert MASK in masked.read_text("utf-8")
    assert _steps(masked) == _steps(ISSUE_127)
    assert len(_steps(masked)) == 79


def test_masked_parallel_calls_answered_out_of_order_stay_within_their_response(
        tmp_path: Path) -> None:
    # issue-18 has parallel calls answered as they finished (a Read before a Bash, and
    # two Bash calls the other way round). The Read's numbered answer finds its Read;
    # two Bash answers cannot be told apart once ids are masked.
    masked = tmp_path / "masked.jsonl"
    masked.write_text(_masked(ISSUE_18.read_text("utf-8")), "utf-8")
    real, got = load_trace(ISSUE_18).steps, load_trace(masked).steps
    assert [(s.tool, s.args, s.response) for s in got] == \
        [(s.tool, s.args, s.response) for s in real]
    assert sorted(s.output for s in got) == sorted(s.output for s in real)
    swapped = [i for i, (a, b) in enumerate(zip(real, got, strict=True)) if a.output != b.output]
    assert swapped == [5, 6]
    assert real[5].response == real[6].response and real[5].tool == real[6].tool == "Bash"
    assert got[4].tool == "Read" and got[4].output.startswith("     1→{")


def test_loopguard_sees_no_duplicate_in_a_masked_log(tmp_path: Path) -> None:
    masked = tmp_path / "masked.jsonl"
    masked.write_text(_masked(ISSUE_18.read_text("utf-8")), "utf-8")
    done = run_cli("replay", "--json", "--quiet", str(masked), timeout=600)
    assert done.returncode == 0, done.stderr
    session = json.loads(done.stdout)["sessions"][0]
    assert session["tool_calls"] == 37
    duplicates = [f for f in session["loopguard"]["flags"]
                  if any("duplicate" in p for p in f["patterns"])]
    assert duplicates == []


def _event(kind: str, blocks: list[dict[str, Any]], message_id: str | None = None) -> str:
    message: dict[str, Any] = {"role": kind, "content": blocks}
    if message_id is not None:
        message["id"] = message_id
    return json.dumps({"type": kind, "message": message})


def _use(call_id: str, command: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": command}}


def _result(call_id: str, text: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": text}


def test_results_pair_by_unique_id_else_with_the_oldest_open_call(tmp_path: Path) -> None:
    lines = [
        # Real ids, results out of order: paired by id.
        _event("assistant", [_use("toolu_a", "echo a")], "msg_1"),
        _event("assistant", [_use("toolu_b", "echo b")], "msg_1"),
        _event("user", [_result("toolu_b", "b")]),
        _event("user", [_result("toolu_a", "a")]),
        # Masked ids: paired in order.
        _event("assistant", [_use(MASK, "echo c")], MASK),
        _event("assistant", [_use(MASK, "echo d")], MASK),
        _event("user", [_result(MASK, "c")]),
        _event("user", [_result(MASK, "d")]),
        _event("assistant", [_use(MASK, "echo e")], MASK),
        _event("user", [_result(MASK, "e")]),
    ]
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(lines) + "\n", "utf-8")
    trace = load_trace(path, "claude-code")
    assert [(s.args["command"], s.output) for s in trace.steps] == [
        ("echo a", "a"), ("echo b", "b"), ("echo c", "c"), ("echo d", "d"), ("echo e", "e")]
    assert not trace.skipped


def test_find_traces_is_unchanged_by_the_new_code() -> None:
    assert len(find_traces(TRACES)) == 11


# -- responses ------------------------------------------------------------------------


def test_claude_code_calls_of_one_assistant_message_share_a_response() -> None:
    steps = load_trace(ISSUE_18).steps
    assert [s.response for s in steps[:5]] == [0, 0, 0, 1, 1]  # 3 parallel, then 2
    assert len({s.response for s in steps}) == 23
    assert all(a.response <= b.response for a, b in itertools.pairwise(steps))


def test_masked_message_ids_group_calls_between_user_events(tmp_path: Path) -> None:
    masked = tmp_path / "masked.jsonl"
    masked.write_text(_masked(ISSUE_18.read_text("utf-8")), "utf-8")
    assert [s.response for s in load_trace(masked).steps] == \
        [s.response for s in load_trace(ISSUE_18).steps]


def _exec_events(*events: tuple[str, str]) -> str:
    """A Codex ``exec --json`` log: (event type, item id) pairs of command items."""
    lines = [json.dumps({"type": "thread.started", "thread_id": "t"}),
             json.dumps({"type": "turn.started"})]
    for kind, item_id in events:
        lines.append(json.dumps({"type": kind, "item": {
            "id": item_id, "type": "command_execution", "command": f"bash -lc 'echo {item_id}'",
            "aggregated_output": "" if kind == "item.started" else f"{item_id}\n",
            "exit_code": None if kind == "item.started" else 0}}))
    lines.append(json.dumps({"type": "turn.completed", "usage": {"input_tokens": 10}}))
    return "\n".join(lines) + "\n"


def test_codex_exec_calls_share_a_response_only_when_they_overlap(tmp_path: Path) -> None:
    assert [s.response for s in load_trace(CODEX_REVIEW).steps] == list(range(20))
    path = tmp_path / "exec.jsonl"
    path.write_text(_exec_events(("item.started", "a"), ("item.completed", "a"),
                                 ("item.started", "b"), ("item.started", "c"),
                                 ("item.completed", "c"), ("item.completed", "b"),
                                 ("item.completed", "d")), "utf-8")
    steps = load_trace(path).steps
    assert [(s.output, s.response) for s in steps] == [("a\n", 0), ("c\n", 1), ("b\n", 1),
                                                        ("d\n", 2)]


def _rollout(*payloads: dict[str, Any]) -> str:
    lines = [json.dumps({"type": "session_meta", "payload": {"id": "s", "cwd": "/w"}})]
    lines += [json.dumps({"type": p.pop("_kind", "response_item"), "payload": p})
              for p in payloads]
    return "\n".join(lines) + "\n"


def _call(call_id: str) -> dict[str, Any]:
    return {"type": "function_call", "name": "shell", "call_id": call_id,
            "arguments": json.dumps({"command": ["bash", "-lc", f"echo {call_id}"]})}


def _output(call_id: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id,
            "output": json.dumps({"output": call_id, "metadata": {"exit_code": 0}})}


def test_codex_rollout_items_between_outputs_are_one_response(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    path.write_text(_rollout(
        {"_kind": "event_msg", "type": "user_message", "message": "Fix the bug in app.py"},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "<environment_context>cwd</environment_context>"}]},
        {"type": "reasoning", "summary": []}, _call("a"), _call("b"), _output("a"), _output("b"),
        {"type": "message", "role": "assistant", "content": [{"type": "output_text",
                                                               "text": "now c"}]},
        _call("c"), _output("c")), "utf-8")
    trace = load_trace(path)
    assert [(s.output, s.response) for s in trace.steps] == [("a", 0), ("b", 0), ("c", 1)]
    assert trace.task_prompt == "Fix the bug in app.py"
    assert trace.task_prompt_source == "log"


def test_agent_loops_issue_one_call_per_response() -> None:
    for path in (TRACES / "mini-swe-agent__gruckion-fork" / "django__django-16255.traj.json",
                 TRACES / "swe-agent__SWE-agent" / "pydicom__pydicom-1458.traj"):
        steps = load_trace(path).steps
        assert [s.response for s in steps] == list(range(len(steps)))


# -- task prompts ---------------------------------------------------------------------


def test_mini_swe_agent_task_is_its_second_message() -> None:
    path = TRACES / "mini-swe-agent__gruckion-fork" / "django__django-16255.traj.json"
    messages = json.loads(path.read_text("utf-8"))["messages"]
    trace = load_trace(path)
    assert trace.task_prompt == messages[1]["content"]
    assert trace.system_prompt == messages[0]["content"]
    assert "<pr_description>" in trace.task_prompt


def test_swe_agent_task_is_the_issue_without_the_demonstration() -> None:
    trace = load_trace(TRACES / "swe-agent__SWE-agent" / "pydicom__pydicom-1458.traj")
    assert trace.task_prompt.startswith("We're currently solving the following issue")
    assert "Pixel Representation attribute should be optional" in trace.task_prompt
    assert trace.demonstration.startswith("Here is a demonstration")
    assert "END OF DEMONSTRATION" not in trace.task_prompt


def test_claude_session_file_task_is_the_first_user_message_and_its_attachments(
        tmp_path: Path) -> None:
    prompt = {"type": "user", "sessionId": SESSION_ID, "uuid": "u0",
              "message": {"role": "user", "content": "Implement @src/app.ts please"}}
    attachment = {"type": "user", "sessionId": SESSION_ID, "uuid": "u1", "isMeta": True,
                  "message": {"role": "user", "content": [{"type": "text", "text":
                              "Called the Read tool with the following input: "
                              '{"file_path":"/w/src/app.ts"}'}]}}
    boundary = {"type": "system", "subtype": "compact_boundary", "sessionId": SESSION_ID,
                "compactMetadata": {"trigger": "auto", "preTokens": 150_000}}
    summary = {"type": "user", "sessionId": SESSION_ID, "isCompactSummary": True,
               "message": {"role": "user", "content": "This session is being continued…"}}
    body = claude_session_file(ISSUE_18.read_text("utf-8")).splitlines()
    half = len(body) // 2
    lines = [*body[:2], json.dumps(prompt), json.dumps(attachment), *body[2:half],
             json.dumps(boundary), json.dumps(summary), *body[half:]]
    path = tmp_path / f"{SESSION_ID}.jsonl"
    path.write_text("\n".join(lines) + "\n", "utf-8")
    trace = load_trace(path)
    assert trace.task_prompt == ("Implement @src/app.ts please\n\nCalled the Read tool with "
                                 'the following input: {"file_path":"/w/src/app.ts"}')
    assert trace.task_prompt_source == "log"
    assert [s.output for s in trace.steps] == [s.output for s in load_trace(ISSUE_18).steps]
    (compaction,) = trace.compactions
    assert compaction.pre_tokens == 150_000
    assert compaction.summary == "This session is being continued…"
    assert 0 < compaction.step < len(trace.steps)


def test_stream_json_logs_carry_no_prompt_of_their_own(tmp_path: Path) -> None:
    log = tmp_path / "agent_log_raw.txt"
    log.write_bytes(ISSUE_18.read_bytes())
    trace = load_trace(log)
    assert (trace.task_prompt, trace.task_prompt_source, trace.companions) == ("", "", [])


def test_a_prompt_file_beside_a_claude_code_log_is_expanded_as_claude_code_attaches(
        tmp_path: Path) -> None:
    log = tmp_path / "execute" / "agent_log_raw.txt"
    includes = log.parent / "prompt_includes"
    (includes / ".ai-workflow" / "issue-1").mkdir(parents=True)
    log.write_bytes(ISSUE_18.read_bytes())
    (includes / "CLAUDE.md").write_text("# Rules\nbe nice\n", "utf-8")
    (includes / ".ai-workflow" / "issue-1" / "plan.md").write_text("step one", "utf-8")
    prompt = ("# Task\nPlan: @.ai-workflow/issue-1/plan.md\n- @CONTRIBUTION.md（存在する場合）\n"
              "- @CLAUDE.md（存在する場合）\n<!-- @plan.md への参照 -->\nAgain @CLAUDE.md\n")
    (log.parent / "prompt.txt").write_text(prompt, "utf-8")
    trace = load_trace(log)
    cwd = "/tmp/jenkins-64774e38/workspace/AI_Workflow/ai_workflow_orchestrator"
    reminder = READ_REMINDER
    assert trace.task_prompt == (
        f"{prompt}\n\n"
        f'Called the Read tool with the following input: {{"file_path":"{cwd}/.ai-workflow/'
        f'issue-1/plan.md"}}\n\nResult of calling the Read tool:\n     1→step one\n\n{reminder}'
        f'\n\nCalled the Read tool with the following input: {{"file_path":"{cwd}/CLAUDE.md"}}'
        f"\n\nResult of calling the Read tool:\n     1→# Rules\n     2→be nice\n     3→\n\n"
        f"{reminder}")
    assert trace.task_prompt_source == "prompt.txt"
    assert [Path(p).name for p in trace.companions] == ["prompt.txt", "plan.md", "CLAUDE.md"]
    # The prompt and its documents are not transcripts.
    assert find_traces(tmp_path) == [log]


def test_a_prompt_file_beside_a_codex_log_is_taken_verbatim(tmp_path: Path) -> None:
    log = tmp_path / "agent_log_raw.txt"
    log.write_bytes(CODEX_REVIEW.read_bytes())
    (tmp_path / "prompt.txt").write_text("Review @.ai-workflow/x.md\n", "utf-8")
    (tmp_path / "prompt_includes").mkdir()
    (tmp_path / "prompt_includes" / "x.md").write_text("never attached", "utf-8")
    trace = load_trace(log)
    assert trace.task_prompt == "Review @.ai-workflow/x.md\n"
    assert trace.companions == [str(tmp_path / "prompt.txt")]


def test_the_read_tool_format_is_what_the_bundled_logs_show() -> None:
    # issue-121 read CLAUDE.md whole; the same file is in the workspace of its commit.
    trace = load_trace(CLAUDE_DIR / "issue-121/07_documentation/execute/agent_log_raw.txt")
    read = trace.steps[7]
    assert read.tool == "Read" and read.args["file_path"].endswith("/CLAUDE.md")
    body = read.output.removesuffix("\n\n" + READ_REMINDER)
    text = "\n".join(line.split("→", 1)[1] for line in body.split("\n"))
    assert read_result(text) == read.output


# -- compactions ----------------------------------------------------------------------


def test_compactions_of_the_issue_271_log() -> None:
    trace = load_trace(ISSUE_271)
    (compaction,) = trace.compactions
    assert compaction.step == 6 and compaction.pre_tokens == 185_321
    assert compaction.summary.startswith("This session is being continued from a previous "
                                         "conversation that ran out of context.")
    assert trace.steps[5].tool == "Read" and trace.steps[6].tool == "Read"
    assert compaction.summary not in trace.task_prompt
    assert [len(load_trace(p).compactions) for p in sorted(CLAUDE_DIR.rglob("agent_log_raw.txt"))
            ] == [1, 1, 0, 1]


def test_bundled_tielec_logs_take_their_task_from_the_prompt_beside_them() -> None:
    counter = default_counter()
    for log in sorted(CLAUDE_DIR.rglob("agent_log_raw.txt")):
        trace = load_trace(log)
        prompt = (log.parent / "prompt.txt").read_text("utf-8")
        assert trace.task_prompt_source == "prompt.txt"
        assert trace.task_prompt.startswith(prompt)
        assert trace.companions[0] == str(log.parent / "prompt.txt")
        first = trace.usage[0]
        provider = first["input_tokens"] + first["cache_creation_input_tokens"]
        # The rebuilt prompt (with its attachments) is within 2% of what the provider
        # counted for the first call (SOURCES.md gives each figure).
        assert abs(counter.count(trace.task_prompt) / provider - 1) < 0.02, log
    for log in sorted(CODEX_DIR.rglob("agent_log_raw.txt")):
        trace = load_trace(log)
        assert trace.task_prompt == (log.parent / "prompt.txt").read_text("utf-8")
        assert "@.ai-workflow/issue-119/" in trace.task_prompt  # Codex attaches nothing


def test_the_held_out_sessions_are_found_and_imported_like_the_bundled_ones() -> None:
    paths = find_traces(HELDOUT)
    assert [p.relative_to(HELDOUT).parts[0] for p in paths] == \
        ["claude-code__tielec-ai-workflow-agent"] * 2 + ["codex-cli__tielec-ai-workflow-agent"] * 2
    traces = [load_trace(p) for p in paths]
    assert [len(t.steps) for t in traces] == [3, 3, 5, 8]
    assert all(not t.skipped for t in traces)
    assert [t.task_prompt_source for t in traces] == ["", "", "prompt.txt", "prompt.txt"]
    # The Issue body pasted into the requirements prompt keeps GitHub's CRLF.
    assert traces[3].task_prompt.count("\r\n") == 136 and len(traces[3].task_prompt) == 5_020
