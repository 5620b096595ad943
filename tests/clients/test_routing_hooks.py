"""Routing through the real hook command: which calls are rewritten, and how.

The real clients' side (that the rewrite reaches the model) is in
``tests/harness/test_routing_real_clients.py``; here each rule of
:mod:`osiris.core.routing` is driven through ``osiris hook`` as a process.
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

from osiris.core import routing
from tests.conftest import SHOWN_REF, home_rows, run_cli, whole_ref


def hook(client: str, event: str, payload: dict[str, Any], env: dict[str, str]
         ) -> dict[str, Any]:
    done = run_cli("hook", client, event, env=env, stdin=json.dumps(payload))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else {}


def pre(tool: str, tool_input: dict[str, Any], cwd: Path, session: str = "s-route",
        ) -> dict[str, Any]:
    return {"session_id": session, "cwd": str(cwd), "hook_event_name": "PreToolUse",
            "tool_name": tool, "tool_input": tool_input, "tool_use_id": "t1"}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    body = "".join(f"def handler_{i}(event):\n    return event + {i}  # {i:05d}\n\n"
                   for i in range(2500))
    (root / "big.py").write_text(body, encoding="utf-8")
    (root / "small.py").write_text("x = 1\n", encoding="utf-8")
    (root / "image.png").write_bytes(b"\x89PNG" + b"0" * 60_000)
    (root / "notes.ipynb").write_text(json.dumps({"cells": [{"source": "x" * 60_000}]}))
    return root


def env_for(project: Path) -> dict[str, str]:
    return {"OSIRIS_ROOTS": str(project)}


def inner(doc: dict[str, Any]) -> dict[str, Any]:
    return doc.get("hookSpecificOutput", {})


def test_a_large_read_is_windowed_and_the_file_stored(project: Path, osiris_home: Path
                                                      ) -> None:
    doc = hook("claude-code", "pre-tool-use",
               pre("Read", {"file_path": str(project / "big.py")}, project), env_for(project))
    out = inner(doc)
    assert out["updatedInput"] == {"file_path": str(project / "big.py"), "offset": 1,
                                   "limit": routing.RoutingConfig.read_window_lines}
    assert "permissionDecision" not in out  # Claude Code needs no decision for a rewrite
    context = out["additionalContext"]
    assert "has 7,500 lines" in context
    (shown,) = set(re.findall(SHOWN_REF, context))  # the short form, named twice
    lines = [int(x.split(":")[0]) for x in context.splitlines() if x[:1].isdigit()]
    assert lines[0] == 1 and lines[-1] > 7000  # the outline spans the file
    stored = home_rows(osiris_home, "SELECT count(*) FROM events WHERE kind = 'route.read'"
                                    " AND body->>'ref' = ?", [whole_ref(osiris_home, shown)])
    assert stored == [(1,)]
    audit = run_cli("audit", "--task", home_rows(
        osiris_home, "SELECT task_id FROM client_sessions")[0][0])
    assert audit.returncode == 0, audit.stdout


@pytest.mark.parametrize("tool_input", [
    {"offset": 1, "limit": 2000}, {"limit": 50}, {"offset": 3000}])
def test_a_read_with_its_own_window_passes(project: Path, tool_input: dict[str, Any]
                                           ) -> None:
    payload = pre("Read", {"file_path": str(project / "big.py"), **tool_input}, project)
    doc = hook("claude-code", "pre-tool-use", payload, env_for(project))
    assert "updatedInput" not in inner(doc)


@pytest.mark.parametrize("name", ["small.py", "image.png", "notes.ipynb", "missing.py"])
def test_small_files_images_notebooks_and_missing_files_pass(project: Path, name: str
                                                             ) -> None:
    payload = pre("Read", {"file_path": str(project / name)}, project)
    assert "updatedInput" not in inner(hook("claude-code", "pre-tool-use", payload,
                                            env_for(project)))


def test_a_file_outside_the_roots_passes(project: Path, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "big.py").write_text((project / "big.py").read_text())
    payload = pre("Read", {"file_path": str(other / "big.py")}, project)
    assert "updatedInput" not in inner(hook("claude-code", "pre-tool-use", payload,
                                            env_for(project)))
    without_roots = hook("claude-code", "pre-tool-use",
                         pre("Read", {"file_path": str(project / "big.py")}, project), {})
    assert "updatedInput" not in inner(without_roots)


@pytest.mark.parametrize("client", ["claude-code", "codex"])
def test_shell_calls_pass_untouched_by_default(project: Path, client: str) -> None:
    """OSIRIS never rewrites a shell command: the client's permission rules see the
    agent's own command and the client's shell runs it (issue 36). An objection of
    OSIRIS's own rules still denies it, and nothing grants it."""
    command = "git push --force origin main && rm -rf build"
    doc = hook(client, "pre-tool-use", pre("Bash", {"command": command}, project),
               env_for(project))
    assert "updatedInput" not in inner(doc)
    assert "permissionDecision" not in inner(doc)
    (project / ".osiris").mkdir()
    (project / ".osiris" / "invariants.toml").write_text(
        '[[invariant]]\nid = "no-force"\nwhen = { tool = "Bash", args = { command = "--force" } }\n'
        'verdict = "block"\nmessage = "no force push"\n', encoding="utf-8")
    denied = inner(hook(client, "pre-tool-use", pre("Bash", {"command": command}, project),
                        env_for(project)))
    assert denied["permissionDecision"] == "deny" and "updatedInput" not in denied


def claude_post(command: str, response: dict[str, Any], cwd: Path,
                session: str = "s-sink") -> dict[str, Any]:
    return {"session_id": session, "cwd": str(cwd), "hook_event_name": "PostToolUse",
            "tool_name": "Bash", "tool_input": {"command": command},
            "tool_response": response, "tool_use_id": "toolu_sink"}


def ref_in(text: str, home: Path) -> str:
    """The whole ref of the one ref ``text`` shows (in its short form)."""
    (shown,) = set(re.findall(SHOWN_REF, text))
    return whole_ref(home, shown)


def test_claude_code_large_shell_output_is_replaced_after_it_ran(project: Path,
                                                                osiris_home: Path) -> None:
    """Claude Code cuts a large output to 30,000 characters in the hook input and keeps
    the whole in ``persistedOutputPath``: OSIRIS stores the whole and answers
    ``updatedToolOutput``, the tool's own response with stdout replaced."""
    whole = "".join(f"line {i}: value {i * 7}\n" for i in range(20_000))
    persisted = project / "persisted.txt"
    persisted.write_text(whole, encoding="utf-8")
    response = {"stdout": whole[:30_000], "stderr": "", "interrupted": False,
                "isImage": False, "noOutputExpected": False,
                "persistedOutputPath": str(persisted), "persistedOutputSize": len(whole)}
    out = inner(hook("claude-code", "post-tool-use", claude_post("gen", response, project),
                     env_for(project)))
    updated = out["updatedToolOutput"]
    assert set(updated) == {"stdout", "stderr", "interrupted", "isImage", "noOutputExpected"}
    assert updated["stderr"] == "" and updated["interrupted"] is False
    shown = updated["stdout"]
    assert len(shown) < 4_000 and "whole output (20,000 lines" in shown
    assert "Process exited" not in shown  # Claude Code names the status itself
    assert home_rows(osiris_home, "SELECT size_bytes FROM refs WHERE ref = ?",
                     [ref_in(shown, osiris_home)]) == [(len(whole.encode()),)]
    # Small output, no persisted file: stdout and stderr as Claude Code shows them.
    small = {"stdout": "ok", "stderr": "warning: x", "interrupted": False, "isImage": False}
    assert "updatedToolOutput" not in inner(hook(
        "claude-code", "post-tool-use", claude_post("echo ok", small, project),
        env_for(project)))


def test_shell_outputs_the_rules_exempt_pass_as_the_client_shows_them(
        project: Path, tmp_path: Path) -> None:
    (project / ".osiris").mkdir()
    (project / ".osiris" / "invariants.toml").write_text(
        '[routing]\nexempt = ["npm run dev*"]\n', encoding="utf-8")
    big = "".join(f"row {i}\n" for i in range(8_000))
    response = {"stdout": big, "stderr": "", "interrupted": False, "isImage": False}
    assert "updatedToolOutput" in inner(hook(
        "claude-code", "post-tool-use", claude_post("cat rows", response, project),
        env_for(project)))
    for command, extra in (("npm run dev -- --port 3", {}),
                           ("npm test", {"run_in_background": True})):
        payload = claude_post(command, response, project)
        payload["tool_input"].update(extra)
        assert "updatedToolOutput" not in inner(hook("claude-code", "post-tool-use", payload,
                                                     env_for(project))), command
    # A persisted path that is not a regular file (a FIFO) never blocks the hook.
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    hostile = {**response, "persistedOutputPath": str(fifo)}
    assert "updatedToolOutput" not in inner(hook(
        "claude-code", "post-tool-use", claude_post("cat x", hostile, project),
        env_for(project)))
    # Switched off: the same large output passes.
    (project / ".osiris" / "invariants.toml").write_text("[routing]\nshell = false\n",
                                                         encoding="utf-8")
    assert "updatedToolOutput" not in inner(hook(
        "claude-code", "post-tool-use", claude_post("cat rows", response, project),
        env_for(project)))


def codex_rollout(path: Path, call_id: str, output: str, exit_code: int) -> None:
    """A rollout with the record Codex 0.169.0 appends when a command ends (the shape the
    real binary writes; tests/harness/test_routing_real_clients.py checks it there)."""
    item = {"type": "CommandExecution", "id": call_id, "process_id": "18722",
            "command": ["/bin/bash", "-lc", "make test"], "cwd": "file:///p",
            "source": "unified_exec_startup",
            "status": "completed" if exit_code == 0 else "failed",
            "aggregated_output": output, "exit_code": exit_code,
            "duration": {"secs": 0, "nanos": 1}}
    lines = [{"type": "session_meta", "payload": {}},
             {"type": "event_msg", "payload": {"type": "item_completed", "item": item}},
             {"type": "response_item", "payload": {"type": "function_call_output",
                                                   "call_id": call_id, "output": "cut"}}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def test_codex_shell_output_is_replaced_with_its_exit_status(project: Path,
                                                             tmp_path: Path) -> None:
    whole = "".join(f"test_{i} PASSED\n" for i in range(3_000)) + "FAILED test_z - boom\n"
    rollout = tmp_path / "rollout-1.jsonl"
    codex_rollout(rollout, "call_7", whole, 2)
    payload = {"session_id": "s-cx", "cwd": str(project), "hook_event_name": "PostToolUse",
               "transcript_path": str(rollout), "tool_name": "Bash",
               "tool_input": {"command": "make test"}, "tool_use_id": "call_7",
               "tool_response": whole[:5_000] + "\n…cut by Codex…\n" + whole[-5_000:]}
    doc = hook("codex", "post-tool-use", payload, env_for(project))
    assert doc["decision"] == "block"
    reason = doc["reason"]
    assert reason.startswith("Process exited with code 2\n")
    assert "FAILED test_z - boom" in reason and "whole output (3,001 lines" in reason
    # Without the rollout's record (another format, a command still running): untouched.
    other = {**payload, "tool_use_id": "call_8", "session_id": "s-cx2"}
    assert "decision" not in hook("codex", "post-tool-use", other, env_for(project))


def test_codex_previews_are_sized_by_sized_preview_tokens(project: Path, tmp_path: Path,
                                                          osiris_home: Path) -> None:
    """Codex routes by size: its preview is ``sized_preview_tokens`` (300, tuned on the
    Codex sessions), which ``[routing]`` changes; Claude Code's stays ``preview_tokens``."""
    whole = "".join(f"line {i}: building module_{i} with flags -O2 -g\n" for i in range(3_000))

    def routed(session: str) -> int:
        rollout = tmp_path / f"rollout-{session}.jsonl"
        codex_rollout(rollout, f"call_{session}", whole, 0)
        payload = {"session_id": session, "cwd": str(project), "hook_event_name": "PostToolUse",
                   "transcript_path": str(rollout), "tool_name": "Bash",
                   "tool_input": {"command": "make"}, "tool_use_id": f"call_{session}",
                   "tool_response": whole[:5_000]}
        assert hook("codex", "post-tool-use", payload, env_for(project))["decision"] == "block"
        rows = home_rows(osiris_home, "SELECT body->>'preview_tokens' FROM events WHERE "
                                      "kind = 'route.output' ORDER BY seq DESC LIMIT 1")
        return int(rows[0][0])

    size = routing.RoutingConfig.sized_preview_tokens  # the budget, within a line or two
    assert size - 40 <= routed("s-sized") <= size + 10
    (project / ".osiris").mkdir()
    (project / ".osiris" / "invariants.toml").write_text(
        "[routing]\nsized_preview_tokens = 900\n", encoding="utf-8")
    assert 860 <= routed("s-sized-900") <= 910


def test_codex_previews_a_log_from_shell_log_tokens(project: Path, tmp_path: Path) -> None:
    """Where size alone decides (Codex), a log (a build, a test run) gets its preview from
    ``shell_log_tokens``; a file printed with ``sed`` of the same size from
    ``shell_preview_tokens``, as before."""
    whole = "".join(f"src/module_{i}.ts(12,{i}): compiled module_{i} in {i} ms\n"
                    for i in range(60))

    def decided(session: str, command: str) -> bool:
        rollout = tmp_path / f"rollout-{session}.jsonl"
        codex_rollout(rollout, f"call_{session}", whole, 0)
        payload = {"session_id": session, "cwd": str(project),
                   "hook_event_name": "PostToolUse", "transcript_path": str(rollout),
                   "tool_name": "Bash", "tool_input": {"command": command},
                   "tool_use_id": f"call_{session}", "tool_response": whole}
        return hook("codex", "post-tool-use", payload, env_for(project)).get(
            "decision") == "block"

    (project / ".osiris").mkdir()
    (project / ".osiris" / "invariants.toml").write_text(
        "[routing]\nshell_log_tokens = 800\nshell_preview_tokens = 1500\n",
        encoding="utf-8")
    assert decided("s-log", "bun run build")
    assert decided("s-log-wrapped", "bash -lc 'cd app && npm test 2>&1 | tail -80'")
    assert not decided("s-print", "sed -n '1,80p' src/module.ts")
    (project / ".osiris" / "invariants.toml").write_text(
        "[routing]\nshell_log_tokens = 1500\n", encoding="utf-8")
    assert not decided("s-log-1500", "bun run build")


def test_a_mid_size_shell_output_is_priced_in_claude_code_only(
        project: Path, tmp_path: Path, osiris_home: Path) -> None:
    """An output of about a thousand tokens: in Claude Code, early in a session, keeping
    it out of every later request pays (the payoff, journaled with its numbers); Codex
    keeps the size threshold its figures were measured with, and shows it whole."""
    whole = "".join(f"src/module_{i}.py:{i}: def handler_{i}(event): pass\n" for i in range(60))
    claude = {"session_id": "s-mid", "cwd": str(project), "hook_event_name": "PostToolUse",
              "tool_name": "Bash", "tool_input": {"command": "grep -rn handler src"},
              "tool_use_id": "t-mid", "tool_response": {"stdout": whole, "stderr": "",
                                                         "interrupted": False}}
    doc = hook("claude-code", "post-tool-use", claude, env_for(project))
    shown = inner(doc)["updatedToolOutput"]["stdout"]
    assert "stored as mem://sha256:" in shown and len(shown) < len(whole)
    (payoff,) = home_rows(osiris_home, "SELECT body FROM events WHERE kind = 'route.payoff'")[0]
    assert json.loads(payoff)["route"] is True
    rollout = tmp_path / "rollout-mid.jsonl"
    codex_rollout(rollout, "call_m", whole, 0)
    codex = {**claude, "session_id": "s-mid-cx", "transcript_path": str(rollout),
             "tool_use_id": "call_m", "tool_response": whole}
    assert "decision" not in hook("codex", "post-tool-use", codex, env_for(project))


def test_switching_each_feature_off(project: Path) -> None:
    (project / ".osiris").mkdir()
    (project / ".osiris" / "invariants.toml").write_text(
        "[routing]\nread = false\nshell = false\n", encoding="utf-8")
    for tool, tool_input in (("Read", {"file_path": str(project / "big.py")}),
                             ("Bash", {"command": "pytest"})):
        doc = hook("claude-code", "pre-tool-use", pre(tool, tool_input, project),
                   env_for(project))
        assert "updatedInput" not in inner(doc), tool


def test_a_broken_routing_table_keeps_the_calls_unchanged(project: Path) -> None:
    (project / ".osiris").mkdir()
    (project / ".osiris" / "invariants.toml").write_text(
        "[routing]\nread_threshold_tokens = 'lots'\n", encoding="utf-8")
    done = run_cli("hook", "claude-code", "pre-tool-use", env=env_for(project),
                   stdin=json.dumps(pre("Read", {"file_path": str(project / "big.py")},
                                        project)))
    assert done.returncode == 0
    doc = json.loads(done.stdout) if done.stdout.strip() else {}
    # Defaults stay in force (no earlier good file), and health names the problem.
    assert "updatedInput" in inner(doc)
    health = run_cli("health", env=env_for(project))
    assert "read_threshold_tokens must be a positive integer" in health.stdout


def test_another_servers_large_output_is_replaced(project: Path) -> None:
    big = "\n".join(f'{{"issue": {i}, "title": "Bug number {i} in the parser"}}'
                    for i in range(2000))
    payload = {"session_id": "s-mcp", "cwd": str(project), "hook_event_name": "PostToolUse",
               "tool_name": "mcp__github__list_issues", "tool_input": {"repo": "a/b"},
               "tool_response": [{"type": "text", "text": big}], "tool_use_id": "t9"}
    out = inner(hook("claude-code", "post-tool-use", payload, env_for(project)))
    replaced = out["updatedMCPToolOutput"]
    assert len(replaced) < 4_000 and "whole output (2,000 lines" in replaced
    codex = hook("codex", "post-tool-use", {**payload, "session_id": "s-mcp2"},
                 env_for(project))
    assert codex["decision"] == "block" and "whole output (2,000 lines" in codex["reason"]
    small = {**payload, "tool_response": [{"type": "text", "text": "one issue"}]}
    assert "updatedMCPToolOutput" not in inner(hook("claude-code", "post-tool-use", small,
                                                    env_for(project)))
    own = {**payload, "tool_name": "mcp__osiris__osiris_recall"}
    assert hook("claude-code", "post-tool-use", own, env_for(project)) == {}


def test_after_a_compaction_the_manifest_and_refs_come_back(project: Path) -> None:
    hook("claude-code", "pre-tool-use", pre("Read", {"file_path": str(project / "big.py")},
                                            project), env_for(project))
    start = {"session_id": "s-route", "cwd": str(project), "hook_event_name": "SessionStart",
             "source": "startup"}
    assert hook("claude-code", "session-start", start, env_for(project)) == {}
    doc = hook("claude-code", "session-start", {**start, "source": "compact"},
               env_for(project))
    context = inner(doc)["additionalContext"]
    assert "OSIRIS after compaction" in context and "SEAL" in context.upper()
    assert str(project / "big.py") in context and "mem://sha256:" in context


def test_malformed_hook_input_passes_with_one_logged_line(project: Path, osiris_home: Path
                                                          ) -> None:
    for raw in ("{not json", json.dumps({"session_id": "s", "tool_name": 3})):
        done = subprocess.run([sys.executable, "-m", "osiris", "hook", "codex",
                               "pre-tool-use"], input=raw, capture_output=True, text=True,
                              timeout=120, env={**os.environ, **env_for(project)},
                              check=False)
        assert done.returncode == 0
        assert "updatedInput" not in done.stdout
    log = (osiris_home / "hooks.log").read_text("utf-8").splitlines()
    assert len(log) == 2 and all("malformed hook input" in line for line in log)


def test_a_reread_of_an_unchanged_file_gets_a_pointer(project: Path) -> None:
    env = env_for(project)
    small = {"file_path": str(project / "small.py")}

    def served(session: str = "s-re") -> None:
        post = {"session_id": session, "cwd": str(project), "hook_event_name": "PostToolUse",
                "tool_name": "Read", "tool_input": small, "tool_use_id": "toolu_first",
                "tool_response": {"type": "text", "file": {"content": "x = 1\n"}}}
        assert hook("claude-code", "post-tool-use", post, env) == {}

    assert "permissionDecision" not in inner(hook("claude-code", "pre-tool-use",
                                                  pre("Read", small, project, "s-re"), env))
    served()
    again = inner(hook("claude-code", "pre-tool-use", pre("Read", small, project, "s-re"),
                       env))
    assert again["permissionDecision"] == "deny"
    assert "unchanged since you read it (tool call toolu_first)" in again[
        "permissionDecisionReason"]
    # Another window, another session, a changed file, or a compaction: it passes.
    other = {**small, "offset": 1, "limit": 1}
    assert "permissionDecision" not in inner(hook("claude-code", "pre-tool-use",
                                                  pre("Read", other, project, "s-re"), env))
    assert "permissionDecision" not in inner(hook("claude-code", "pre-tool-use",
                                                  pre("Read", small, project, "s-other"), env))
    (project / "small.py").write_text("x = 2\n", encoding="utf-8")
    assert "permissionDecision" not in inner(hook("claude-code", "pre-tool-use",
                                                  pre("Read", small, project, "s-re"), env))
    served()
    assert inner(hook("claude-code", "pre-tool-use", pre("Read", small, project, "s-re"),
                      env))["permissionDecision"] == "deny"
    hook("claude-code", "session-start", {"session_id": "s-re", "cwd": str(project),
                                          "hook_event_name": "SessionStart",
                                          "source": "compact"}, env)
    assert "permissionDecision" not in inner(hook("claude-code", "pre-tool-use",
                                                  pre("Read", small, project, "s-re"), env))


def test_a_subagent_gets_its_own_first_read_and_no_pointer_to_another_context(
        project: Path) -> None:
    """Claude Code 2.1.328 runs a subagent in the parent's session (same ``session_id``)
    with a context of its own, and marks each of its hook calls with ``agent_id``
    (tests/harness/test_routing_real_clients.py watches the real binary do it). A result
    served to one context is not in another: the parent's read is no reason to deny the
    subagent's, nor the subagent's the parent's, nor one subagent's another's."""
    env = env_for(project)
    small, only_sub = str(project / "small.py"), str(project / "big.py")
    big_window = {"offset": 1, "limit": 250}

    def read(path: str, agent: str | None, use_id: str, window: dict[str, int] | None = None,
             ) -> dict[str, Any]:
        """The PreToolUse answer for a Read by ``agent`` (None: the main agent), then,
        unless it was denied, its PostToolUse (the result reached that context)."""
        tool_input = {"file_path": path, **(window or {})}
        extra = {"agent_id": agent, "agent_type": "general-purpose"} if agent else {}
        asked = inner(hook("claude-code", "pre-tool-use",
                           {**pre("Read", tool_input, project, "s-sub"), **extra,
                            "tool_use_id": use_id}, env))
        if asked.get("permissionDecision") is None:
            served = {**pre("Read", {**tool_input, **asked.get("updatedInput", {})},
                            project, "s-sub"), **extra, "hook_event_name": "PostToolUse",
                      "tool_use_id": use_id,
                      "tool_response": {"type": "text", "file": {"content": "..."}}}
            assert hook("claude-code", "post-tool-use", served, env) == {}
        return asked

    assert "permissionDecision" not in read(small, None, "toolu_main")
    # The subagent's first read of the file its parent read gets the file.
    assert "permissionDecision" not in read(small, "a0b683af2e09dbf05", "toolu_sub")
    again = read(small, "a0b683af2e09dbf05", "toolu_sub2")
    assert again["permissionDecision"] == "deny"
    assert "(tool call toolu_sub)" in again["permissionDecisionReason"]
    # The parent's own re-read points at its own result, not at the subagent's.
    parent = read(small, None, "toolu_main2")
    assert parent["permissionDecision"] == "deny"
    assert "(tool call toolu_main)" in parent["permissionDecisionReason"]
    # A second subagent holds neither.
    assert "permissionDecision" not in read(small, "a7f0c2", "toolu_other")
    # What the subagent read (here a large file, windowed) never reached the parent.
    assert read(only_sub, "a0b683af2e09dbf05", "toolu_sub3")["updatedInput"] == {
        "file_path": only_sub, **big_window}
    assert "permissionDecision" not in read(only_sub, None, "toolu_main3")
    assert read(only_sub, None, "toolu_main4")["permissionDecision"] == "deny"


def test_a_reread_of_a_changed_file_shows_the_changed_lines(project: Path) -> None:
    """Item 4 of issue 38: the same context read the file whole, it changed (an Edit),
    no compaction since: the re-read shows the lines that hold every change, numbered
    as the file is now, and says where the rest is."""
    env = env_for(project)
    path = project / "service.py"
    before = "".join(f"def step_{i}(value):\n    return value * {i}\n\n" for i in range(60))
    path.write_text(before, encoding="utf-8")
    whole = {"file_path": str(path)}

    def read(content: str, use_id: str, session: str = "s-chg",
             agent: str | None = None) -> dict[str, Any]:
        extra = {"agent_id": agent, "agent_type": "general-purpose"} if agent else {}
        post = {"session_id": session, "cwd": str(project), "hook_event_name": "PostToolUse",
                "tool_name": "Read", "tool_input": whole, "tool_use_id": use_id, **extra,
                "tool_response": {"type": "text", "file": {
                    "filePath": str(path), "content": content, "startLine": 1,
                    "numLines": len(content.splitlines()),
                    "totalLines": len(content.splitlines())}}}
        return inner(hook("claude-code", "post-tool-use", post, env))

    assert "updatedToolOutput" not in read(before, "toolu_first")
    after = before.replace("    return value * 30\n", "    checked = value or 0\n"
                           "    return checked * 30\n")
    path.write_text(after, encoding="utf-8")
    out = read(after, "toolu_again")
    file = out["updatedToolOutput"]["file"]
    # def step_30 is line 91; its body, line 92, became lines 92-93; 3 lines each side.
    assert file["startLine"] == 89 and file["numLines"] == 8
    assert file["content"] == "\n".join(after.splitlines()[88:96])  # no empty line 97
    assert file["totalLines"] == 181 and file["filePath"] == str(path)
    note = out["additionalContext"]
    assert "changed since you read it whole (tool call toolu_first)" in note
    assert "Lines 1-88 are as in that read" in note
    assert "Lines 97-181 are that read's lines 96-180, moved by +1" in note
    assert re.search(r"stored as " + SHOWN_REF, note)
    # Read again after one more edit: shown against the read just made.
    again = after.replace("    return value * 50\n", "    return value * 500\n")
    path.write_text(again, encoding="utf-8")
    assert read(again, "toolu_third")["updatedToolOutput"]["file"]["startLine"] == 150
    # Another context (a subagent) never held the file: it gets it whole.
    assert "updatedToolOutput" not in read(again, "toolu_sub", agent="a0b683af2e09dbf05")
    # Changes all over the file: whole.
    spread = again.replace("value", "amount")
    path.write_text(spread, encoding="utf-8")
    assert "updatedToolOutput" not in read(spread, "toolu_fourth")
    # After a compaction the earlier read may be gone: whole.
    changed = spread.replace("amount * 7\n", "amount * 70\n")
    path.write_text(changed, encoding="utf-8")
    hook("claude-code", "session-start", {"session_id": "s-chg", "cwd": str(project),
                                          "hook_event_name": "SessionStart",
                                          "source": "compact"}, env)
    assert "updatedToolOutput" not in read(changed, "toolu_fifth")
    # Switched off in [routing]: whole.
    (project / ".osiris").mkdir()
    (project / ".osiris" / "invariants.toml").write_text(
        "[routing]\nreread_changes = false\n", encoding="utf-8")
    path.write_text(changed + "# end\n", encoding="utf-8")
    assert "updatedToolOutput" not in read(changed + "# end\n", "toolu_sixth")


def test_a_changed_reread_of_a_file_stored_scrubbed_is_shown_whole(project: Path) -> None:
    """OSIRIS stores a read with its secrets masked, so the stored text is not what the
    model got: the changes would be shown against the wrong text. The re-read passes."""
    env = env_for(project)
    path = project / "settings.py"
    token = "ghp_" + "a1B2c3D4e5" * 4
    before = f"GITHUB_TOKEN = \"{token}\"\n" + "".join(
        f"OPTION_{i} = {i}  # the {i}th option of the service\n" for i in range(120))
    after = before.replace("OPTION_60 = 60", "OPTION_60 = 61")

    def read(content: str, use_id: str) -> dict[str, Any]:
        post = {"session_id": "s-scrub", "cwd": str(project), "tool_name": "Read",
                "hook_event_name": "PostToolUse", "tool_input": {"file_path": str(path)},
                "tool_use_id": use_id, "tool_response": {"type": "text", "file": {
                    "filePath": str(path), "content": content, "startLine": 1,
                    "numLines": 121, "totalLines": 121}}}
        return inner(hook("claude-code", "post-tool-use", post, env))

    path.write_text(before, encoding="utf-8")
    read(before, "toolu_1")
    path.write_text(after, encoding="utf-8")
    assert "updatedToolOutput" not in read(after, "toolu_2")
    # Without the secret the same change is shown as its lines.
    clean = after.replace(token, "set-me")
    path.write_text(clean, encoding="utf-8")
    read(clean, "toolu_3")
    last = clean.replace("OPTION_61 = 61", "OPTION_61 = 62")
    path.write_text(last, encoding="utf-8")
    assert read(last, "toolu_4")["updatedToolOutput"]["file"]["startLine"] == 60  # line 63
