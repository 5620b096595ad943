"""Codex CLI transcripts: ``codex exec --json`` logs and ``~/.codex/sessions`` rollouts.

See :mod:`osiris.harness.importers.traces` for what is recorded (responses, task prompts).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from osiris.harness.importers.records import Trace, TraceStep, content_text, json_lines


@dataclass
class _CodexResponses:
    """Which model response issued each call of a Codex log."""

    response: int = -1
    in_flight: set[str] = field(default_factory=set)
    by_item: dict[str, int] = field(default_factory=dict)
    after_output: bool = True
    """Rollouts: a tool output or user message came since the last model item."""

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
        if kind in ("session_meta", "turn_context"):
            payload = event.get("payload") or {}
            if isinstance(payload, dict) and payload.get("instructions"):
                trace.system_prompt = str(payload["instructions"])
            if isinstance(payload, dict) and isinstance(payload.get("cwd"), str):
                trace.meta.setdefault("cwd", payload["cwd"])
            continue
        if kind == "response_item":
            _codex_rollout_item(trace, event.get("payload"), pending, responses)
            continue
        if kind == "event_msg":
            _codex_event_msg(trace, event.get("payload"))
            continue
        if kind != "item.completed":
            trace.skipped[f"event:{kind}"] += 1
            continue
        item = event.get("item")
        if not isinstance(item, dict):
            trace.skipped["malformed_event"] += 1
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
            trace.skipped[f"item:{itype}"] += 1
    return trace


def _codex_event_msg(trace: Trace, payload: Any) -> None:
    """Token counts, and the user's own prompt (``user_message``) of a rollout file."""
    if not isinstance(payload, dict):
        return
    if payload.get("type") == "token_count":
        info = payload.get("info")
        if isinstance(info, dict) and isinstance(info.get("last_token_usage"), dict):
            trace.usage.append(dict(info["last_token_usage"]))
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
        trace.skipped["malformed_event"] += 1
        return
    ptype = payload.get("type")
    if ptype in ("function_call", "custom_tool_call", "local_shell_call"):
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
        pending[str(payload.get("call_id"))] = (str(payload.get("name") or ptype), args,
                                                responses.model_item())
    elif ptype in ("function_call_output", "custom_tool_call_output"):
        responses.after_output = True
        call_id = str(payload.get("call_id"))
        if call_id not in pending:
            trace.skipped["result_without_call"] += 1
            return
        tool, args, response = pending.pop(call_id)
        raw = payload.get("output")
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
            responses.after_output = True
            content = content_text(payload.get("content"))
            if not trace.task_prompt and not content.lstrip().startswith(_CONTEXT_PREFIXES):
                trace.task_prompt = content
    elif ptype == "reasoning":
        responses.model_item()
    else:
        trace.skipped[f"item:{ptype}"] += 1


def _rollout_output(raw: Any) -> tuple[str, bool]:
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except ValueError:
            return raw, False
        if isinstance(parsed, dict) and "output" in parsed:
            meta = parsed.get("metadata") or {}
            code = meta.get("exit_code") if isinstance(meta, dict) else None
            return str(parsed["output"]), code not in (0, None)
        return raw, False
    if isinstance(raw, dict):
        return str(raw.get("output", raw)), False
    return "" if raw is None else str(raw), False
