"""The needs of a session (the rule of ``osiris/harness/replay/workloads.py``), rule by rule."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from osiris.core.tokens import default_counter
from osiris.harness.importers.traces import load_trace
from osiris.harness.replay.workloads import (
    NEED_KINDS,
    Need,
    Step,
    SweepWorkload,
    TraceWorkload,
    derive_trace_needs,
    edit_anchor_lines,
    need_kind,
    session_from_trace,
)
from tests.conftest import TRACES

ISSUE_18 = TRACES / "claude-code__tielec-ai-workflow-agent/issue-18/04_implementation/execute/" \
    "agent_log_raw.txt"

READ_OUTPUT = ("     1→def load(path):\n"
               "     2→    with open(path) as handle:\n"
               "     3→        return parse_config(handle.read())\n"
               "     4→x = 1\n")


def _step(i: int, tool: str, args: dict[str, Any], output: str = "ok",
          response: int | None = None) -> Step:
    return Step(i, tool, args, output, response=i if response is None else response)


def _needs(steps: list[Step]) -> list[tuple[int, str, int, str]]:
    return [(s.i, n.text, n.use_step, n.kind) for s in steps for n in s.needs]


def test_need_kinds() -> None:
    assert [need_kind(t) for t in ("src/app/main.py", "settings.json", "1.2.840.10008",
                                   "123456", "MainController", "parse_config",
                                   "os.path.join")] == [
        "path", "path", "number", "number", "identifier", "identifier", "identifier"]
    assert set(NEED_KINDS) == {"path", "identifier", "number", "edit_anchor"}


def test_edit_anchors_come_from_a_numbered_read_without_its_line_numbers() -> None:
    old = "    with open(path) as handle:\n        return parse_config(handle.read())\nx = 1"
    steps = [_step(0, "Read", {"file_path": "/w/conf.py"}, READ_OUTPUT),
             _step(1, "Edit", {"file_path": "/w/conf.py", "old_string": old,
                               "new_string": "pass"})]
    derive_trace_needs(steps, task="", final_text="")
    assert [n for n in _needs(steps) if n[3] == "edit_anchor"] == [
        (0, "    with open(path) as handle:", 1, "edit_anchor"),
        (0, "        return parse_config(handle.read())", 1, "edit_anchor")]  # "x = 1": short


def test_an_anchor_comes_from_the_most_recent_output_holding_it() -> None:
    line = "        return parse_config(handle.read())"
    steps = [_step(0, "Read", {"file_path": "/w/conf.py"}, READ_OUTPUT),
             _step(1, "Bash", {"command": "grep -n parse_config conf.py"}, f"3:{line}"),
             _step(2, "Bash", {"command": "ls"}, "conf.py"),
             _step(3, "MultiEdit", {"file_path": "/w/conf.py", "edits": [
                 {"old_string": line, "new_string": "x"},
                 {"old_string": f"{line}\n{line}", "new_string": "y"}]})]
    derive_trace_needs(steps, task="", final_text="")
    assert [n for n in _needs(steps) if n[3] == "edit_anchor"] == [(1, line, 3, "edit_anchor")]


PATCH = """*** Begin Patch
*** Update File: src/app.py
@@ def main():
     settings = load_settings()
-    run(settings, verbose=False)
+    run(settings, verbose=True)
*** End Patch"""


def test_apply_patch_context_and_removed_lines_are_anchors() -> None:
    source = "def main():\n    settings = load_settings()\n    run(settings, verbose=False)\n"
    shell = {"command": f"bash -lc \"apply_patch <<'EOF'\n{PATCH}\nEOF\""}
    rollout = {"input": PATCH}  # a rollout's custom apply_patch call
    assert edit_anchor_lines("shell", shell) == edit_anchor_lines("apply_patch", rollout) == [
        "    settings = load_settings()", "    run(settings, verbose=False)"]
    steps = [_step(0, "shell", {"command": "bash -lc 'cat src/app.py'"}, source),
             _step(1, "shell", shell), _step(2, "apply_patch", rollout)]
    derive_trace_needs(steps, task="", final_text="")
    anchors = [n for n in _needs(steps) if n[3] == "edit_anchor"]
    # The second patch repeats lines the agent wrote itself in the first: no new needs.
    assert anchors == [(0, "    settings = load_settings()", 1, "edit_anchor"),
                       (0, "    run(settings, verbose=False)", 1, "edit_anchor")]
    # A Codex exec log's file_change keeps no patch: nothing to anchor.
    assert edit_anchor_lines("apply_patch", {"changes": [{"path": "a.py", "kind": "update"}]}) \
        == []


def test_needs_held_by_the_task_prompt_are_dropped_and_leave_their_place() -> None:
    output = "src/components/VeryLongComponentName.tsx\nsrc/lib/helpers_alpha.ts\n" \
             "src/lib/helpers_beta.ts\nsrc/lib/helper_c.ts\n"
    uses = "edit src/components/VeryLongComponentName.tsx src/lib/helpers_alpha.ts " \
           "src/lib/helpers_beta.ts src/lib/helper_c.ts"
    steps = [_step(0, "Bash", {"command": "ls -R src"}, output),
             _step(1, "Bash", {"command": uses})]
    without = derive_trace_needs(steps, task="", final_text="")
    assert [n[1] for n in _needs(steps)] == ["src/components/VeryLongComponentName.tsx",
                                             "src/lib/helpers_alpha.ts",
                                             "src/lib/helpers_beta.ts"]
    assert without.dropped == {}
    counts = derive_trace_needs(steps, task="Fix src/components/VeryLongComponentName.tsx",
                                final_text="")
    assert [n[1] for n in _needs(steps)] == ["src/lib/helpers_alpha.ts",
                                             "src/lib/helpers_beta.ts", "src/lib/helper_c.ts"]
    assert counts.dropped == {"in_task_prompt": 1}


def test_a_use_in_the_same_response_moves_to_the_next_use_or_is_dropped() -> None:
    steps = [_step(0, "Bash", {"command": "ls"}, "MainController.py\nOtherHelper.py",
                   response=0),
             _step(1, "Read", {"file_path": "MainController.py"}, "x", response=0),
             _step(2, "Read", {"file_path": "OtherHelper.py"}, "y", response=0),
             _step(3, "Edit", {"file_path": "MainController.py", "old_string": "x",
                               "new_string": "z"}, "done", response=1)]
    counts = derive_trace_needs(steps, task="", final_text="")
    # Both files were named by calls issued before the listing came back; only
    # MainController.py is used again later, by the Edit of another response.
    assert _needs(steps) == [(0, "MainController.py", 3, "path")]
    assert counts.dropped == {"same_response": 1}
    assert counts.moved == {"same_response": 1}


def test_an_anchor_seen_only_in_its_own_response_moves_to_an_older_output_or_drops() -> None:
    line = "        return parse_config(handle.read())"
    steps = [_step(0, "Read", {"file_path": "/w/conf.py"}, READ_OUTPUT, response=0),
             _step(1, "Bash", {"command": "grep -n return conf.py"}, f"3:{line}", response=1),
             _step(2, "Edit", {"file_path": "/w/conf.py", "old_string": line,
                               "new_string": "pass"}, response=1)]
    counts = derive_trace_needs(steps, task="", final_text="")
    assert [n for n in _needs(steps) if n[3] == "edit_anchor"] == [(0, line, 2, "edit_anchor")]
    assert counts.moved == {"same_response": 1}
    steps[0].response = 1
    counts = derive_trace_needs(steps, task="", final_text="")
    assert _needs(steps) == []
    # The line as an anchor, and parse_config and handle.read as tokens of the Read.
    assert counts.dropped == {"same_response": 3}


def test_a_session_without_its_prompt_records_the_size_the_provider_counted(
        tmp_path: Path) -> None:
    log = tmp_path / "agent_log_raw.txt"
    log.write_bytes(ISSUE_18.read_bytes())
    session = session_from_trace(load_trace(log), "s", str(log))
    first = json.loads(next(line for line in ISSUE_18.read_text("utf-8").splitlines()
                            if '"usage"' in line))["message"]["usage"]
    assert session.task_prompt == ""
    assert session.task_prompt_provider_tokens == \
        first["input_tokens"] + first["cache_creation_input_tokens"] == 8_875
    assert (session.task_prompt_source, session.client, session.system_prompt) == \
        ("usage", "claude-code", "")
    assert session.compactions == []


def test_sweep_needs_have_kinds() -> None:
    sessions = list(SweepWorkload(TRACES, default_counter()).sessions())
    assert {s.client for s in sessions} == {"sweep"}
    kinds = Counter(n.kind for s in sessions for _, n in s.needs)
    assert set(kinds) <= set(NEED_KINDS) and kinds["identifier"] > 0
    assert all(step.response == step.i for s in sessions for step in s.steps)


def test_every_trace_need_has_a_kind_and_a_later_use() -> None:
    for session in TraceWorkload(TRACES).sessions():
        for produced, need in session.needs:
            assert isinstance(need, Need) and need.kind in NEED_KINDS
            assert produced < need.use_step <= len(session.steps)


def test_needs_of_the_bundled_traces_by_kind() -> None:
    sessions = list(TraceWorkload(TRACES).sessions())
    kinds = Counter(n.kind for s in sessions for _, n in s.needs)
    dropped: Counter[str] = Counter()
    moved: Counter[str] = Counter()
    for session in sessions:
        dropped.update(session.dropped_needs)
        moved.update(session.moved_needs)
    # 151 token needs before the task prompts were known; 32 of them are strings of a
    # task prompt (24 identifiers, 8 paths) and give way to shorter candidates; 555
    # edit anchors, 44 of them held by a task prompt and 283 written by the agent itself
    # earlier (repeated edits of the same lines).
    assert dict(kinds) == {"path": 55, "identifier": 71, "edit_anchor": 228}
    assert dict(dropped) == {"in_task_prompt": 76, "in_own_messages": 283}
    assert dict(moved) == {}
    by_client = Counter(s.client for s in sessions)
    assert by_client == {"claude-code": 4, "codex-cli": 2, "mini-swe-agent": 3, "swe-agent": 2}
    assert all(s.task_prompt for s in sessions)
    assert sum(len(s.compactions) for s in sessions) == 3


def test_an_anchor_the_agent_wrote_itself_is_no_need() -> None:
    source = "\n".join(f"{n:>6}\u2192line {n} of the module" for n in range(1, 5))
    first = {"file_path": "m.py", "old_string": "line 2 of the module",
             "new_string": "line 2 of the module, changed"}
    second = {"file_path": "m.py", "old_string": "line 2 of the module, changed",
              "new_string": "line 2 again"}
    steps = [_step(0, "Read", {"file_path": "m.py"}, source), _step(1, "Edit", first),
             _step(2, "Edit", second, output="ok")]
    counts = derive_trace_needs(steps, task="", final_text="")
    assert [n[1] for n in _needs(steps) if n[3] == "edit_anchor"] == ["line 2 of the module"]
    assert counts.dropped == {}  # the second anchor was never in an output: not a candidate
    third = {"file_path": "m.py", "old_string": "line 3 of the module",
             "new_string": "x"}
    steps = [_step(0, "Read", {"file_path": "m.py"}, source),
             _step(1, "Bash", {"command": "echo 'line 3 of the module'"}, output="line 3"),
             _step(2, "Edit", third, output="ok")]
    counts = derive_trace_needs(steps, task="", final_text="")
    assert [n for n in _needs(steps) if n[3] == "edit_anchor"] == []
    assert counts.dropped == {"in_own_messages": 1}
