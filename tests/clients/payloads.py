"""Claude Code hook payloads rebuilt from the real Claude Code traces (a helper module).

The bundled traces (``datasets/traces/claude-code__*``) are Claude Code stream-json
logs: each ``tool_use`` block and its ``tool_result`` become the PreToolUse and
PostToolUse (or PostToolUseFailure) payloads Claude Code would have handed its hooks,
with ``tool_response`` in the shape Claude Code gives each tool
(:mod:`osiris.harness.hook_payloads`, which the benchmark's hook timings use too).
``python -m tests.clients.payloads`` rewrites the recorded sample in
``tests/clients/data/claude_code_hooks.json``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from osiris.harness.hook_payloads import tool_response as response_of

REPO = Path(__file__).resolve().parents[2]
TRACES = REPO / "datasets" / "traces" / "claude-code__tielec-ai-workflow-agent"
TRACE_271 = TRACES / "issue-271" / "04_implementation" / "execute" / "agent_log_raw.txt"
RECORDED = Path(__file__).with_name("data") / "claude_code_hooks.json"


@dataclass(frozen=True)
class TraceCall:
    """One tool call of a trace, with its result."""

    session_id: str
    cwd: str
    tool_use_id: str
    tool: str
    tool_input: dict[str, Any]
    output: str
    is_error: bool


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
    return str(content)


def trace_calls(path: Path) -> Iterator[TraceCall]:
    """The tool calls of a Claude Code stream-json trace, in order."""
    session, cwd, uses = "", "", {}
    for line in path.read_text("utf-8").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("type") == "system" and event.get("subtype") == "init":
            session, cwd = event["session_id"], event["cwd"]
        message = event.get("message") or {}
        for block in message.get("content") or []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                uses[block["id"]] = block
            elif block.get("type") == "tool_result" and block["tool_use_id"] in uses:
                use = uses[block["tool_use_id"]]
                yield TraceCall(session, cwd, use["id"], use["name"], use["input"],
                                _text(block.get("content")), bool(block.get("is_error")))


def tool_response(call: TraceCall) -> Any:
    """``tool_response`` as Claude Code gives it for ``call``'s tool."""
    return response_of(call.tool, call.tool_input, call.output)


def pre_payload(call: TraceCall, session: str | None = None) -> dict[str, Any]:
    """The PreToolUse payload of ``call``."""
    return {"session_id": session or call.session_id, "cwd": call.cwd,
            "hook_event_name": "PreToolUse", "permission_mode": "default",
            "transcript_path": f"/home/dev/.claude/projects/p/{call.session_id}.jsonl",
            "tool_name": call.tool, "tool_input": call.tool_input,
            "tool_use_id": call.tool_use_id}


def post_payload(call: TraceCall, session: str | None = None) -> dict[str, Any]:
    """The PostToolUse payload of ``call`` (PostToolUseFailure when it failed)."""
    doc = pre_payload(call, session)
    if call.is_error:
        doc.update(hook_event_name="PostToolUseFailure", error=call.output)
    else:
        doc.update(hook_event_name="PostToolUse", tool_response=tool_response(call))
    return doc


def as_mcp_call(call: TraceCall, tool: str) -> TraceCall:
    """The same output served by a tool of another MCP server."""
    return TraceCall(call.session_id, call.cwd, call.tool_use_id, tool,
                     {"url": call.tool_input.get("url", "")}, call.output, call.is_error)


def recorded_sample() -> dict[str, dict[str, Any]]:
    """One call per tool kind (first of each in issue-271 and the other traces), plus an
    MCP tool: the WebFetch output of the traces served as ``mcp__fetch__fetch``."""
    sample: dict[str, dict[str, Any]] = {}
    for path in sorted(TRACES.rglob("agent_log_raw.txt")):
        for call in trace_calls(path):
            if call.tool == "WebFetch" and "mcp" not in sample:
                mcp = as_mcp_call(call, "mcp__fetch__fetch")
                sample["mcp"] = {"pre": pre_payload(mcp), "post": post_payload(mcp)}
            if call.tool in ("Bash", "Read", "Edit", "Grep") and not call.is_error \
                    and call.tool not in sample:
                sample[call.tool] = {"pre": pre_payload(call), "post": post_payload(call)}
    return dict(sorted(sample.items()))


def main() -> int:
    """Rewrite the recorded sample."""
    RECORDED.parent.mkdir(exist_ok=True)
    RECORDED.write_text(json.dumps(recorded_sample(), ensure_ascii=False, indent=1) + "\n",
                        "utf-8")
    sys.stderr.write(f"wrote {RECORDED}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
