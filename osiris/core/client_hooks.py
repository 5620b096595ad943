"""Client hooks: a client's hook JSON in, OSIRIS's verdict out, in the client's format.

Claude Code runs hooks before and after each tool call. A PreToolUse hook reads
``{"session_id", "cwd", "hook_event_name", "tool_name", "tool_input", "tool_use_id"}``
(plus ``agent_id`` and ``agent_type`` for a call from inside a subagent)
and may answer ``{"hookSpecificOutput": {"hookEventName": "PreToolUse",
"permissionDecision": "allow"|"deny"|"ask", "permissionDecisionReason": ...,
"additionalContext": ...}}``; a PostToolUse hook also gets ``tool_response``
(PostToolUseFailure gets ``error`` instead). This module is pure: it parses those
payloads, turns a tool response into the text OSIRIS observes, and maps a precheck
answer to a decision:

============================  =====================================================
precheck verdict              Claude Code decision
============================  =====================================================
allow                         no decision (the user's own permission rules apply)
warn                          no decision, the warning as ``additionalContext``
suggest_alternative           ``deny``, the reason names the alternative (a ref to
                              recall instead of re-reading)
require_approval              ``ask``, with the reason
block                         ``deny``, with the required action
============================  =====================================================

OSIRIS never answers ``allow``: that would skip the user's permission prompt, and
OSIRIS not objecting is not the user consenting. Two exceptions keep OSIRIS from costing
the agent: an exact duplicate of a ``Read`` passes (the client needs the read before an
edit, and OSIRIS cannot see whether the first one is still in the prompt), and the
PostToolUse answer never carries prune advice (the client owns its history).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from osiris.errors import InvalidInputError

CLIENTS = ("claude-code", "codex")
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
MAX_REASON_CHARS = 600


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


def _clip(text: str) -> str:
    return text if len(text) <= MAX_REASON_CHARS else text[:MAX_REASON_CHARS - 1] + "…"


def _alternative_text(alternative: dict[str, Any] | None) -> str:
    if not alternative:
        return ""
    if alternative.get("op") == "recall" and alternative.get("ref"):
        return (f" Instead: osiris_recall(ref={alternative['ref']!r}) — the output is "
                "already stored.")
    if alternative.get("instead"):
        return f" Instead: {alternative['instead']}."
    return " Instead: " + json.dumps(alternative, ensure_ascii=False, sort_keys=True) + "."


REREAD_TOOLS = frozenset({"Read"})
"""Tools a client must be let to run again: Claude Code edits only a file it has read,
and after a compaction the earlier read may have left the prompt, which OSIRIS cannot
see; denying the re-read made the next edit fail (the real-client benchmark)."""


def objects(output: dict[str, Any]) -> bool:
    """Whether a PreToolUse output denies the call or asks the user."""
    return output.get("hookSpecificOutput", {}).get("permissionDecision") in ("deny", "ask")


def with_context(output: dict[str, Any], context: str) -> dict[str, Any]:
    """``output`` with ``context`` added for the model (a windowed read's outline and
    ref; never clipped)."""
    inner = dict(output.get("hookSpecificOutput") or {"hookEventName": PRE_EVENT})
    inner["additionalContext"] = "\n".join(filter(None, (inner.get("additionalContext"),
                                                          context)))
    return {**output, "hookSpecificOutput": inner}


def pre_tool_use_decision(answer: dict[str, Any], note: str | None = None,
                          tool: str | None = None) -> dict[str, Any]:
    """Claude Code's PreToolUse output for a precheck answer (``{}``: no objection);
    ``note`` is context the agent should get whatever the verdict. An exact duplicate
    of a :data:`REREAD_TOOLS` call passes here (OSIRIS's re-read check, which knows
    whether the first result is still in the prompt, is routing's)."""
    verdict = answer.get("verdict", "allow")
    found = [str(r) for r in answer.get("reasons", ())]
    if (tool in REREAD_TOOLS and verdict == "suggest_alternative" and found
            and all(r.startswith("loopguard:exact_duplicate") for r in found)):
        verdict, found = "allow", []
    reasons = "; ".join(found)
    head = f"OSIRIS {verdict}: {reasons}" if reasons else f"OSIRIS {verdict}"
    out: dict[str, Any] = {"hookEventName": PRE_EVENT}
    if note:
        out["additionalContext"] = note
    if verdict == "allow":
        return {"hookSpecificOutput": out} if note else {}
    if verdict == "warn":
        out["additionalContext"] = _clip(" ".join(filter(None, (note, head))))
    elif verdict == "suggest_alternative":
        out["permissionDecision"] = "deny"
        out["permissionDecisionReason"] = _clip(head + "."
                                                + _alternative_text(answer.get("alternative")))
    elif verdict == "require_approval":
        out["permissionDecision"] = "ask"
        out["permissionDecisionReason"] = _clip(head)
    elif verdict == "block":
        action = answer.get("required_action")
        out["permissionDecision"] = "deny"
        out["permissionDecisionReason"] = _clip(
            head + (f". Required first: {action}" if action else ""))
    else:
        raise InvalidInputError(f"unknown precheck verdict {verdict!r}")
    return {"hookSpecificOutput": out}


def post_tool_use_output(answer: dict[str, Any], event: str,
                         note: str | None = None) -> dict[str, Any]:
    """Claude Code's PostToolUse output for an observe answer: quiet unless LoopGuard or
    the context pressure has something the agent should hear (or ``note`` is given)."""
    notes = [note] if note else []
    loop = answer.get("loop")
    patterns = loop.get("patterns", []) if isinstance(loop, dict) else []
    for pattern in patterns:
        if isinstance(pattern, dict) and pattern.get("level") in ("warn", "block"):
            notes.append(f"OSIRIS LoopGuard {pattern['level']} ({pattern.get('pattern')}): "
                         f"{pattern.get('message', '')}")
    # No prune advice: a client that runs hooks keeps its own history, and the agent
    # cannot drop anything from it; the advice only cost tokens (119 of 199 Claude Code
    # tool results carried it in the real-client benchmark).
    if not notes:
        return {}
    return {"hookSpecificOutput": {"hookEventName": event,
                                   "additionalContext": _clip(" ".join(notes))}}


def with_updated_input(output: dict[str, Any], updated: dict[str, Any],
                       client: str) -> dict[str, Any]:
    """``output`` with the call's input replaced (a large ``Read``'s window; Claude Code
    only, which applies ``updatedInput`` without a decision and matches its permission
    rules on the same ``file_path``). Never for Codex: Codex applies ``updatedInput``
    only together with ``permissionDecision: "allow"`` (0.169.0), and OSIRIS never
    answers allow — that would skip the approval the user's policy asks for."""
    inner = dict(output.get("hookSpecificOutput") or {"hookEventName": PRE_EVENT})
    if inner.get("permissionDecision") in ("deny", "ask") or client == "codex":
        return output  # an objection stands; nothing is rewritten
    inner["updatedInput"] = updated
    return {**output, "hookSpecificOutput": inner}


def pointer_decision(output: dict[str, Any], reason: str) -> dict[str, Any]:
    """``output`` turned into a denial whose reason points at an earlier result (a
    re-read OSIRIS is sure of): the model gets the pointer instead of a second copy."""
    inner = dict(output.get("hookSpecificOutput") or {"hookEventName": PRE_EVENT})
    inner["permissionDecision"] = "deny"
    inner["permissionDecisionReason"] = reason
    return {**output, "hookSpecificOutput": inner}


def replaced_output(text: str, client: str, event: str = "PostToolUse") -> dict[str, Any]:
    """The PostToolUse answer that replaces a tool's output with ``text``: Claude Code's
    ``updatedMCPToolOutput`` (MCP tools only); Codex's ``decision: "block"`` whose reason
    becomes the output (the only way in 0.169.0: ``updatedToolOutput`` is ignored)."""
    if client == "codex":
        return {"decision": "block", "reason": text}
    return {"hookSpecificOutput": {"hookEventName": event, "updatedMCPToolOutput": text}}


def with_replaced_shell_output(output: dict[str, Any], text: str, response: Any,
                               client: str) -> dict[str, Any]:
    """``output`` with a shell command's output replaced by ``text`` for the model.

    Claude Code (2.1.328): ``updatedToolOutput``, which it checks against the Bash tool's
    output shape, so it is the tool's own response with ``stdout`` replaced, ``stderr``
    emptied (the stored output holds both) and ``persistedOutputPath``/``Size`` left out
    (with them Claude Code would wrap the text in its own "output too large" notice).
    Codex (0.169.0): ``decision: "block"``, whose reason becomes the output."""
    if client == "codex":
        return {**output, "decision": "block", "reason": text}
    if not isinstance(response, dict) or not isinstance(response.get("stdout"), str):
        return output  # not the shape Claude Code would accept back: left as it is
    updated = {k: v for k, v in response.items() if not k.startswith("persisted")}
    updated.update(stdout=text, stderr="")
    inner = dict(output.get("hookSpecificOutput") or {"hookEventName": "PostToolUse"})
    inner["updatedToolOutput"] = updated
    return {**output, "hookSpecificOutput": inner}


def with_replaced_read_output(output: dict[str, Any], content: str, lines: int,
                              context: str, response: Any) -> dict[str, Any]:
    """``output`` with a whole-file ``Read`` shown as ``content`` (its first ``lines``
    lines) and ``context`` beside it.

    Claude Code (2.1.328) checks ``updatedToolOutput`` against the Read tool's output
    shape (``{"type": "text", "file": {filePath, content, numLines, startLine,
    totalLines}}``; a plain string is ignored) and numbers the lines from ``startLine``
    itself; its read-before-edit state comes from the read it made, so edits work."""
    if not isinstance(response, dict) or response.get("type") != "text" \
            or not isinstance(response.get("file"), dict):
        return output  # not the shape Claude Code would accept back: left as it is
    file = {**response["file"], "content": content, "numLines": lines, "startLine": 1}
    inner = dict(output.get("hookSpecificOutput") or {"hookEventName": "PostToolUse"})
    inner["updatedToolOutput"] = {**response, "file": file}
    inner["additionalContext"] = "\n".join(
        filter(None, (inner.get("additionalContext"), context)))
    return {**output, "hookSpecificOutput": inner}


def session_start_output(context: str) -> dict[str, Any]:
    """SessionStart's answer that puts ``context`` in front of the model."""
    return {"hookSpecificOutput": {"hookEventName": SESSION_EVENT,
                                   "additionalContext": context}}


def shown_text(output: dict[str, Any]) -> str:
    """The part of a hook's output that reaches the model (what OSIRIS books as its
    overhead): a decision's reason or the added context; nothing for no decision."""
    inner = output.get("hookSpecificOutput", {})
    parts = [str(inner[k]) for k in ("permissionDecisionReason", "additionalContext",
                                     "updatedMCPToolOutput") if inner.get(k)]
    updated = inner.get("updatedToolOutput")
    if isinstance(updated, dict) and updated.get("stdout"):
        parts.append(str(updated["stdout"]))
    if isinstance(updated, dict) and isinstance(updated.get("file"), dict):
        parts.append(str(updated["file"].get("content") or ""))
    if output.get("decision") == "block" and output.get("reason"):
        parts.append(str(output["reason"]))
    return "\n".join(parts)


def allow_with_warning(problem: str) -> dict[str, Any]:
    """The output when the hook itself failed: the tool goes ahead, the user is told."""
    return {"systemMessage": _clip(f"OSIRIS hook skipped ({problem}); the tool call was "
                                   "not checked")}


def decision_json(doc: dict[str, Any]) -> str:
    """The single line a hook writes on stdout."""
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
