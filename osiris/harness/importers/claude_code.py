"""Claude Code transcripts: Agent SDK stream-json and ``~/.claude/projects`` session files.

See :mod:`osiris.harness.importers.traces` for what is recorded (responses, task prompts,
compactions, user prompts) and how masked tool ids are paired.

Session files from 1.0 to 2.1 mix the main conversation with records that are not part
of it:

* **Sub-agents** (``Task``, later ``Agent``) have a context of their own. 1.0 writes their
  records inline with ``isSidechain: true`` (each conversation a chain of ``parentUuid``
  from a root of its own); 2.1 wraps each of their messages in a ``progress`` record
  (``data.type == "agent_progress"``, ``data.agentId``, ``parentToolUseID``);
  stream-json marks them ``parent_tool_use_id``. They become :attr:`Trace.subagents`,
  never steps of the main agent, whose context they never entered.
* **Bookkeeping** the model never sees (:data:`BOOKKEEPING`: ``file-history-snapshot``,
  ``queue-operation``, other ``progress``, titles and summaries of the session list) is
  passed over without being counted as skipped.

Files recorded by Entire (entire.io) are cumulative checkpoints: a session up to a point,
so its last call may have no result yet (counted as ``call_without_result``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from osiris.harness.importers.records import (
    Compaction,
    Trace,
    TraceStep,
    UserPrompt,
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
    line: int = 0


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
    prompts: list[tuple[int, str, str, bool]] = field(default_factory=list)
    """User messages: (calls seen, text, kind, opening)."""
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
        else:
            self.prompts.append((len(self.calls), text, prompt_kind(text, event),
                                 not self.assistant_seen))
            if not self.assistant_seen:
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
                                              call_id, self.response, line=trace.line))
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
                trace.skip("result_without_call")
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
                trace.line = call.line
                trace.skip("call_without_result")
            kept_before.append(len(trace.steps))
        # Re-base positions from "calls seen" to "steps kept".
        trace.texts = [(kept_before[pos], t) for pos, t in self.texts]
        trace.compactions = [Compaction(kept_before[pos], pre, summary)
                             for pos, pre, summary in self.compactions]
        trace.user_prompts = [UserPrompt(kept_before[pos], text, kind, opening)
                              for pos, text, kind, opening in self.prompts]
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


_CLIENT_PREFIXES = ("<local-command-stdout>", "<local-command-stderr>",
                    "<local-command-caveat>", "Caveat: The messages below were generated",
                    "<task-notification>", "[Request interrupted by user",
                    "<user-prompt-submit-hook>", "<bash-stdout>", "<bash-stderr>",
                    "Operation stopped by hook:", "<system-reminder>")
_COMMAND_PREFIXES = ("<command-name>", "<command-message>", "<bash-input>")


def prompt_kind(text: str, event: dict[str, Any]) -> str:
    """``typed``, ``command`` or ``client`` (:attr:`UserPrompt.kind`) for a user message."""
    stripped = text.lstrip()
    if event.get("isMeta") is True or stripped.startswith(_CLIENT_PREFIXES):
        return "client"
    if stripped.startswith(_COMMAND_PREFIXES):
        return "command"
    return "typed"


BOOKKEEPING = frozenset({"file-history-snapshot", "queue-operation", "progress", "summary",
                         "custom-title", "agent-name", "last-prompt", "pr-link", "tag"})
"""Session-file records that never reach the model."""


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


def _session_meta(trace: Trace, event: dict[str, Any]) -> None:
    """What a session file's records say of the session (every record repeats it)."""
    for key, field_name in (("version", "client_version"), ("cwd", "cwd"),
                            ("sessionId", "session_id")):
        value = event.get(key)
        if isinstance(value, str) and value and trace.meta.get(field_name) is None:
            trace.meta[field_name] = value


@dataclass
class _Subagents:
    """Sub-agents' records, each conversation apart, in the order they started."""

    records: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    parent_call: dict[str, str | None] = field(default_factory=dict)
    chain: dict[str, str] = field(default_factory=dict)
    """Inline sidechains (1.0): each record's uuid → the conversation it belongs to."""
    lines: dict[str, int] = field(default_factory=dict)

    def add(self, key: str, event: dict[str, Any], parent_call: str | None, line: int) -> None:
        self.records.setdefault(key, []).append(event)
        self.parent_call.setdefault(key, parent_call)
        self.lines.setdefault(key, line)

    def take(self, event: dict[str, Any], line: int) -> bool:
        """Keep ``event`` if it is a sub-agent's; whether it was."""
        if event.get("type") == "progress":
            data = event.get("data")
            if not isinstance(data, dict) or data.get("type") != "agent_progress":
                return False
            inner = data.get("message")
            if isinstance(inner, dict):
                key = str(data.get("agentId") or event.get("parentToolUseID") or "agent")
                self.add(key, inner, real_id(event.get("parentToolUseID")), line)
            return True
        parent = event.get("parent_tool_use_id")
        if parent:  # stream-json
            self.add(str(parent), event, real_id(parent), line)
            return True
        if event.get("isSidechain") is True:
            # 1.0 writes sidechains inline: a root (no parent, or a parent outside any
            # sidechain) starts a conversation, its descendants follow it.
            uuid, parent_uuid = str(event.get("uuid")), event.get("parentUuid")
            found = self.chain.get(str(parent_uuid)) if parent_uuid else None
            key = found or f"sidechain-{len(self.records) + 1}"
            self.chain[uuid] = key
            self.add(key, event, None, line)
            return True
        return False

    def traces(self, main: Trace, calls: list[_ClaudeCall]) -> list[Trace]:
        """One trace per conversation; a 1.0 sidechain is matched to the ``Task`` call
        whose prompt opened it (its records do not name the call)."""
        by_prompt = {str(c.args.get("prompt")): c.call_id for c in calls
                     if c.call_id and isinstance(c.args.get("prompt"), str)}
        out = []
        for key, records in self.records.items():
            sub = Trace(source=f"{main.source}#{key}", format="claude-code")
            _read(sub, ((self.lines[key], r) for r in records), nested=True)
            parent = self.parent_call[key] or by_prompt.get(sub.task_prompt)
            sub.meta.update(agent_id=key, parent_call_id=parent,
                            first_line=self.lines[key])
            for name in ("client_version", "cwd", "session_id"):
                sub.meta.setdefault(name, main.meta.get(name))
            out.append(sub)
        return out


def import_claude_code(path: Path, text: str) -> Trace:
    """One Claude Code transcript (stream-json or session file)."""
    trace = Trace(source=str(path), format="claude-code")
    _read(trace, _numbered(json_lines(text, trace), trace))
    return trace


def _numbered(events: Iterable[dict[str, Any]], trace: Trace
              ) -> Iterator[tuple[int, dict[str, Any]]]:
    for event in events:
        yield trace.line, event


def _read(trace: Trace, events: Iterable[tuple[int, dict[str, Any]]], *,
          nested: bool = False) -> None:
    """Import ``events`` (each with its line) into ``trace``; a sub-agent's own records
    (``nested``) are read as a conversation of their own."""
    calls = _ClaudeCalls()
    subagents = _Subagents()
    for line, event in events:
        trace.line = line
        kind = event.get("type")
        if kind in ("system", "result"):
            _claude_meta(trace, event, calls)
            continue
        if not nested and subagents.take(event, line):
            continue
        if kind in BOOKKEEPING:
            continue
        if kind not in ("assistant", "user"):
            trace.skip(f"event:{kind}")
            continue
        message = event.get("message")
        if not isinstance(message, dict):
            trace.skip("malformed_event")
            continue
        _session_meta(trace, event)
        calls.start_message(str(kind), message)
        if kind == "assistant":
            if isinstance(message.get("model"), str) and message["model"] != "<synthetic>":
                trace.meta.setdefault("model", message["model"])
            if isinstance(message.get("usage"), dict):
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
            trace.skip("malformed_event")
    calls.assemble(trace)
    if not nested:
        trace.subagents = subagents.traces(trace, calls.calls)
