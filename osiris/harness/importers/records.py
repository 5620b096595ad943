"""The records every trace importer produces, and the parsing helpers they share."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

_MASKS = ("REDACTED",)
"""A tool or message id holding one of these is a mask, not an id."""


def real_id(value: Any) -> str | None:
    """``value`` when it is a usable id (a non-empty string that is not a mask)."""
    if isinstance(value, str) and value and not any(m in value for m in _MASKS):
        return value
    return None


@dataclass(frozen=True)
class TraceStep:
    """One tool call and the output the agent received."""

    i: int
    tool: str
    args: dict[str, Any]
    output: str
    is_error: bool
    call_id: str | None = None
    response: int = -1
    """Index of the model response that issued the call (-1: the log cannot tell)."""


@dataclass(frozen=True)
class Compaction:
    """The client compacted its history before step ``step`` (from the log)."""

    step: int
    pre_tokens: int | None
    """The provider's count just before (Claude Code ``compact_metadata.pre_tokens``)."""
    summary: str
    """The text the client put in place of the history ("" if not logged)."""


@dataclass(frozen=True)
class UserPrompt:
    """One user message of a session, and where it falls among the tool calls.

    Interactive sessions hold many: the real-client stage plays them one by one, and the
    replay puts each in the history where the user sent it."""

    step: int
    """It came before ``steps[step]`` (``len(steps)``: after the last call)."""
    text: str
    """The message as the model received it."""
    kind: str = "typed"
    """``typed`` (the user wrote it), ``command`` (a slash command the user ran, as Claude
    Code logs it: ``<command-name>``…) or ``client`` (written by the client for the user:
    attached files, a local command's output, environment context, AGENTS.md, an
    interruption or task notice)."""
    opening: bool = False
    """Sent before the model's first response (the opening of the session; what the
    replay takes of it is :attr:`Trace.task_prompt`)."""


PROMPT_KINDS = ("typed", "command", "client")


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
    task_prompt: str = ""
    """The task as the agent received it (its first user message), "" if unknown."""
    task_prompt_source: str = ""
    """Where it came from: "log", "prompt.txt" (a file beside the log) or ""."""
    demonstration: str = ""
    """SWE-agent's demonstration (a worked example sent before the task), else ""."""
    compactions: list[Compaction] = field(default_factory=list)
    companions: list[str] = field(default_factory=list)
    """Files beside the transcript the task prompt was built from (provenance)."""
    user_prompts: list[UserPrompt] = field(default_factory=list)
    """Every user message the log holds, in order, the opening ones included ([] for logs
    that do not carry them: stream-json, ``exec --json``)."""
    subagents: list[Trace] = field(default_factory=list)
    """Sub-agents' own conversations (Claude Code ``Task``/``Agent``), each a trace of its
    own: a separate context the main agent never saw (its ``meta["parent_call_id"]`` names
    the call that started it)."""
    first_skipped_line: dict[str, int] = field(default_factory=dict)
    """The line (1-based) of the first record skipped for each reason of :attr:`skipped`."""
    line: int = 0
    """The line being read (while importing), for :meth:`skip`."""

    def skip(self, reason: str) -> None:
        """Count a record the importer could not use, and remember where the first was."""
        self.skipped[reason] += 1
        self.first_skipped_line.setdefault(reason, self.line)

    def later_text(self, step_index: int) -> str:
        """Everything the agent wrote after receiving step ``step_index``'s output."""
        parts = [json.dumps(s.args, ensure_ascii=False) for s in self.steps[step_index + 1:]]
        parts += [t for at, t in self.texts if at > step_index]
        return "\n".join(parts)


def json_lines(text: str, trace: Trace) -> Iterable[dict[str, Any]]:
    """Each JSON object of a JSONL text; ``trace.line`` says which line it is."""
    for number, line in enumerate(text.splitlines(), 1):
        trace.line = number
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:
            trace.skip("malformed_line")
            continue
        if not isinstance(event, dict):
            trace.skip("malformed_line")
            continue
        yield event


def block_text(content: Any) -> str:
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


def content_text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return block_text(content)
