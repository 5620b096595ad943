"""The real clients (Claude Code, Codex) against the scripted model, offline.

Each runs a 2-step script — one tool call, then the end — and the test reads what
reached the model: the tool's real output in the second prompt. The binaries come from
npm (``.ci/install-node-tools``, run by ``nox -s tests`` when npm is present and always
by ``.ci/run``). Without them the tests skip, unless TEST_REQUIRE_NODE_TOOLS=1 (CI),
where they fail.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from osiris.core.tokens import default_counter
from osiris.harness.real_clients.configs import OSIRIS, install
from osiris.harness.real_clients.heads import Neutraliser, measure_head
from osiris.harness.real_clients.model_script import (
    FinalText,
    ScriptedTurns,
    ToolCall,
    last_user_text,
    prompt_text,
    tool_results,
)
from osiris.harness.real_clients.model_server import ModelServer
from osiris.harness.real_clients.run import (
    CLAUDE_CODE,
    CODEX,
    Workspace,
    run_client,
    run_client_turns,
)
from tests.harness.real_clients import TOOLS, require_client

# The shell computes the answer, so only a command that really ran can produce it.
COMMAND = "printf 'osiris-%s\\n' $((6 * 7))"


def _session(client: str, call: ToolCall, workspace: Workspace,
             extra_args: tuple[str, ...] = ()) -> list[list[str]]:
    """Run the 2-step script; the tool results of each prompt the model received."""
    with ModelServer(ScriptedTurns([call, FinalText("Done.")])) as server:
        run = run_client(client, server, workspace, "run the command", tools=TOOLS,
                         timeout_s=120, extra_args=extra_args)
    assert run.returncode == 0, run.describe()
    return [tool_results(prompt) for prompt in run.prompts]


def test_claude_code_sends_the_bash_result_to_the_model(tmp_path: Path) -> None:
    require_client(CLAUDE_CODE)
    workspace = Workspace(tmp_path / "cc").reset(CLAUDE_CODE)
    results = _session(CLAUDE_CODE, ToolCall("Bash", {"command": COMMAND}), workspace)
    assert results == [[], ["osiris-42"]]


def test_codex_sends_the_exec_command_result_to_the_model(tmp_path: Path) -> None:
    require_client(CODEX)
    workspace = Workspace(tmp_path / "cx").reset(CODEX)
    results = _session(CODEX, ToolCall("exec_command", {"cmd": COMMAND}), workspace,
                       ("-m", "gpt-5-codex"))
    assert len(results) == 2
    assert results[0] == []
    (output,) = results[1]
    # Codex heads the output with its own lines (chunk id, wall time, exit code).
    assert "Process exited with code 0" in output
    assert output.endswith("Output:\nosiris-42\n")


def test_claude_code_with_osiris_installed_lists_its_tools_by_name_only(
        tmp_path: Path) -> None:
    require_client(CLAUDE_CODE)
    workspace = Workspace(tmp_path / "cc").reset(CLAUDE_CODE)
    install(OSIRIS, CLAUDE_CODE, workspace, TOOLS)
    with ModelServer(ScriptedTurns([FinalText("Done.")])) as server:
        run = run_client(CLAUDE_CODE, server, workspace, "hi", tools=TOOLS, timeout_s=120)
    assert run.returncode == 0, run.describe()
    head = measure_head(run.prompts[0], "hi", default_counter(), Neutraliser())
    assert head.mcp_tools_deferred
    assert "mcp__osiris__osiris_recall" in head.deferred_tool_names
    assert head.mcp_tools_defined == []


@pytest.mark.parametrize("client", [CLAUDE_CODE, CODEX])
def test_an_interactive_session_gets_each_prompt_after_the_turn_before(
        client: str, tmp_path: Path) -> None:
    """Two typed prompts in one conversation: the second reaches the model only after the
    first turn ended, with the first turn's history (Claude Code: stream-json on stdin;
    Codex: ``exec`` then ``exec resume --last``)."""
    require_client(client)
    workspace = Workspace(tmp_path / client).reset(client)

    def shell(command: str) -> ToolCall:
        return (ToolCall("Bash", {"command": command, "description": "run"})
                if client == CLAUDE_CODE else ToolCall("exec_command", {"cmd": command}))

    model = ("--model", "claude-sonnet-4-5-20250929") if client == CLAUDE_CODE else (
        "-m", "gpt-5-codex")
    script = ScriptedTurns([shell("echo first-$((1 + 1))"), FinalText("First done."),
                            shell("echo second-$((2 + 2))"), FinalText("Second done.")])
    with ModelServer(script) as server:
        run = run_client_turns(client, server, workspace, ["PROMPT-ONE go", "PROMPT-TWO go"],
                               tools=TOOLS, timeout_s=120, extra_args=model)
    assert run.returncode == 0, run.describe()
    prompts = run.prompts
    assert len(prompts) == 4
    assert [last_user_text(p).endswith(("PROMPT-ONE go", "PROMPT-TWO go")) for p in prompts
            ] == [True, False, True, False]
    second = prompt_text(prompts[2].body)
    assert "PROMPT-ONE go" in second and "first-2" in second and "First done." in second
    assert "second-4" in prompt_text(prompts[3].body)


def test_a_search_in_a_client_prints_its_hits_in_the_same_order_every_run(
        tmp_path: Path) -> None:
    """ripgrep prints files in the order its threads finish them: the same search would
    show other lines from run to run once Codex cuts a long output. The clients' commands
    read the benchmark's ripgrep configuration (sorted by path)."""
    require_client(CODEX)
    workspace = Workspace(tmp_path / "cx").reset(CODEX)
    for d in range(12):
        for f in range(12):
            path = workspace.project / f"d{(d * 7) % 12:02d}" / f"f{(f * 5) % 12:02d}.txt"
            path.parent.mkdir(exist_ok=True)
            path.write_text("line\n" * (40 * f + 1) + "needle\n", encoding="utf-8")
    results = _session(CODEX, ToolCall("exec_command", {"cmd": "rg -l needle"}), workspace,
                       ("-m", "gpt-5-codex"))
    (output,) = results[1]
    hits = output.split("Output:\n", 1)[1].split()
    assert len(hits) == 144
    assert hits == sorted(hits)


@pytest.mark.parametrize("client", [CLAUDE_CODE, CODEX])
def test_a_task_prompt_longer_than_a_command_line_reaches_the_model_whole(
        client: str, tmp_path: Path) -> None:
    """A task prompt with the files it includes can pass 128 KiB, more than Linux takes
    as one argument (E2BIG: the session could not start); such a prompt goes on stdin."""
    require_client(client)
    workspace = Workspace(tmp_path / "w").reset(client)
    prompt = "".join(f"line {i} of the included design document\n" for i in range(5000)) \
        + "PROMPT-END go"
    assert len(prompt.encode("utf-8")) > 128 * 1024
    with ModelServer(ScriptedTurns([FinalText("Done.")])) as server:
        run = run_client(client, server, workspace, prompt, tools=TOOLS, timeout_s=120,
                         extra_args=("-m", "gpt-5-codex") if client == CODEX else ())
    assert run.returncode == 0, run.describe()
    sent = last_user_text(run.prompts[0])
    assert sent.endswith("PROMPT-END go") and "line 0 of the included" in sent
    assert "line 4999 of the included" in sent


def test_codex_commands_find_its_ripgrep_before_its_shell_snapshot_is_ready(
        tmp_path: Path) -> None:
    """Codex takes its shell snapshot in the background and does not wait for it: the
    first commands of a session on a busy machine ran in a login shell whose
    /etc/profile dropped Codex's ripgrep from PATH ("rg: command not found" once, the hits
    the next run). A login profile that takes 3 s makes the snapshot late every time."""
    require_client(CODEX)
    workspace = Workspace(tmp_path / "cx").reset(CODEX)
    (workspace.home / ".bash_profile").write_text("sleep 3\n", encoding="utf-8")
    (workspace.project / "a.txt").write_text("needle\n", encoding="utf-8")
    results = _session(CODEX, ToolCall("exec_command", {"cmd": "rg -l needle"}), workspace,
                       ("-m", "gpt-5-codex"))
    (output,) = results[1]
    assert output.split("Output:\n", 1)[1].split() == ["a.txt"]


def test_a_commit_the_session_makes_has_the_same_hash_every_run(tmp_path: Path) -> None:
    """A commit's hash covers its dates: a stash the agent pops names another hash each
    run unless the clients' commands commit at a fixed date."""
    require_client(CODEX)
    command = ("git init -q . && git -c user.name=a -c user.email=a@example.invalid "
               "commit -q --allow-empty -m one && git rev-parse HEAD")
    hashes = []
    for run in ("first", "second"):
        workspace = Workspace(tmp_path / run).reset(CODEX)
        (output,) = _session(CODEX, ToolCall("exec_command", {"cmd": command}), workspace,
                             ("-m", "gpt-5-codex"))[1]
        hashes.append(output.split("Output:\n", 1)[1].strip())
        time.sleep(1.1)  # a commit's date has a resolution of one second
    assert len(hashes[0]) == 40
    assert hashes[0] == hashes[1]
