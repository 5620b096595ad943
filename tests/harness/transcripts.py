"""Real transcripts re-wrapped in the other layouts the same clients write.

The dataset holds Claude Code as Agent SDK stream-json and Codex CLI as ``exec --json``.
The same clients also keep session files (Claude Code: ``~/.claude/projects/<dir>/
<uuid>.jsonl``; Codex: rollout files under ``~/.codex/sessions``). These helpers move
the real events of a dataset transcript into those layouts (same calls, same outputs,
same usage), so the importer is tested on real content in every layout it claims.
"""

from __future__ import annotations

import json
import shlex
import uuid
from typing import Any

SESSION_ID = "4f35e220-c435-4cf7-b9b9-f40426042847"


def _uuid(n: int) -> str:
    return str(uuid.UUID(int=n + 1))


def _stamp(n: int) -> str:
    return f"2026-05-26T07:{n // 60 % 60:02d}:{n % 60:02d}.079Z"


def claude_session_file(stream_json: str) -> str:
    """A Claude Code session file holding the events of a stream-json transcript.

    Session files have no ``system/init`` or ``result`` event; they open with
    bookkeeping lines and wrap each message with uuid, parentUuid, sessionId, cwd,
    version and timestamp. One sub-agent (sidechain) event is added: it must not count.
    """
    lines = [json.dumps({"type": "file-history-snapshot", "messageId": _uuid(10_000),
                         "snapshot": {"messageId": _uuid(10_000), "trackedFileBackups": {},
                                      "timestamp": _stamp(0)}, "isSnapshotUpdate": False}),
             json.dumps({"type": "queue-operation", "operation": "enqueue",
                         "timestamp": _stamp(0), "sessionId": SESSION_ID,
                         "content": "continue the task"})]
    parent = None
    n = 0
    for raw in stream_json.splitlines():
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        if event.get("type") not in ("assistant", "user"):
            continue
        n += 1
        wrapped: dict[str, Any] = {
            "parentUuid": parent, "isSidechain": False, "userType": "external",
            "cwd": "/home/dev/ai-workflow-agent", "sessionId": SESSION_ID,
            "version": "2.0.61", "gitBranch": "main", "type": event["type"],
            "message": event["message"], "uuid": _uuid(n), "timestamp": _stamp(n)}
        content = event["message"].get("content")
        if event["type"] == "user" and isinstance(content, list) and content and \
                isinstance(content[0], dict) and content[0].get("type") == "tool_result":
            wrapped["toolUseResult"] = {"stdout": "", "stderr": "", "interrupted": False}
        lines.append(json.dumps(wrapped, ensure_ascii=False))
        parent = wrapped["uuid"]
        if n == 3:
            side = {**wrapped, "isSidechain": True, "uuid": _uuid(20_000), "type": "assistant",
                    "message": {"role": "assistant", "content": [{
                        "type": "tool_use", "id": "toolu_sidechain", "name": "Bash",
                        "input": {"command": "ls"}}]}}
            lines.append(json.dumps(side))
    lines.append(json.dumps({"type": "summary", "summary": "Implement the issue",
                             "leafUuid": parent}))
    return "\n".join(lines) + "\n"


def codex_rollout(exec_json: str) -> str:
    """A Codex rollout file holding the events of an ``exec --json`` transcript."""
    lines = [json.dumps({"timestamp": _stamp(0), "type": "session_meta", "payload": {
        "id": SESSION_ID, "timestamp": _stamp(0), "cwd": "/home/dev/ai-workflow-agent",
        "originator": "codex_exec", "cli_version": "0.46.0", "instructions": None}}),
        json.dumps({"timestamp": _stamp(0), "type": "turn_context", "payload": {
            "cwd": "/home/dev/ai-workflow-agent", "approval_policy": "never",
            "sandbox_policy": {"mode": "workspace-write"}, "model": "gpt-5-codex"}})]
    n = 0
    for raw in exec_json.splitlines():
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        n += 1
        item = event.get("item") or {}
        if event.get("type") == "turn.completed":
            lines.append(json.dumps({"timestamp": _stamp(n), "type": "event_msg", "payload": {
                "type": "token_count", "info": {"last_token_usage": event["usage"]}}}))
        if event.get("type") != "item.completed":
            continue
        if item.get("type") == "command_execution":
            command = str(item["command"])
            try:
                argv = shlex.split(command)
            except ValueError:
                argv = ["bash", "-lc", command]
            call_id = f"call_{n:04d}"
            lines.append(json.dumps({"timestamp": _stamp(n), "type": "response_item",
                                     "payload": {"type": "function_call", "name": "shell",
                                                 "arguments": json.dumps({"command": argv}),
                                                 "call_id": call_id}}))
            output = {"output": item.get("aggregated_output") or "",
                      "metadata": {"exit_code": item.get("exit_code"),
                                   "duration_seconds": 0.2}}
            lines.append(json.dumps({"timestamp": _stamp(n), "type": "response_item",
                                     "payload": {"type": "function_call_output",
                                                 "call_id": call_id,
                                                 "output": json.dumps(output)}},
                                    ensure_ascii=False))
        elif item.get("type") == "agent_message":
            lines.append(json.dumps({"timestamp": _stamp(n), "type": "response_item",
                                     "payload": {"type": "message", "role": "assistant",
                                                 "content": [{"type": "output_text",
                                                              "text": item.get("text", "")}]}},
                                    ensure_ascii=False))
        elif item.get("type") == "reasoning":
            lines.append(json.dumps({"timestamp": _stamp(n), "type": "response_item",
                                     "payload": {"type": "reasoning", "summary": [
                                         {"type": "summary_text",
                                          "text": item.get("text", "")}]}},
                                    ensure_ascii=False))
    return "\n".join(lines) + "\n"
