"""Routing inside the real clients: what OSIRIS's hooks change reaches the model.

Claude Code 2.1.328 and Codex 0.169.0 (``.ci/install-node-tools``) run against the
scripted model with OSIRIS installed as a user installs it (``osiris install CLIENT
--user --roots PROJECT``). Every assertion reads the prompts the client sent.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from osiris.harness.real_clients.configs import OSIRIS, install
from osiris.harness.real_clients.model_script import (
    ANTHROPIC,
    FinalText,
    ModelRequest,
    ScriptedTurns,
    ToolCall,
    assistant_turns,
    is_agent_turn,
    last_user_text,
    prompt_text,
    results_by_id,
    tool_results,
)
from osiris.harness.real_clients.model_server import ModelServer
from osiris.harness.real_clients.run import CLAUDE_CODE, CODEX, Workspace, run_client
from osiris.harness.real_clients.sessions import routes_of
from osiris.harness.real_clients.trace_script import COMPACT_MARKER
from tests.conftest import SHOWN_REF
from tests.harness.real_clients import TOOLS, require_client

pytestmark = pytest.mark.slow  # real Claude Code and Codex sessions

CODEX_ARGS = ("-m", "gpt-5-codex")
REF = re.compile(SHOWN_REF)


def _workspace(tmp_path: Path, client: str) -> tuple[Workspace, tuple[str, ...]]:
    workspace = Workspace(tmp_path / client).reset(client)
    installed = install(OSIRIS, client, workspace, TOOLS)
    return workspace, installed.extra_args


def _run(client: str, workspace: Workspace, calls: list[ToolCall],
         extra: tuple[str, ...]) -> list[list[str]]:
    with ModelServer(ScriptedTurns([*calls, FinalText("Done.")])) as server:
        run = run_client(client, server, workspace, "go", tools=TOOLS, timeout_s=240,
                         extra_args=(*extra, *(CODEX_ARGS if client == CODEX else ())))
    assert run.returncode == 0, run.describe()
    # Each prompt's tool results, then everything of its last user message (the tool
    # result and what hooks added beside it).
    return [[*tool_results(prompt), _since_last_call(prompt)] for prompt in run.prompts]


def _since_last_call(prompt: ModelRequest) -> str:
    """Every text the client sent after the model's last turn (Claude Code puts a hook's
    added context in a message of its own after the tool result; Codex has none)."""
    if prompt.api != ANTHROPIC:
        return last_user_text(prompt) or "\n".join(tool_results(prompt)[-1:])
    messages = prompt.body.get("messages") or []
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"),
               default=-1)
    return "\n".join(prompt_text({"messages": messages[last + 1:]}).splitlines())


def _recall(workspace: Workspace, ref: str) -> str:
    """The stored text of ``ref``, read from the session's OSIRIS home by the CLI."""
    env = {**os.environ, "OSIRIS_HOME": str(workspace.osiris_home)}
    code = ("import sys; from osiris import Settings; from osiris.engine import Engine\n"
            "with Engine(Settings.from_env()) as e:\n"
            "    sys.stdout.buffer.write(e.ref_bytes(sys.argv[1])[0])")
    done = subprocess.run([sys.executable, "-c", code, ref], env=env, capture_output=True,
                          check=True, timeout=120)
    return done.stdout.decode("utf-8")


def _big_file(path: Path, lines: int = 4000) -> list[str]:
    text = [f"def function_{i}(x):  # NEEDLE-{i}" if i % 5 == 0 else f"    return x + {i}"
            for i in range(1, lines + 1)]
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    return text


def test_claude_code_gets_a_window_outline_and_ref_for_a_large_read(tmp_path: Path) -> None:
    require_client(CLAUDE_CODE)
    workspace, extra = _workspace(tmp_path, CLAUDE_CODE)
    big = workspace.project / "big.py"
    lines = _big_file(big)
    small = workspace.project / "small.py"
    small.write_text("print('small file')\n", encoding="utf-8")
    results = _run(CLAUDE_CODE, workspace, [
        ToolCall("Read", {"file_path": str(big)}),
        ToolCall("Read", {"file_path": str(big), "offset": 2990, "limit": 5}),
        ToolCall("Read", {"file_path": str(small)}),
        ToolCall("Edit", {"file_path": str(big), "old_string": lines[2994],
                          "new_string": "    return x + 2995  # edited"}),
        ToolCall("Read", {"file_path": str(small)}),
        ToolCall("Edit", {"file_path": str(small), "old_string": "small file",
                          "new_string": "small file, edited"})], extra)
    first = results[1][-1]
    # The window: line 250 is shown, line 251 is not; the context names the whole file.
    assert "def function_250(x):  # NEEDLE-250" in first
    assert "NEEDLE-255" not in first
    assert "OSIRIS shortened this Read" in first and "has 4,000 lines" in first
    outline = [int(n) for n in re.findall(r"^(\d+): def function_", first, re.MULTILINE)]
    assert max(outline) > 3900 and min(outline) < 50  # it spans the whole file
    (ref,) = set(REF.findall(first))
    assert _recall(workspace, ref) == big.read_text("utf-8").replace(
        "    return x + 2995  # edited", lines[2994])
    # An explicit offset/limit passes untouched, and so does a small file.
    assert "def function_2990(x):  # NEEDLE-2990" in results[2][-1]
    assert len(results[2][-1]) < 2000
    assert "OSIRIS shortened" not in results[2][-1]
    assert "small file" in results[3][-1] and "OSIRIS" not in results[3][-1]
    # Claude Code still lets the agent edit a line outside the window.
    assert "updated" in results[4][-1].lower()
    assert "# edited" in big.read_text("utf-8")
    # The unchanged small file read again: a pointer, not a second copy; editing it works.
    assert "unchanged since you read it" in results[5][-1]
    assert "print('small file')" not in results[5][-1]
    assert "updated" in results[6][-1].lower()
    assert "small file, edited" in small.read_text("utf-8")


def test_claude_code_shows_a_mid_size_read_as_its_head_and_outline(tmp_path: Path) -> None:
    """A whole-file Read of a few thousand tokens reaches the model as its first lines
    (numbered by Claude Code), with the outline's line numbers and the ref beside them;
    a line past them can still be edited, and a Read with offset/limit gets it."""
    require_client(CLAUDE_CODE)
    workspace, extra = _workspace(tmp_path, CLAUDE_CODE)
    (workspace.project / ".osiris").mkdir()
    (workspace.project / ".osiris" / "invariants.toml").write_text(
        "[routing]\nread_shape = true\n", encoding="utf-8")  # off by default
    mid = workspace.project / "mid.py"
    lines = _big_file(mid, lines=600)
    results = _run(CLAUDE_CODE, workspace, [
        ToolCall("Read", {"file_path": str(mid)}),
        ToolCall("Read", {"file_path": str(mid), "offset": 500, "limit": 5}),
        ToolCall("Edit", {"file_path": str(mid), "old_string": lines[549],
                          "new_string": "def function_550(x):  # edited"})], extra)
    first = results[1]
    assert "NEEDLE-80" in first[0] and "NEEDLE-85" not in first[0]
    assert re.search(r"^\s*80\t", first[0], re.MULTILINE)  # Claude Code's own numbering
    note = first[-1]
    assert "OSIRIS showed lines 1-80 of" in note and "600 lines" in note
    outline = [int(n) for n in re.findall(r"^(\d+): def function_", note, re.MULTILINE)]
    assert max(outline) > 550  # the outline reaches past what is shown
    (ref,) = set(REF.findall(note))
    assert _recall(workspace, ref) == mid.read_text("utf-8").replace(
        "def function_550(x):  # edited", lines[549])
    assert "NEEDLE-500" in results[2][-1]
    assert "updated" in results[3][-1].lower()
    assert "# edited" in mid.read_text("utf-8")


def test_claude_code_shows_a_reread_after_an_edit_as_its_changed_lines(tmp_path: Path,
                                                                       ) -> None:
    """Read a file whole, Edit it, Read it whole again: the second result reaches the
    model as the lines around the edit, numbered by Claude Code from where they are now,
    with OSIRIS's note on where the rest is; the file can still be edited after it."""
    require_client(CLAUDE_CODE)
    workspace, extra = _workspace(tmp_path, CLAUDE_CODE)
    mid = workspace.project / "mid.py"
    lines = _big_file(mid, lines=300)
    results = _run(CLAUDE_CODE, workspace, [
        ToolCall("Read", {"file_path": str(mid)}),
        ToolCall("Edit", {"file_path": str(mid), "old_string": lines[199],
                          "new_string": "def function_200(x):  # edited\n    x = -x"}),
        ToolCall("Read", {"file_path": str(mid)}),
        ToolCall("Edit", {"file_path": str(mid), "old_string": lines[249],
                          "new_string": "def function_250(x):  # edited too"})], extra)
    assert "NEEDLE-300" in results[1][0]  # the first read: whole
    again = results[3]
    shown = again[-2]  # the last tool result (before it: the first read and the edit)
    assert "NEEDLE-195" not in shown and "NEEDLE-205" not in shown
    # Claude Code's numbering, from line 197 to line 204 (return x + 203), nothing after
    assert re.search(r"^\s*197\t", shown, re.MULTILINE)
    assert re.search(r"^\s*201\t\s*x = -x", shown, re.MULTILINE)
    assert shown.splitlines()[-1].strip() == "204\t    return x + 203"
    note = again[-1]
    assert "changed since you read it whole" in note
    assert "Lines 1-196 are as in that read." in note
    assert "Lines 205-301 are that read's lines 204-300, moved by +1." in note
    (ref,) = set(REF.findall(note))
    assert _recall(workspace, ref) == mid.read_text("utf-8").replace(
        "def function_250(x):  # edited too", lines[249])
    assert "updated" in results[4][-1].lower()
    assert "# edited too" in mid.read_text("utf-8")
    # What the benchmark reports of it, from the session's journal.
    routes = routes_of(workspace.osiris_home)
    assert routes["route.read_changed"] == 1 and routes["route.served"] == 2
    assert 1_500 < routes["read_changed_tokens_kept_out"] < 2_463


def test_claude_code_gets_a_preview_of_a_large_command_output(tmp_path: Path) -> None:
    """The command runs in Claude Code's own shell; OSIRIS's PostToolUse hook (an
    ``mcp_tool`` hook, as installed) replaces a large output with a preview and the ref
    of the whole output, which it reads from the file Claude Code persisted."""
    require_client(CLAUDE_CODE)
    workspace, extra = _workspace(tmp_path, CLAUDE_CODE)
    rules = workspace.project / ".osiris" / "invariants.toml"
    rules.parent.mkdir()
    rules.write_text('[routing]\nexempt = ["seq 1 7*"]\n', encoding="utf-8")
    large = "seq 1 20000; echo 'WARNING tests/test_x.py::test_y is slow' >&2"
    failing = "seq 1 20000; exit 3"
    quoted = "printf '%s|%s\\n' \"$(echo ünï \"q'd\")\" $((6*7)) && cat <<'EOF'\n$HOME `x`\nEOF"
    results = _run(CLAUDE_CODE, workspace, [
        ToolCall("Bash", {"command": large}),
        ToolCall("Bash", {"command": failing}),
        ToolCall("Bash", {"command": "seq 1 7000"}),
        ToolCall("Bash", {"command": quoted})], extra)
    shown = results[1][-1]
    assert "whole output (20,001 lines" in shown
    assert len(shown) < 4000  # a preview, not 20,000 lines
    assert "<persisted-output>" not in shown
    (ref,) = set(REF.findall(shown))
    # Claude Code 2.1.328 merges stderr into stdout, as 2>&1 would.
    expected = subprocess.run(["bash", "-c", large], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, check=False)
    assert _recall(workspace, ref) == expected.stdout
    # A failing command comes to PostToolUseFailure, whose output Claude Code does not let
    # a hook replace: the model gets Claude Code's own cut, as without OSIRIS.
    assert results[2][-1].startswith("Exit code 3\n1\n2\n")
    assert "stored as mem://" not in results[2][-1]
    # The exempt command passed untouched (Claude Code persists a big output itself).
    assert "stored as mem://" not in results[3][-1]
    assert "<persisted-output>" in results[3][-1]
    # Quotes, $(), unicode and a heredoc: Claude Code's shell ran them.
    assert results[4][-1].strip().splitlines()[:2] == ["ünï q'd|42", "$HOME `x`"]


def test_a_broken_osiris_home_leaves_outputs_unchanged(tmp_path: Path) -> None:
    require_client(CLAUDE_CODE)
    workspace, extra = _workspace(tmp_path, CLAUDE_CODE)
    workspace.osiris_home.mkdir(parents=True, exist_ok=True)
    (workspace.osiris_home / "osiris.duckdb").write_bytes(b"not a database" * 100)
    big = workspace.project / "big.py"
    _big_file(big)
    results = _run(CLAUDE_CODE, workspace, [
        ToolCall("Read", {"file_path": str(big)}),
        ToolCall("Bash", {"command": "seq 1 3000 | tail -n 2"})], extra)
    assert "NEEDLE-1995" in results[1][-1]  # Claude Code's own 2,000-line read
    assert "OSIRIS shortened" not in results[1][-1]
    assert results[2][-1].strip() == "2999\n3000"


def test_codex_shell_output_becomes_a_preview_with_its_ref(tmp_path: Path) -> None:
    """The command runs in Codex's own shell; OSIRIS's PostToolUse hook takes the exit
    status and the fuller output from the rollout Codex wrote, and Codex shows the model
    OSIRIS's answer (``decision: "block"``) instead of its own cut."""
    require_client(CODEX)
    workspace, extra = _workspace(tmp_path, CODEX)
    hooks = json.loads((workspace.codex_home / "hooks.json").read_text("utf-8"))
    assert set(hooks["hooks"]) == {"PreToolUse", "PostToolUse", "SessionStart"}
    big = workspace.project / "big.py"
    _big_file(big, lines=2500)  # under the 64 KiB Codex keeps whole in its rollout
    huge = workspace.project / "huge.py"
    _big_file(huge, lines=8000)
    results = _run(CODEX, workspace, [
        ToolCall("exec_command", {"cmd": "cat big.py"}),
        ToolCall("exec_command", {"cmd": "echo small; exit 4"}),
        ToolCall("exec_command", {"cmd": "cat huge.py; echo 'FAILED at the end'; exit 5"})],
        extra)
    shown = results[1][-1]
    assert shown.startswith("Process exited with code 0\n") and "2,500 lines" in shown
    assert "truncated" not in shown.lower() and len(shown) < 4000
    (ref,) = set(REF.findall(shown))
    assert _recall(workspace, ref) == big.read_text("utf-8")
    # A small output reaches the model as Codex shows it.
    assert "Process exited with code 4" in results[2][-1]
    assert results[2][-1].endswith("small\n") and "osiris" not in results[2][-1]
    # Past 64 KiB Codex itself keeps head and tail only: OSIRIS stores that, says so
    # nowhere it need not, and the failure at the end is in the preview.
    failed = results[3][-1]
    assert failed.startswith("Process exited with code 5\n")
    assert "FAILED at the end" in failed
    (cut,) = set(REF.findall(failed))
    stored = _recall(workspace, cut)
    assert stored.startswith(huge.read_text("utf-8")[:1000])
    assert "command output truncated for persistence" in stored


class _UntilDone:
    """Plays ``actions`` one per agent turn (a counter: a compaction rewrites the history)
    and answers Claude Code's compaction request with a summary."""

    def __init__(self, actions: list[ToolCall]) -> None:
        self.actions = list(actions)

    def reply(self, request: ModelRequest) -> Any:
        text = last_user_text(request)
        if COMPACT_MARKER in text:
            return FinalText("<summary>The agent listed numbers and read big.py.</summary>")
        if not tool_results(request) and self.actions and request.body.get("tools") is None:
            return FinalText("OK")
        return self.actions.pop(0) if self.actions else FinalText("Done.")


def test_claude_code_gets_the_manifest_and_refs_back_after_a_compaction(
        tmp_path: Path) -> None:
    require_client(CLAUDE_CODE)
    workspace, extra = _workspace(tmp_path, CLAUDE_CODE)
    big = workspace.project / "big.py"
    _big_file(big)
    # Outputs under osiris run's threshold reach the model whole, so the prompt grows
    # past the window the scripted provider enforces and Claude Code compacts.
    calls = [ToolCall("Read", {"file_path": str(big)})] + [
        ToolCall("Bash", {"command": f"seq {i * 1000} {i * 1000 + 300}"}) for i in range(12)]
    with ModelServer(_UntilDone(calls), context_window=17_000) as server:
        run = run_client(CLAUDE_CODE, server, workspace, "go", tools=TOOLS, timeout_s=300,
                         extra_args=extra)
    assert run.returncode == 0, run.describe()
    compacted = [i for i, p in enumerate(run.prompts) if COMPACT_MARKER in last_user_text(p)]
    assert compacted, ("the client never compacted", [
        (e.status, e.error, e.body_bytes, e.action) for e in server.requests()])
    after = [prompt_text(p.body) for p in run.prompts[compacted[0] + 1:]]
    assert any("OSIRIS after compaction" in text for text in after)
    back = next(text for text in after if "OSIRIS after compaction" in text)
    assert str(big) in back and REF.search(back)  # the windowed file's ref, by its path
    assert "SEAL" in back.upper()


def test_claude_code_gets_a_preview_of_another_servers_large_output(tmp_path: Path) -> None:
    require_client(CLAUDE_CODE)
    workspace, extra = _workspace(tmp_path, CLAUDE_CODE)
    # Another MCP server beside OSIRIS (tests/data/big_mcp_server.py), allowed like OSIRIS.
    config = workspace.home / ".claude.json"
    data = json.loads(config.read_text("utf-8"))
    data["mcpServers"]["bigdata"] = {"type": "stdio", "command": sys.executable,
                                     "args": [str(Path(__file__).parents[1] / "data" /
                                                  "big_mcp_server.py")]}
    config.write_text(json.dumps(data), encoding="utf-8")
    settings = json.loads(workspace.claude_settings.read_text("utf-8"))
    settings["permissions"]["allow"].append("mcp__bigdata")
    workspace.claude_settings.write_text(json.dumps(settings), encoding="utf-8")
    results = _run(CLAUDE_CODE, workspace, [
        ToolCall("ToolSearch", {"query": "select:mcp__bigdata__dump", "max_results": 1}),
        ToolCall("mcp__bigdata__dump", {"rows": 600}),
        ToolCall("mcp__bigdata__dump", {"rows": 3})], extra)
    big, small = results[2][-1], results[3][-1]
    assert "whole output (600 lines" in big and len(big) < 4_000
    (ref,) = set(REF.findall(big))
    assert _recall(workspace, ref).count("\n") == 599
    assert '"row": 3, "title"' in small and "osiris" not in small.lower()


class _Contexts:
    """Plays the main agent and its subagents, each from its own list: a subagent's
    requests are told apart by the task its parent gave it (its first user message holds
    the marker); every other agent turn is the main agent's. The step is the request's
    own count of model turns, so each context advances on its own."""

    def __init__(self, main: list[ToolCall], subagents: dict[str, list[ToolCall]]) -> None:
        self.main, self.subagents = main, subagents

    @staticmethod
    def first_user_text(request: ModelRequest) -> str:
        for message in request.body.get("messages") or []:
            if isinstance(message, dict) and message.get("role") == "user":
                content = message.get("content")
                return content if isinstance(content, str) else prompt_text(
                    {"messages": [message]})
        return ""

    def context_of(self, request: ModelRequest) -> str | None:
        """The subagent marker of ``request``'s context, None for the main agent."""
        first = self.first_user_text(request)
        return next((m for m in self.subagents if m in first), None)

    def reply(self, request: ModelRequest) -> Any:
        if not is_agent_turn(request):
            return FinalText("OK")
        marker = self.context_of(request)
        actions = self.main if marker is None else self.subagents[marker]
        step = assistant_turns(request)
        return actions[step] if step < len(actions) else FinalText(
            "Done." if marker is None else f"{marker} done.")


def test_claude_code_subagents_and_their_parent_each_get_their_first_read(
        tmp_path: Path) -> None:
    """A subagent shares its parent's session but not its context (Claude Code marks its
    hook calls with ``agent_id``): its first Read of a file its parent read gets the file;
    the parent's second Read gets the pointer to its own result; what a subagent read
    never reached its parent nor a second subagent."""
    require_client(CLAUDE_CODE)
    workspace, extra = _workspace(tmp_path, CLAUDE_CODE)
    settings = json.loads(workspace.claude_settings.read_text("utf-8"))
    settings["permissions"]["allow"].append("Agent(*)")
    workspace.claude_settings.write_text(json.dumps(settings), encoding="utf-8")
    shared, theirs = workspace.project / "shared.py", workspace.project / "theirs.py"
    shared.write_text("SHARED = 'read by everyone'\n", encoding="utf-8")
    theirs.write_text("THEIRS = 'read by the first subagent'\n", encoding="utf-8")

    def agent(marker: str, call_id: str) -> ToolCall:
        # In the foreground: the parent goes on only when the subagent has ended.
        return ToolCall("Agent", {"description": "read files", "subagent_type":
                                  "general-purpose", "run_in_background": False,
                                  "prompt": f"{marker}: read the files"}, call_id)

    def read(path: Path, call_id: str) -> ToolCall:
        return ToolCall("Read", {"file_path": str(path)}, call_id)

    script = _Contexts(
        main=[read(shared, "toolu_main_1"), agent("FIRST-SUBAGENT", "toolu_agent_1"),
              read(shared, "toolu_main_2"), read(theirs, "toolu_main_3"),
              agent("SECOND-SUBAGENT", "toolu_agent_2")],
        subagents={"FIRST-SUBAGENT": [read(shared, "toolu_sub1_1"),
                                      read(theirs, "toolu_sub1_2")],
                   "SECOND-SUBAGENT": [read(theirs, "toolu_sub2_1")]})
    with ModelServer(script) as server:
        run = run_client(CLAUDE_CODE, server, workspace, "go", tools=TOOLS, timeout_s=240,
                         extra_args=extra)
    assert run.returncode == 0, run.describe()
    results: dict[str, tuple[str, bool]] = {}
    contexts: dict[str | None, int] = {}
    for prompt in run.prompts:
        results.update(results_by_id(prompt))
        contexts[script.context_of(prompt)] = contexts.get(script.context_of(prompt), 0) + 1
    assert set(contexts) == {None, "FIRST-SUBAGENT", "SECOND-SUBAGENT"}, contexts
    pointer = "unchanged since you read it"

    def got_file(call_id: str, text: str) -> bool:
        shown, failed = results[call_id]
        return text in shown and not failed and pointer not in shown

    assert got_file("toolu_main_1", "read by everyone")
    # The subagent's first read of the file its parent read: the file, not a pointer.
    assert got_file("toolu_sub1_1", "read by everyone"), results["toolu_sub1_1"]
    assert got_file("toolu_sub1_2", "read by the first subagent")
    # The parent's second read: the pointer to its own first result.
    shown, failed = results["toolu_main_2"]
    assert failed and pointer in shown and "toolu_main_1" in shown, shown
    # What the first subagent read is in neither the parent's context nor the second's.
    assert got_file("toolu_main_3", "read by the first subagent"), results["toolu_main_3"]
    assert got_file("toolu_sub2_1", "read by the first subagent"), results["toolu_sub2_1"]
