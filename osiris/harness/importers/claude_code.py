"""Claude Code transcripts: Agent SDK stream-json and ``~/.claude/projects`` session files.

See :mod:`osiris.harness.importers.traces` for what is recorded (responses, task prompts,
compactions) and how masked tool ids are paired.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from osiris.harness.importers.records import (
    Compaction,
    Trace,
    TraceStep,
    block_text,
    json_lines,
    real_id,
)


@dataclass
class _ClaudeCall:
    tool: str
    args: dict[str, Any]
    call_id: str | None
    response: int
    output: str | None = None
    is_error: bool = False


@dataclass
class _ClaudeCalls:
    """Calls and results of a Claude Code transcript, paired as they arrive.

    Calls are kept in a list, in order: masked ids (all alike) must not collapse them.
    """

    calls: list[_ClaudeCall] = field(default_factory=list)
    by_id: dict[str, list[int]] = field(default_factory=dict)
    first_open: int = 0
    texts: list[tuple[int, str]] = field(default_factory=list)  # position = calls seen
    compactions: list[tuple[int, int | None, str]] = field(default_factory=list)
    awaiting_summary: bool = False
    prompt_parts: list[str] = field(default_factory=list)
    assistant_seen: bool = False
    response: int = -1
    response_id: str | None = None
    user_since_assistant: bool = True

    def start_message(self, kind: str, message: dict[str, Any]) -> None:
        """Track which model response an assistant event belongs to."""
        if kind != "assistant":
            self.user_since_assistant = True
            return
        message_id = real_id(message.get("id"))
        if message_id is not None:
            new = message_id != self.response_id
        else:
            # No usable id: a response ends when the client answers it (a user event).
            new = self.user_since_assistant
        if new:
            self.response += 1
        self.response_id = message_id
        self.user_since_assistant = False
        self.assistant_seen = True

    def add_text(self, kind: str, text: str, event: dict[str, Any]) -> None:
        """Prose: the agent's own, the task prompt, or a compaction summary."""
        if kind == "assistant":
            self.texts.append((len(self.calls), text))
        elif self.awaiting_summary or event.get("isCompactSummary") is True:
            if not self.awaiting_summary:  # a session file's summary without a boundary
                self.compactions.append((len(self.calls), None, ""))
            position, pre_tokens, _ = self.compactions[-1]
            self.compactions[-1] = (position, pre_tokens, text)
            self.awaiting_summary = False
        elif not self.assistant_seen:
            self.prompt_parts.append(text)

    def add_blocks(self, trace: Trace, kind: str, content: list[Any],
                   event: dict[str, Any]) -> None:
        texts = []
        for block in content:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if kind == "assistant" and btype == "tool_use":
                raw_input = block.get("input")
                args: dict[str, Any] = raw_input if isinstance(raw_input, dict) else {}
                call_id = real_id(block.get("id"))
                if call_id is not None:
                    self.by_id.setdefault(call_id, []).append(len(self.calls))
                self.calls.append(_ClaudeCall(str(block.get("name", "unknown")), args,
                                              call_id, self.response))
            elif btype == "text":
                texts.append(str(block.get("text", "")))
            elif kind == "user" and btype == "tool_result":
                self.add_result(trace, block)
        if texts:
            self.add_text(kind, "\n".join(texts), event)

    def add_result(self, trace: Trace, block: dict[str, Any]) -> None:
        call_id = real_id(block.get("tool_use_id"))
        same = self.by_id.get(call_id, []) if call_id is not None else []
        output, is_error = block_text(block.get("content")), bool(block.get("is_error"))
        if len(same) == 1 and self.calls[same[0]].output is None:
            call = self.calls[same[0]]
        else:
            # Masked, unknown or repeated id: the oldest call that has no output yet.
            while self.first_open < len(self.calls) and \
                    self.calls[self.first_open].output is not None:
                self.first_open += 1
            if self.first_open == len(self.calls):
                trace.skipped["result_without_call"] += 1
                return
            call = self.calls[self.first_open]
            if not is_error:
                call = self._parallel_fit(call, output)
        call.output, call.is_error = output, is_error

    def _parallel_fit(self, oldest: _ClaudeCall, output: str) -> _ClaudeCall:
        """Among the open calls of the oldest open call's response, the first whose tool
        fits ``output``, else ``oldest``.

        Parallel calls are answered as they finish, not in order (the bundled logs show
        it), and a masked log cannot say which answer is whose. Two tools' successful
        answers have a shape no other tool's has: Read's numbered lines and TodoWrite's
        confirmation. Calls of one tool answered out of order stay paired in order.
        """
        shape = _result_shape(output)
        for call in self.calls[self.first_open:]:
            if call.response != oldest.response:
                break
            if call.output is None and _TOOL_SHAPES.get(call.tool, "other") == shape:
                return call
        return oldest

    def assemble(self, trace: Trace) -> None:
        kept_before = [0]
        for call in self.calls:
            if call.output is not None:
                trace.steps.append(TraceStep(len(trace.steps), call.tool, call.args,
                                             call.output, call.is_error, call.call_id,
                                             call.response))
            else:
                trace.skipped["call_without_result"] += 1
            kept_before.append(len(trace.steps))
        # Re-base positions from "calls seen" to "steps kept".
        trace.texts = [(kept_before[pos], t) for pos, t in self.texts]
        trace.compactions = [Compaction(kept_before[pos], pre, summary)
                             for pos, pre, summary in self.compactions]
        trace.task_prompt = "\n\n".join(p for p in self.prompt_parts if p.strip())


_TOOL_SHAPES = {"Read": "numbered", "TodoWrite": "todos"}
_NUMBERED = re.compile(r"\s*\d+→")


def _result_shape(output: str) -> str:
    """The shape of a successful Claude Code tool answer (see ``_parallel_fit``)."""
    if _NUMBERED.match(output):
        return "numbered"
    if output.startswith("Todos have been modified successfully"):
        return "todos"
    return "other"


def _claude_meta(trace: Trace, event: dict[str, Any], calls: _ClaudeCalls) -> None:
    if event.get("type") == "system" and event.get("subtype") == "init":
        trace.tools_declared = [str(t) for t in event.get("tools", [])]
        trace.meta.update(model=event.get("model"),
                          client_version=event.get("claude_code_version"),
                          session_id=event.get("session_id"), cwd=event.get("cwd"))
    elif event.get("type") == "system" and event.get("subtype") == "compact_boundary":
        # Stream-json says compact_metadata/pre_tokens; session files camelCase.
        meta = event.get("compact_metadata") or event.get("compactMetadata") or {}
        pre = meta.get("pre_tokens", meta.get("preTokens")) if isinstance(meta, dict) else None
        calls.compactions.append((len(calls.calls), pre if isinstance(pre, int) else None, ""))
        calls.awaiting_summary = True
    elif event.get("type") == "result":
        trace.meta["end_state"] = event.get("subtype")
        if isinstance(event.get("usage"), dict):
            trace.meta["final_usage"] = event["usage"]


def import_claude_code(path: Path, text: str) -> Trace:
    """One Claude Code transcript (stream-json or session file)."""
    trace = Trace(source=str(path), format="claude-code")
    calls = _ClaudeCalls()
    for event in json_lines(text, trace):
        kind = event.get("type")
        if kind in ("system", "result"):
            _claude_meta(trace, event, calls)
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
        calls.start_message(str(kind), message)
        if kind == "assistant" and isinstance(message.get("usage"), dict):
            usage = dict(message["usage"])
            usage["message_id"] = message.get("id")
            usage["response"] = calls.response
            # One API response streams as several events that repeat its usage.
            if not trace.usage or trace.usage[-1].get("response") != calls.response:
                trace.usage.append(usage)
        content = message.get("content")
        if isinstance(content, str):
            calls.add_text(str(kind), content, event)
        elif isinstance(content, list):
            calls.add_blocks(trace, str(kind), content, event)
        else:
            trace.skipped["malformed_event"] += 1
    calls.assemble(trace)
    return trace
