"""Recall is scoped to the caller's principal (issue 36, item 12).

Over HTTP with two bearer tokens: a ref is readable (``osiris_recall``,
``osiris://ref/…``) only by the token whose tasks hold it, including the refs of the
tasks its Claude Code hooks (``osiris_hook``) created; another token's ref and an
unknown ref get the same answer. The local user (no token: the CLI) reads every ref of
the home.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError

from tests.conftest import SHOWN_REF, run_cli
from tests.server.transports import http_client, http_server, osiris_env, run

ALICE = {"Authorization": "Bearer alice-secret-token-0001"}
BOB = {"Authorization": "Bearer bob-secret-token-0002"}
TOKENS = "alice=alice-secret-token-0001,bob=bob-secret-token-0002"
UNKNOWN = "mem://sha256:" + "0" * 64
REF = re.compile(SHOWN_REF)


def _big_file(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    big = project / "big.py"
    big.write_text("".join(f"def handler_{i}(event):\n    return event + {i}\n\n"
                           for i in range(3000)), encoding="utf-8")
    return big


def _hook_input(event: str, session: str, tool: str, tool_input: dict[str, Any],
                cwd: Path, **extra: str) -> dict[str, Any]:
    """What Claude Code's mcp_tool hook passes to osiris_hook (each field a string)."""
    name = "PreToolUse" if event == "pre-tool-use" else "PostToolUse"
    return {"event": event, "hook_event_name": name, "session_id": session,
            "cwd": str(cwd), "tool_name": tool, "tool_input": json.dumps(tool_input),
            "tool_use_id": "toolu_1", **extra}


async def alices_task(alice: Client) -> tuple[str, str]:
    """A task started by alice's token, and the ref of a large output it observed."""
    task = (await alice.call_tool("osiris_plan", {
        "mode": "start", "objective": "alice's task"})).structured_content["task_id"]
    observed = await alice.call_tool("osiris_observe", {
        "task_id": task, "kind": "result", "tool": "cat",
        "result": "alice's private data\n" * 400})
    return task, observed.structured_content["ref"]


def _same_answer(text: str, ref: str) -> str:
    return text.replace(ref, "REF")


def test_a_ref_is_readable_only_by_the_principal_whose_task_holds_it(
        in_store_mode: str, tmp_path: Path) -> None:
    big = _big_file(tmp_path)
    env = osiris_env(OSIRIS_HTTP_TOKEN=TOKENS, OSIRIS_HOOK_TOOL="on",
                     OSIRIS_ROOTS=str(big.parent))
    with http_server(env) as (url, _):

        async def flow() -> dict[str, str]:
            async with http_client(url, headers=ALICE) as alice:
                task, own = await alices_task(alice)
                # Alice's Claude Code reads a large file: its hook windows the read and
                # names the ref of the whole file, to recall without a task id.
                hooked = await alice.call_tool("osiris_hook", _hook_input(
                    "pre-tool-use", "s-alice", "Read", {"file_path": str(big)}, big.parent))
                context = json.loads(hooked.content[0].text)["hookSpecificOutput"][
                    "additionalContext"]
                (read,) = set(REF.findall(context))
                (session_task,) = re.findall(r"OSIRIS task (\S+) governs", context)
                for ref, expected in ((own, "alice's private data"),
                                      (read, "def handler_2999(event):")):
                    recalled = await alice.call_tool("osiris_recall", {
                        "ref": ref, "op": "grep", "pattern": re.escape(expected)})
                    assert not recalled.is_error, recalled.content[0].text
                    assert expected in recalled.structured_content["text"]
                    raw = (await alice.read_resource(f"osiris://ref/{ref}")).contents[0]
                    assert expected in base64.b64decode(raw.blob).decode("utf-8")
                # With a task id, the ref must be that task's.
                assert not (await alice.call_tool("osiris_recall", {
                    "ref": own, "task_id": task})).is_error
                other_task = await alice.call_tool("osiris_recall", {
                    "ref": read, "task_id": task})
                assert other_task.is_error and "not visible to task" in \
                    other_task.content[0].text

            async with http_client(url, headers=BOB) as bob:
                answers: dict[str, set[str]] = {"tool": set(), "resource": set()}
                for ref in (own, read, UNKNOWN):
                    recalled = await bob.call_tool("osiris_recall", {"ref": ref})
                    assert recalled.is_error
                    answers["tool"].add(_same_answer(recalled.content[0].text, ref))
                    with pytest.raises(MCPError) as refused:
                        await bob.read_resource(f"osiris://ref/{ref}")
                    answers["resource"].add(_same_answer(str(refused.value), ref))
                # No oracle: alice's refs and a ref nobody has look the same to bob.
                assert len(answers["tool"]) == len(answers["resource"]) == 1, answers
                # Bob's hook cannot join alice's session (nor record into its task).
                joined = await bob.call_tool("osiris_hook", _hook_input(
                    "post-tool-use", "s-alice", "Bash", {"command": "echo hi"}, big.parent,
                    tool_response=json.dumps({"stdout": "hi\n", "stderr": ""})))
                assert "OSIRIS hook skipped" in joined.content[0].text
                assert session_task not in joined.content[0].text  # nor learn its task
            return {"own": own, "read": read}

        refs = run(flow())
    # The local user (no token: the home is theirs) reads every ref of the home.
    for ref, expected in ((refs["own"], "alice's private data"),
                          (refs["read"], "def handler_0(event):")):
        done = run_cli("recall", ref)
        assert done.returncode == 0, done.stderr
        assert expected in done.stdout
