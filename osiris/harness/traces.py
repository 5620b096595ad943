"""Importers of real agent transcripts: the ordered (tool, args, output) steps.

Formats (datasets/traces/NORMALIZATION.md): Claude Code / Agent SDK stream-json
(and the session files Claude Code keeps under ``~/.claude/projects``), Codex CLI
``exec --json`` (and its rollout files), mini-swe-agent ``*.traj.json`` and
SWE-agent ``*.traj``. Every importer is tolerant: malformed lines, unknown event
types, results without a call and truncated documents are skipped and counted in
:attr:`Trace.skipped`, never raised.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMATS = ("claude-code", "codex-cli", "mini-swe-agent", "swe-agent")


@dataclass(frozen=True)
class TraceStep:
    """One tool call and the output the agent received."""

    i: int
    tool: str
    args: dict[str, Any]
    output: str
    is_error: bool
    call_id: str | None = None


@dataclass
class Trace:
    """One imported session."""

    source: str
    format: str
    steps: list[TraceStep] = field(default_factory=list)
    texts: list[tuple[int, str]] = field(default_factory=list)
    """Assistant prose, each with the index of the step it precedes (len(steps) = after all)."""
    system_prompt: str | None = None
    tools_declared: list[str] = field(default_factory=list)
    usage: list[dict[str, Any]] = field(default_factory=list)
    """Provider-reported usage records, in order (as found in the transcript)."""
    meta: dict[str, Any] = field(default_factory=dict)
    skipped: Counter[str] = field(default_factory=Counter)

    def later_text(self, step_index: int) -> str:
        """Everything the agent wrote after receiving step ``step_index``'s output."""
        parts = [json.dumps(s.args, ensure_ascii=False) for s in self.steps[step_index + 1:]]
        parts += [t for at, t in self.texts if at > step_index]
        return "\n".join(parts)


_JSONL_MARKERS = (
    ("codex-cli", ('"thread.started"', '"item.', '"turn.started"', '"session_meta"',
                   '"response_item"')),
    ("claude-code", ('"system"', '"assistant"', '"user"', '"summary"', '"sessionId"')),
)


def detect_format(path: Path, head: str) -> str | None:
    """Guess a transcript's format from its first characters."""
    stripped = head.lstrip()
    if stripped.startswith("{") and "\n" in stripped:
        # A session file may open with bookkeeping lines (Claude Code's
        # file-history-snapshot, queue-operation): look at the first few.
        for line in stripped.split("\n")[:8]:
            for fmt, markers in _JSONL_MARKERS:
                if any(m in line for m in markers):
                    return fmt
    if '"trajectory_format"' in head or path.name.endswith(".traj.json"):
        return "mini-swe-agent"
    if '"trajectory"' in head or path.suffix == ".traj":
        return "swe-agent"
    if stripped.startswith("{") and '"messages"' in head:
        return "mini-swe-agent"
    return None


def load_trace(path: Path, fmt: str | None = None) -> Trace:
    """Import one transcript file (format detected when not given)."""
    raw = path.read_bytes()
    text = raw.decode("utf-8", errors="replace")
    fmt = fmt or detect_format(path, text[:20000])
    if fmt == "claude-code":
        return _claude(path, text)
    if fmt == "codex-cli":
        return _codex(path, text)
    if fmt == "mini-swe-agent":
        return _mini(path, text)
    if fmt == "swe-agent":
        return _swe(path, text)
    trace = Trace(source=str(path), format="unknown")
    trace.skipped["unknown_format"] += 1
    return trace


def _json_lines(text: str, trace: Trace) -> Iterable[dict[str, Any]]:
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:
            trace.skipped["malformed_line"] += 1
            continue
        if not isinstance(event, dict):
            trace.skipped["malformed_line"] += 1
            continue
        yield event


def _block_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(parts)
    return "" if content is None else json.dumps(content, ensure_ascii=False)


@dataclass
class _ClaudeCalls:
    """Calls and results of a Claude Code transcript, paired as they arrive."""

    calls: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    results: dict[str, tuple[str, bool]] = field(default_factory=dict)
    texts: list[tuple[int, str]] = field(default_factory=list)  # position = calls seen

    def add_blocks(self, trace: Trace, kind: str, content: list[Any]) -> None:
        for block in content:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if kind == "assistant" and btype == "tool_use":
                call_id = str(block.get("id") or f"anon-{len(self.order)}")
                raw_input = block.get("input")
                args: dict[str, Any] = raw_input if isinstance(raw_input, dict) else {}
                self.calls[call_id] = (str(block.get("name", "unknown")), args)
                self.order.append(call_id)
            elif kind == "assistant" and btype == "text":
                self.texts.append((len(self.order), str(block.get("text", ""))))
            elif kind == "user" and btype == "tool_result":
                self.add_result(trace, block)

    def add_result(self, trace: Trace, block: dict[str, Any]) -> None:
        call_id = str(block.get("tool_use_id") or "")
        if call_id not in self.calls or call_id in self.results:
            # Masked ids: pair with the oldest call that has no output yet.
            unmatched = [c for c in self.order if c not in self.results]
            if not unmatched:
                trace.skipped["result_without_call"] += 1
                return
            call_id = unmatched[0]
        self.results[call_id] = (_block_text(block.get("content")), bool(block.get("is_error")))

    def assemble(self, trace: Trace) -> None:
        kept_before = [0]
        for call_id in self.order:
            if call_id in self.results:
                tool, args = self.calls[call_id]
                output, is_error = self.results[call_id]
                trace.steps.append(TraceStep(len(trace.steps), tool, args, output, is_error,
                                             call_id))
            else:
                trace.skipped["call_without_result"] += 1
            kept_before.append(len(trace.steps))
        # Re-base text positions from "calls seen" to "steps kept".
        trace.texts = [(kept_before[pos], t) for pos, t in self.texts]


def _claude_meta(trace: Trace, event: dict[str, Any]) -> None:
    if event.get("type") == "system" and event.get("subtype") == "init":
        trace.tools_declared = [str(t) for t in event.get("tools", [])]
        trace.meta.update(model=event.get("model"),
                          client_version=event.get("claude_code_version"),
                          session_id=event.get("session_id"))
    elif event.get("type") == "result":
        trace.meta["end_state"] = event.get("subtype")
        if isinstance(event.get("usage"), dict):
            trace.meta["final_usage"] = event["usage"]


def _claude(path: Path, text: str) -> Trace:
    trace = Trace(source=str(path), format="claude-code")
    calls = _ClaudeCalls()
    for event in _json_lines(text, trace):
        kind = event.get("type")
        if kind in ("system", "result"):
            _claude_meta(trace, event)
            continue
        if kind not in ("assistant", "user"):
            trace.skipped[f"event:{kind}"] += 1
            continue
        if event.get("isSidechain") is True or event.get("parent_tool_use_id"):
            # A sub-agent's own context (Task): not what the main agent paid for.
            trace.skipped["sidechain"] += 1
            continue
        message = event.get("message")
        if not isinstance(message, dict):
            trace.skipped["malformed_event"] += 1
            continue
        if kind == "assistant" and isinstance(message.get("usage"), dict):
            usage = dict(message["usage"])
            usage["message_id"] = message.get("id")
            # One API response streams as several events that repeat its usage.
            if not trace.usage or trace.usage[-1].get("message_id") != usage["message_id"]:
                trace.usage.append(usage)
        content = message.get("content")
        if isinstance(content, str):
            if kind == "assistant":
                calls.texts.append((len(calls.order), content))
        elif isinstance(content, list):
            calls.add_blocks(trace, str(kind), content)
        else:
            trace.skipped["malformed_event"] += 1
    calls.assemble(trace)
    return trace


def _codex(path: Path, text: str) -> Trace:
    trace = Trace(source=str(path), format="codex-cli")
    pending: dict[str, tuple[str, dict[str, Any]]] = {}
    for event in _json_lines(text, trace):
        kind = event.get("type")
        if kind in ("thread.started", "turn.started", "item.started", "item.updated", "error"):
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
            continue
        if kind == "response_item":
            _codex_rollout_item(trace, event.get("payload"), pending)
            continue
        if kind == "event_msg":
            payload = event.get("payload") or {}
            if isinstance(payload, dict) and payload.get("type") == "token_count":
                info = payload.get("info")
                if isinstance(info, dict) and isinstance(info.get("last_token_usage"), dict):
                    trace.usage.append(dict(info["last_token_usage"]))
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
                exit_code not in (0, None), str(item.get("id"))))
        elif itype in ("agent_message", "reasoning"):
            trace.texts.append((len(trace.steps), str(item.get("text", ""))))
        elif itype == "file_change":
            changes = item.get("changes") or []
            trace.steps.append(TraceStep(len(trace.steps), "apply_patch", {"changes": changes},
                                         str(item.get("status", "")), False, str(item.get("id"))))
        elif itype == "todo_list":
            continue
        else:
            trace.skipped[f"item:{itype}"] += 1
    return trace


def _codex_rollout_item(trace: Trace, payload: Any,
                        pending: dict[str, tuple[str, dict[str, Any]]]) -> None:
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
        pending[str(payload.get("call_id"))] = (str(payload.get("name") or ptype), args)
    elif ptype in ("function_call_output", "custom_tool_call_output"):
        call_id = str(payload.get("call_id"))
        if call_id not in pending:
            trace.skipped["result_without_call"] += 1
            return
        tool, args = pending.pop(call_id)
        raw = payload.get("output")
        output, is_error = _rollout_output(raw)
        trace.steps.append(TraceStep(len(trace.steps), tool, args, output, is_error, call_id))
    elif ptype == "message":
        if payload.get("role") == "assistant":
            trace.texts.append((len(trace.steps), _content_text(payload.get("content"))))
        elif payload.get("role") in ("system", "developer") and trace.system_prompt is None:
            trace.system_prompt = _content_text(payload.get("content"))
    elif ptype == "reasoning":
        return
    else:
        trace.skipped[f"item:{ptype}"] += 1


def _content_text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return _block_text(content)


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


_BASH_BLOCK = re.compile(r"```bash\s*\n(.*?)```", re.DOTALL)
_RETURNCODE = re.compile(r"<returncode>(-?\d+)</returncode>")


def _load_document(path: Path, text: str, trace: Trace) -> dict[str, Any] | None:
    try:
        doc = json.loads(text)
    except ValueError:
        trace.skipped["truncated_or_malformed_document"] += 1
        return None
    if not isinstance(doc, dict):
        trace.skipped["truncated_or_malformed_document"] += 1
        return None
    return doc


def _mini(path: Path, text: str) -> Trace:
    trace = Trace(source=str(path), format="mini-swe-agent")
    doc = _load_document(path, text, trace)
    if doc is None:
        return trace
    info = doc["info"] if isinstance(doc.get("info"), dict) else {}
    trace.meta.update(end_state=info.get("exit_status"), client_version=info.get("mini_version"),
                      instance_id=doc.get("instance_id"))
    messages: list[Any] = doc["messages"] if isinstance(doc.get("messages"), list) else []
    if messages and isinstance(messages[0], dict) and messages[0].get("role") == "system":
        trace.system_prompt = str(messages[0].get("content", ""))
    pending: tuple[str, dict[str, Any]] | None = None
    for message in messages[2:]:
        if not isinstance(message, dict):
            trace.skipped["malformed_message"] += 1
            continue
        role, content = message.get("role"), _block_text(message.get("content"))
        if role == "assistant":
            blocks = _BASH_BLOCK.findall(content)
            prose = _BASH_BLOCK.sub("", content).strip()
            if prose:
                trace.texts.append((len(trace.steps), prose))
            if len(blocks) == 1:
                pending = ("bash", {"command": blocks[0].strip()})
            else:
                # The harness answers a malformed action with a format-error message; that
                # message enters the prompt like any output, so it is a step of its own.
                pending = ("format_error", {"actions": [b.strip() for b in blocks]})
        elif role in ("user", "tool"):
            if pending is None:
                continue
            code = _RETURNCODE.search(content)
            is_error = (code is not None and code.group(1) != "0") or "timed out" in content[:300]
            trace.steps.append(TraceStep(len(trace.steps), pending[0], pending[1], content,
                                         is_error))
            pending = None
    return trace


def _swe(path: Path, text: str) -> Trace:
    trace = Trace(source=str(path), format="swe-agent")
    doc = _load_document(path, text, trace)
    if doc is None:
        return trace
    info = doc["info"] if isinstance(doc.get("info"), dict) else {}
    trace.meta.update(end_state=info.get("exit_status"))
    history = doc.get("history") if isinstance(doc.get("history"), list) else []
    if history and isinstance(history[0], dict) and history[0].get("role") == "system":
        trace.system_prompt = str(history[0].get("content", ""))
    for entry in doc.get("trajectory") or []:
        if not isinstance(entry, dict) or "action" not in entry:
            trace.skipped["malformed_step"] += 1
            continue
        action = str(entry.get("action", "")).strip()
        thought = str(entry.get("thought") or "").strip()
        if thought:
            trace.texts.append((len(trace.steps), thought))
        tool = action.split(None, 1)[0] if action else "unknown"
        observation = str(entry.get("observation") or "")
        is_error = observation.lstrip().startswith(("Traceback", "Error", "Usage:"))
        trace.steps.append(TraceStep(len(trace.steps), tool, {"command": action}, observation,
                                     is_error))
    return trace


def find_traces(root: Path) -> list[Path]:
    """Transcript files under ``root`` (sorted, provenance files excluded)."""
    found = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix not in (".md", ".py") and not path.name.startswith("."):
            found.append(path)
    return found
