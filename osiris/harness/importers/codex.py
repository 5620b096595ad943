"""Codex CLI transcripts: ``codex exec --json`` logs and ``~/.codex/sessions`` rollouts.

See :mod:`osiris.harness.importers.traces` for what is recorded (responses, task prompts,
user prompts, compactions).

Rollouts from 0.114 to 0.169 hold the model's items as ``response_item`` records: calls
(``function_call``: ``exec_command``, ``write_stdin``, ``shell``, ``shell_command``,
``update_plan``, ``view_image``, MCP tools; ``custom_tool_call``: ``apply_patch``;
``local_shell_call``; ``tool_search_call``) and their outputs, messages and reasoning.
An output is what the model received: since about 0.130 a text with a header (``Process
exited with code N``, ``Exit code: N``), before that a JSON object with ``output`` and
``metadata.exit_code``. ``compacted`` records mark where Codex compacted its history;
``event_msg`` records carry token counts and the prompts as typed; ``session_meta`` and
``turn_context`` the version, working directory and model. Records that never reach the
model (:data:`BOOKKEEPING`: ``world_state``, ``token_usage_record``, …) are passed over.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from osiris.harness.importers.records import (
    Compaction,
    Trace,
    TraceStep,
    UserPrompt,
    content_text,
    json_lines,
)


@dataclass
class _CodexResponses:
    """Which model response issued each call of a Codex log."""

    response: int = -1
    in_flight: set[str] = field(default_factory=set)
    by_item: dict[str, int] = field(default_factory=dict)
    after_output: bool = True
    """Rollouts: a tool output or user message came since the last model item."""
    last_total_usage: Any = None
    """Rollouts: the session's running token total at the last ``token_count``."""

    def started(self, item_id: str) -> None:
        """``exec --json``: a call started; overlapping calls share one response."""
        if not self.in_flight:
            self.response += 1
        self.in_flight.add(item_id)
        self.by_item[item_id] = self.response

    def completed(self, item_id: str) -> int:
        """The response of a completed call (one never announced is a response of its own)."""
        self.in_flight.discard(item_id)
        if item_id not in self.by_item:
            if not self.in_flight:
                self.response += 1
            self.by_item[item_id] = self.response
        return self.by_item[item_id]

    def model_item(self) -> int:
        """Rollouts: reasoning, messages and calls between two outputs are one response."""
        if self.after_output:
            self.response += 1
            self.after_output = False
        return self.response


_CALL_ITEMS = ("command_execution", "file_change", "mcp_tool_call")
_CONTEXT_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md")
_CLIENT_MESSAGE = re.compile(r"\s*<([a-z_]+)>.*</\1>\s*", re.DOTALL)
"""A user message the client wrote whole inside one tag (``<turn_aborted>``,
``<user_shell_command>``, ``<environment_context>``…)."""
BOOKKEEPING = frozenset({"world_state", "token_usage_record"})
"""Rollout records that never reach the model (0.169: a duplicate of ``token_count``, the
thread's settings)."""
_QUIET_ITEMS = frozenset({"ghost_snapshot", "web_search_call", "compaction",
                          "compaction_summary"})
"""Rollout items with nothing for the replay: a git snapshot, a search the provider ran
(its results are not logged), an encrypted compaction summary."""
_EXIT = re.compile(r"^(?:Process exited with code|Exit code:) (-?\d+)$", re.MULTILINE)


def import_codex(path: Path, text: str) -> Trace:
    """One Codex CLI transcript (``exec --json`` or rollout file)."""
    trace = Trace(source=str(path), format="codex-cli")
    pending: dict[str, tuple[str, dict[str, Any], int]] = {}
    responses = _CodexResponses()
    for event in json_lines(text, trace):
        kind = event.get("type")
        if kind == "item.started":
            item = event.get("item")
            if isinstance(item, dict) and item.get("type") in _CALL_ITEMS:
                responses.started(str(item.get("id")))
            continue
        if kind in ("thread.started", "turn.started", "item.updated", "error"):
            continue
        if kind == "turn.completed":
            if isinstance(event.get("usage"), dict):
                trace.usage.append(dict(event["usage"]))
            trace.meta["end_state"] = "turn.completed"
            continue
        if kind in _ROLLOUT_RECORDS:
            _rollout_record(trace, str(kind), event.get("payload"), pending, responses)
            continue
        if kind != "item.completed":
            trace.skip(f"event:{kind}")
            continue
        item = event.get("item")
        if not isinstance(item, dict):
            trace.skip("malformed_event")
            continue
        itype = item.get("type")
        if itype == "command_execution":
            exit_code = item.get("exit_code")
            trace.steps.append(TraceStep(
                len(trace.steps), "shell", {"command": str(item.get("command", ""))},
                str(item.get("aggregated_output") or ""),
                exit_code not in (0, None), str(item.get("id")),
                responses.completed(str(item.get("id")))))
        elif itype in ("agent_message", "reasoning"):
            trace.texts.append((len(trace.steps), str(item.get("text", ""))))
        elif itype == "file_change":
            changes = item.get("changes") or []
            trace.steps.append(TraceStep(len(trace.steps), "apply_patch", {"changes": changes},
                                         str(item.get("status", "")), False, str(item.get("id")),
                                         responses.completed(str(item.get("id")))))
        elif itype == "todo_list":
            continue
        else:
            trace.skip(f"item:{itype}")
    return trace


_ROLLOUT_RECORDS = frozenset({"session_meta", "turn_context", "response_item", "event_msg",
                              "compacted", *BOOKKEEPING})


def _rollout_record(trace: Trace, kind: str, payload: Any,
                    pending: dict[str, tuple[str, dict[str, Any], int]],
                    responses: _CodexResponses) -> None:
    """One record of a rollout file (``~/.codex/sessions``)."""
    if kind in ("session_meta", "turn_context"):
        if isinstance(payload, dict) and payload.get("instructions"):
            trace.system_prompt = str(payload["instructions"])
        if isinstance(payload, dict):
            _rollout_meta(trace, payload)
    elif kind == "response_item":
        _codex_rollout_item(trace, payload, pending, responses)
    elif kind == "event_msg":
        _codex_event_msg(trace, payload, responses)
    elif kind == "compacted":
        _compacted(trace, payload)


def _rollout_meta(trace: Trace, payload: dict[str, Any]) -> None:
    """Version, working directory, model and session id (the first value of each)."""
    for key, name in (("cwd", "cwd"), ("cli_version", "client_version"), ("model", "model"),
                      ("id", "session_id")):
        value = payload.get(key)
        if isinstance(value, str) and value and trace.meta.get(name) is None:
            trace.meta[name] = value


def _compacted(trace: Trace, payload: Any) -> None:
    """Codex replaced its history (by a summary, and the user's messages kept) here."""
    summary = payload.get("message") if isinstance(payload, dict) else None
    pre = trace.usage[-1].get("input_tokens") if trace.usage else None
    trace.compactions.append(Compaction(len(trace.steps), pre if isinstance(pre, int) else None,
                                        summary if isinstance(summary, str) else ""))


def _codex_event_msg(trace: Trace, payload: Any, responses: _CodexResponses) -> None:
    """Token counts, and the user's own prompt (``user_message``) of a rollout file."""
    if not isinstance(payload, dict):
        return
    if payload.get("type") == "token_count":
        info = payload.get("info")
        if isinstance(info, dict) and isinstance(info.get("last_token_usage"), dict):
            # Codex repeats a count when only its rate limits changed: one per response.
            total = info.get("total_token_usage")
            if total is None or total != responses.last_total_usage:
                trace.usage.append(dict(info["last_token_usage"]))
            responses.last_total_usage = total
    elif payload.get("type") == "user_message" and isinstance(payload.get("message"), str) \
            and trace.meta.get("task_prompt_from") != "user_message":
        # The first prompt as the user typed it wins over a user message guessed from items.
        trace.task_prompt = payload["message"]
        trace.meta["task_prompt_from"] = "user_message"


def _codex_rollout_item(trace: Trace, payload: Any,
                        pending: dict[str, tuple[str, dict[str, Any], int]],
                        responses: _CodexResponses) -> None:
    """One ``response_item`` of a Codex rollout file (``~/.codex/sessions``)."""
    if not isinstance(payload, dict):
        trace.skip("malformed_event")
        return
    ptype = payload.get("type")
    if ptype in ("function_call", "custom_tool_call", "local_shell_call", "tool_search_call"):
        raw_args = payload.get("arguments") or payload.get("input") or payload.get("action")
        if isinstance(raw_args, str):
            try:
                args = json.loads(raw_args)
            except ValueError:
                args = {"input": raw_args}
        else:
            args = raw_args if isinstance(raw_args, dict) else {}
        if not isinstance(args, dict):
            args = {"input": args}
        name = payload.get("name") or ("tool_search" if ptype == "tool_search_call" else ptype)
        pending[str(payload.get("call_id"))] = (str(name), args, responses.model_item())
    elif ptype in ("function_call_output", "custom_tool_call_output", "tool_search_output"):
        responses.after_output = True
        call_id = str(payload.get("call_id"))
        if call_id not in pending:
            trace.skip("result_without_call")
            return
        tool, args, response = pending.pop(call_id)
        raw = payload.get("tools") if ptype == "tool_search_output" else payload.get("output")
        output, is_error = _rollout_output(raw)
        trace.steps.append(TraceStep(len(trace.steps), tool, args, output, is_error, call_id,
                                     response))
    elif ptype == "message":
        role = payload.get("role")
        if role == "assistant":
            responses.model_item()
            trace.texts.append((len(trace.steps), content_text(payload.get("content"))))
        elif role in ("system", "developer") and trace.system_prompt is None:
            trace.system_prompt = content_text(payload.get("content"))
        elif role == "user":
            opening = responses.response < 0
            responses.after_output = True
            content = content_text(payload.get("content"))
            trace.user_prompts.append(UserPrompt(len(trace.steps), content,
                                                 _user_kind(content), opening))
            if not trace.task_prompt and not content.lstrip().startswith(_CONTEXT_PREFIXES):
                trace.task_prompt = content
    elif ptype == "reasoning":
        responses.model_item()
    elif ptype not in _QUIET_ITEMS:
        trace.skip(f"item:{ptype}")


def _user_kind(text: str) -> str:
    """``client`` for what Codex writes in the user's name (environment context, AGENTS.md,
    an interruption notice), else ``typed``."""
    if text.lstrip().startswith(_CONTEXT_PREFIXES) or _CLIENT_MESSAGE.fullmatch(text):
        return "client"
    return "typed"


def _rollout_output(raw: Any) -> tuple[str, bool]:
    """What the model received of a call, and whether the call failed."""
    if isinstance(raw, str):
        return _text_output(raw)
    if isinstance(raw, list):
        return _content_items(raw), False
    if isinstance(raw, dict):
        if isinstance(raw.get("content"), str):  # early rollouts: {content, success}
            return raw["content"], raw.get("success") is False
        return str(raw.get("output", raw)), False
    return "" if raw is None else str(raw), False


def _text_output(raw: str) -> tuple[str, bool]:
    """A text output: a header (``Process exited with code N``) since about 0.130, a JSON
    object with ``output`` and ``metadata.exit_code`` before."""
    try:
        parsed = json.loads(raw)
    except ValueError:
        return raw, _failed(raw)
    if isinstance(parsed, dict) and "output" in parsed:
        meta = parsed.get("metadata") or {}
        code = meta.get("exit_code") if isinstance(meta, dict) else None
        return str(parsed["output"]), code not in (0, None)
    return raw, False


def _content_items(raw: list[Any]) -> str:
    """Content items (``view_image``, MCP results): the text parts; an image is sent as an
    image, not as text, and its data URL is no text the model reads."""
    parts = []
    for item in raw:
        if isinstance(item, dict) and item.get("type") in ("input_image", "image"):
            parts.append("[image]")
        elif isinstance(item, dict) and "text" in item:
            parts.append(str(item["text"]))
        elif not isinstance(item, dict) or item.get("type") not in ("input_text", "text"):
            parts.append(json.dumps(item, ensure_ascii=False))
    return "\n".join(parts)


def _failed(text: str) -> bool:
    """Whether a text output's header (0.130 and later) says the command failed."""
    found = _EXIT.search(text[:400])
    return found is not None and found.group(1) != "0"
