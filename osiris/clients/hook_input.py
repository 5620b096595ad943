"""A client's hook input: the JSON Claude Code (and Codex, which took its format) sends
a hook, validated into one :class:`HookCall`.

Claude Code runs hooks before and after each tool call. A PreToolUse hook reads
``{"session_id", "cwd", "hook_event_name", "tool_name", "tool_input", "tool_use_id"}``
(plus ``agent_id`` and ``agent_type`` for a call from inside a subagent); a PostToolUse
hook also gets ``tool_response`` (PostToolUseFailure gets ``error`` instead); Codex adds
``transcript_path``. This module parses those payloads and turns a tool response into
the text OSIRIS observes. What a hook answers is the client adapter's
(:mod:`osiris.clients.adapters`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from osiris.errors import InvalidInputError

EVENTS = ("pre-tool-use", "post-tool-use", "session-start")
PRE_EVENT, POST_EVENTS = "PreToolUse", ("PostToolUse", "PostToolUseFailure")
SESSION_EVENT = "SessionStart"
_EXPECTED = {"pre-tool-use": (PRE_EVENT,), "post-tool-use": POST_EVENTS,
             "session-start": (SESSION_EVENT,)}
# OSIRIS's own tools, under any server name: never prechecked or observed by the hooks
# (the agent already called OSIRIS; observing the call would count it twice).
OWN_TOOL = re.compile(r"^mcp__.+__osiris_(plan|precheck|observe|recall|checkpoint|handoff"
                      r"|call|hook)$|^mcp__.+__osiris\.(plan|precheck|observe|recall|checkpoint"
                      r"|handoff|hook)$")
_PATH_KEYS = ("file_path", "notebook_path", "path")


@dataclass(frozen=True)
class HookCall:
    """One hook payload, validated."""

    event: str  # PreToolUse, PostToolUse or PostToolUseFailure
    session_id: str
    cwd: str | None
    tool: str
    tool_input: dict[str, Any]
    tool_use_id: str | None
    response: Any = None
    error: str | None = None
    source: str | None = None
    """SessionStart only: ``startup``, ``resume``, ``clear`` or ``compact``."""
    transcript_path: str | None = None
    """The client's record of the session (Codex's rollout holds a command's exit status
    and fuller output: :mod:`osiris.clients.shell_output`)."""
    agent_id: str | None = None
    """The subagent that made the call (Claude Code sets ``agent_id`` only for a call
    from inside a subagent, the same id while that subagent lives or is resumed); None
    for the session's main agent. Each has a context of its own: a result one of them
    got is not in the other's prompt."""

    @property
    def own_tool(self) -> bool:
        """A call to OSIRIS itself (left alone)."""
        return bool(OWN_TOOL.match(self.tool))

    @property
    def path(self) -> str | None:
        """The file the call names, if any."""
        for key in _PATH_KEYS:
            value = self.tool_input.get(key)
            if isinstance(value, str) and value:
                return value
        return None


def parse_hook_input(raw: bytes | str, event: str) -> HookCall:
    """The payload of hook ``event`` (pre-tool-use or post-tool-use), or InvalidInputError
    saying what is wrong."""
    if event not in EVENTS:
        raise InvalidInputError(f"unknown hook event {event!r}: use one of "
                                + ", ".join(EVENTS))
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"hook input is not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise InvalidInputError("hook input must be a JSON object")
    name = doc.get("hook_event_name")
    expected = _EXPECTED[event]
    if name is None:
        name = expected[0]
    if name not in expected:
        raise InvalidInputError(f"hook_event_name {name!r} is not a {event} event "
                                f"(expected {' or '.join(expected)})")
    session, tool = doc.get("session_id"), doc.get("tool_name")
    if not isinstance(session, str) or not session:
        raise InvalidInputError("session_id is missing or not a string")
    if event == "session-start":
        source, cwd = doc.get("source"), doc.get("cwd")
        return HookCall(event=SESSION_EVENT, session_id=session, tool="", tool_input={},
                        cwd=cwd if isinstance(cwd, str) else None, tool_use_id=None,
                        source=source if isinstance(source, str) else None)
    if not isinstance(tool, str) or not tool:
        raise InvalidInputError("tool_name is missing or not a string")
    tool_input = doc.get("tool_input", {})
    if tool_input is None:
        tool_input = {}
    if not isinstance(tool_input, dict):
        raise InvalidInputError("tool_input must be an object")
    cwd, use_id, error = doc.get("cwd"), doc.get("tool_use_id"), doc.get("error")
    transcript = doc.get("transcript_path")
    agent = doc.get("agent_id")
    if agent is not None and not isinstance(agent, str):
        raise InvalidInputError("agent_id must be a string (the subagent's id)")
    return HookCall(event=str(name), session_id=session, tool=tool, tool_input=tool_input,
                    cwd=cwd if isinstance(cwd, str) else None,
                    tool_use_id=use_id if isinstance(use_id, str) else None,
                    response=doc.get("tool_response"),
                    error=None if error is None else str(error), agent_id=agent or None,
                    transcript_path=transcript if isinstance(transcript, str) else None)


HOOK_FIELDS = ("hook_event_name", "session_id", "cwd", "tool_name", "tool_input",
               "tool_use_id", "tool_response", "error", "agent_id", "transcript_path")
"""The hook input fields an ``mcp_tool`` hook passes to ``osiris_hook``, each as
``"${field}"``. Claude Code 2.1.328 fills in a string as it is, an object or array as
its compact JSON text (``JSON.stringify``), and a missing field as the empty string."""


def hook_input(fields: dict[str, Any]) -> bytes:
    """The hook input JSON a command hook would have read, rebuilt from what an
    ``mcp_tool`` hook passed (:data:`HOOK_FIELDS`). An empty string is a missing field.
    ``tool_input`` is the JSON text of an object (or the object). ``tool_response`` is
    taken as an object or array when its text is exactly that value's compact JSON, as
    Claude Code writes one; any other text is a string result and keeps its bytes. The
    one case the text cannot tell apart: a tool whose result is a string that is itself
    compact JSON of an object or array is observed as that object or array."""
    doc: dict[str, Any] = {}
    for name in HOOK_FIELDS:
        value = fields.get(name)
        if value is None or value == "":
            continue
        if name == "tool_input" and isinstance(value, str):
            value = _json_value(value)
            if not isinstance(value, dict):
                raise InvalidInputError("tool_input is not the JSON of an object")
        elif name == "tool_response" and isinstance(value, str):
            parsed = _json_value(value)
            if isinstance(parsed, dict | list) and _compact(parsed) == value:
                value = parsed
        elif not isinstance(value, str) and name not in ("tool_response", "tool_input"):
            raise InvalidInputError(f"{name} must be a string (the hook's \"${{{name}}}\")")
        doc[name] = value
    try:
        return json.dumps(doc, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError("the hook input holds a lone surrogate (not valid UTF-8 "
                                "text)") from None


def _json_value(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _compact(value: Any) -> str | None:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (ValueError, RecursionError):
        return None


def response_text(call: HookCall) -> tuple[str, bool]:
    """What the tool returned, as the text OSIRIS observes, and whether it failed."""
    if call.event == "PostToolUseFailure" or call.error is not None:
        return call.error or _flatten(call.response), True
    response = call.response
    failed = False
    if isinstance(response, dict):
        failed = bool(response.get("is_error") or response.get("isError")
                      or response.get("interrupted"))
        code = response.get("exit_code", response.get("returnCode"))
        if isinstance(code, int) and code != 0:
            failed = True
    return _flatten(response), failed


def _flatten(response: Any) -> str:
    """Claude Code's tool_response shapes (Bash, Read, Grep, Glob, MCP content) as text."""
    if response is None:
        return ""
    if isinstance(response, str):
        return response
    if isinstance(response, list):  # MCP content blocks
        parts = [b.get("text", "") if isinstance(b, dict) and b.get("type") == "text"
                 else _flatten(b) for b in response]
        return "\n".join(p for p in parts if p)
    text = _flatten_object(response) if isinstance(response, dict) else None
    if text is not None:
        return text
    return json.dumps(response, ensure_ascii=False, sort_keys=True, default=str)


def _flatten_object(response: dict[str, Any]) -> str | None:
    """Bash (stdout/stderr), Read (file.content), Grep (content or filenames), MCP
    results; None for shapes without a text of their own (dumped as JSON)."""
    if "stdout" in response or "stderr" in response:
        out, err = str(response.get("stdout") or ""), str(response.get("stderr") or "")
        return out + ("\n" + err if out and err else err)
    file = response.get("file")
    inner: Any = None
    if isinstance(file, dict) and isinstance(file.get("content"), str):
        inner = file["content"]
    elif isinstance(response.get("content"), str | list):
        inner = response["content"]
    elif isinstance(response.get("filenames"), list):
        inner = "\n".join(str(f) for f in response["filenames"])
    elif "structuredContent" in response or "result" in response:
        inner = response.get("structuredContent", response.get("result"))
    return None if inner is None else _flatten(inner)
