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

    def later_text(self, step_index: int) -> str:
        """Everything the agent wrote after receiving step ``step_index``'s output."""
        parts = [json.dumps(s.args, ensure_ascii=False) for s in self.steps[step_index + 1:]]
        parts += [t for at, t in self.texts if at > step_index]
        return "\n".join(parts)


def json_lines(text: str, trace: Trace) -> Iterable[dict[str, Any]]:
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
