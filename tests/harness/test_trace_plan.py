"""How a trace's paths land in the live workspace (no client needed)."""

from __future__ import annotations

from pathlib import Path

from osiris.harness.real_clients.trace_plan import PathMap, Turn

PROJECT, TMP, HOME = Path("/s/project"), Path("/s/tmp"), Path("/s/home")


def test_the_authors_project_home_and_tmp_land_in_the_workspace() -> None:
    paths = PathMap("/Users/[USER]/proj", PROJECT, TMP, HOME)
    assert paths.text("cat /Users/[USER]/proj/a.py /Users/[USER]/.zshrc ~/notes /tmp/x") == (
        "cat /s/project/a.py /s/home/.zshrc /s/home/notes /s/tmp/x")
    # Another user's folder that merely starts the same is left alone.
    assert paths.text("/Users/[USER]x/y") == "/Users/[USER]x/y"
    assert paths({"file_path": "/Users/[USER]/proj/b", "n": 3}) == {
        "file_path": "/s/project/b", "n": 3}


def test_without_a_home_only_the_project_and_tmp_move() -> None:
    paths = PathMap("/home/ann/work/", PROJECT, TMP)
    assert paths.text("ls /home/ann/work/src /home/ann/.cache /tmp/t") == (
        "ls /s/project/src /home/ann/.cache /s/tmp/t")


def test_a_turn_is_received_when_the_last_user_message_ends_with_it() -> None:
    turn = Turn(4, "  now fix the tests\n", "Done.")
    assert turn.received_in("<system-reminder>x</system-reminder>\n\nnow fix the tests")
    assert not turn.received_in("now fix the docs")


def test_sub_agent_calls_are_skipped_under_either_name() -> None:
    """Claude Code 2.1 calls its sub-agent tool Agent (Task before): replayed, the
    sub-agent's own requests would reach the script as the main agent's."""
    from osiris.harness.real_clients.run import CLAUDE_CODE
    from osiris.harness.real_clients.trace_plan import live_tool

    for name in ("Task", "Agent"):
        assert live_tool(CLAUDE_CODE, name, {"prompt": "look around"}) is None
    assert live_tool(CLAUDE_CODE, "Read", {"file_path": "/a"}) == ("Read", {"file_path": "/a"})


def test_a_command_that_lists_processes_is_skipped_with_its_reason() -> None:
    """On the replaying machine ``ps`` shows that machine's processes (the session run
    beside it included), not the author's: another text every run."""
    from osiris.harness.importers.traces import Trace, TraceStep
    from osiris.harness.real_clients.run import CLAUDE_CODE, CODEX
    from osiris.harness.real_clients.trace_plan import LISTS_PROCESSES, plan
    from osiris.harness.replay.workloads import session_from_trace

    commands = ['ps -eo pid,cmd | rg -i "sync|worker"', "cd src && pgrep -f nest | head -5",
                "if true; then ps; fi", "grep -n ps notes.md", "echo top", "pstree"]
    for client, tool, key in ((CODEX, "exec_command", "cmd"), (CLAUDE_CODE, "Bash", "command")):
        trace = Trace(source="t.jsonl", format="test")
        trace.steps = [TraceStep(i, tool, {key: c}, "out", False, f"c{i}", i)
                       for i, c in enumerate(commands)]
        calls = plan(session_from_trace(trace, "t", "t.jsonl"), client,
                     PathMap(None, PROJECT, TMP))
        assert [c.skip for c in calls] == [LISTS_PROCESSES] * 3 + [None] * 3
        assert calls[3].input == {key: "grep -n ps notes.md"}
