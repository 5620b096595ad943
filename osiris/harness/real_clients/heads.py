"""What a client puts in front of the user's words: the head of its first request.

A head is everything the model receives that the user did not type: the system part,
the tool definitions as sent (compact JSON of the ``tools`` array; Codex's default model
gets them as an ``additional_tools`` input item instead), and every part the client adds
to the messages (environment blocks, system reminders, MCP server instructions, a hook's
added context). Counted in the project's encoding, part by part, after
:class:`Neutraliser` has replaced what changes from run to run (dates, scratch paths).

Only counts, sizes, names and labels leave this module: the texts themselves are the
vendors' and stay in the request log.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from osiris.core.tokens import TokenCounter
from osiris.harness.real_clients.model_script import ANTHROPIC, OPENAI, ModelRequest, result_text

_MCP_NAME = re.compile(r"\bmcp__[A-Za-z0-9_-]+")
_LEADING_TAG = re.compile(r"\s*<([A-Za-z_][\w -]*?)>")
_LEADING_HEADING = re.compile(r"\s*(#{1,3} [^\n]{1,60})")
_DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")
FIXED_DATE = "2026-01-01"
VOLATILE = {
    # Codex heads every shell result with a random chunk id and the wall time.
    "codex chunk id": (re.compile(r"(?m)^Chunk ID: [0-9a-f]+$"), "Chunk ID: 000000"),
    "codex wall time": (re.compile(r"(?m)^Wall time: [0-9.]+ seconds$"),
                        "Wall time: 0.0000 seconds"),
    # Claude Code names the file a large output was saved to by session id and a
    # random id.
    "claude session id": (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-"
                                      r"[0-9a-f]{12}"), "00000000-0000-0000-0000-000000000000"),
    # OSIRIS's hooks name the session's task by a random id; a fixed id of the same
    # shape (a random-looking one: zeros would tokenise shorter) stands in.
    "osiris task id": (re.compile(r"\bt_[0-9a-f]{24}\b"), "t_5d1c0e9a7b3f46e28a9c4d71"),
    "claude tool-result id": (re.compile(r"(?<=/tool-results/)[A-Za-z0-9_-]+(?=\.txt)"),
                              "000000000"),
    # Claude Code names a command it runs in the background by a random id (``b`` and
    # eight letters or digits) in its answer, its task notification and its output file.
    "claude background task id": (re.compile(r"(?<=background with ID: )b[a-z0-9]{8}\b"
                                             r"|(?<=<task-id>)b[a-z0-9]{8}(?=</task-id>)"
                                             r"|(?<=/tasks/)b[a-z0-9]{8}(?=\.output)"),
                                  "b7k2m9x4q"),
    # ``mktemp`` (and ``mktemp -d``) under the session's TMPDIR ends a name with random
    # letters and digits; the scratch root is already "/scratch" here.
    "mktemp name": (re.compile(r"(/scratch/tmp/[\w-]+(?:\.[\w-]+)*\.)(?=[a-z]*[A-Z0-9])"
                               r"[A-Za-z0-9]{6,10}(?![\w.])"), r"\1XXXXXX"),
}
"""What else changes from run to run: name → (pattern, fixed stand-in)."""


@dataclass(frozen=True)
class Size:
    """Tokens (in the named encoding) and UTF-8 bytes of some text."""

    tokens: int = 0
    bytes: int = 0

    def __add__(self, other: Size) -> Size:
        return Size(self.tokens + other.tokens, self.bytes + other.bytes)

    def __sub__(self, other: Size) -> Size:
        return Size(self.tokens - other.tokens, self.bytes - other.bytes)

    def as_json(self) -> dict[str, int]:
        """``{"tokens": …, "bytes": …}``."""
        return {"tokens": self.tokens, "bytes": self.bytes}


@dataclass
class Neutraliser:
    """Replaces the parts of a prompt that change between runs of the same session.

    ``literals`` maps exact strings (the scratch root, the checkout's path) to fixed
    stand-ins; dates become :data:`FIXED_DATE`; the :data:`VOLATILE` patterns their
    stand-ins. Every replacement is counted, so the data file can say what was
    neutralised and how often."""

    literals: Mapping[str, str] = field(default_factory=dict)
    replaced: Counter[str] = field(default_factory=Counter)

    def __call__(self, text: str) -> str:
        for literal, stand_in in sorted(self.literals.items(), key=lambda kv: -len(kv[0])):
            if literal and literal in text:
                self.replaced[f"path {stand_in}"] += text.count(literal)
                text = text.replace(literal, stand_in)
        text, dates = _DATE.subn(FIXED_DATE, text)
        if dates:
            self.replaced["date"] += dates
        for name, (pattern, stand_in) in VOLATILE.items():
            text, found = pattern.subn(stand_in, text)
            if found:
                self.replaced[name] += found
        return text


@dataclass(frozen=True)
class HeadPart:
    """One part a client added to the messages (not the user's prompt)."""

    role: str
    label: str
    """The part's leading tag or heading (``<system-reminder>``, ``# Environment``),
    or ``text``: a label, never the content."""
    size: Size

    def as_json(self) -> dict[str, Any]:
        """The part for the data file."""
        return {"role": self.role, "label": self.label, **self.size.as_json()}


@dataclass(frozen=True)
class Head:
    """The measured head of one first request."""

    model: str
    system: Size
    tools: Size
    parts: list[HeadPart]
    tool_names: list[str]
    """Tools defined in the request, in order (Codex namespaces as ``ns.tool``)."""
    mcp_names_in_text: list[str]
    """``mcp__…`` names the head mentions outside the definitions."""
    deferred_tool_names: list[str]
    """Tools the head lists by name only, to be loaded with a tool search."""
    request_bytes: int
    lines: Counter[str] = field(repr=False, default_factory=Counter)
    """Every neutralised line of the system and message parts (for deltas between
    configurations; never written out)."""

    @property
    def messages(self) -> Size:
        """All added message parts together."""
        total = Size()
        for part in self.parts:
            total += part.size
        return total

    @property
    def total(self) -> Size:
        """System + tool definitions + added message parts."""
        return self.system + self.tools + self.messages

    @property
    def mcp_tools_defined(self) -> list[str]:
        """MCP tools whose definitions were sent."""
        return [name for name in self.tool_names if "mcp__" in name]

    @property
    def mcp_tools_deferred(self) -> bool:
        """Whether MCP tools are listed by name only (no definition sent)."""
        listed = [n for n in self.deferred_tool_names if n.startswith("mcp__")]
        return bool(listed) and not self.mcp_tools_defined

    def as_json(self) -> dict[str, Any]:
        """The head for the data file (sizes, names and labels only)."""
        return {"model": self.model, "system": self.system.as_json(),
                "tools": self.tools.as_json(), "messages": self.messages.as_json(),
                "total": self.total.as_json(), "parts": [p.as_json() for p in self.parts],
                "tool_names": self.tool_names, "mcp_tools_defined": self.mcp_tools_defined,
                "mcp_names_in_text": self.mcp_names_in_text,
                "deferred_tool_names": self.deferred_tool_names,
                "mcp_tools_deferred": self.mcp_tools_deferred,
                "first_request_bytes": self.request_bytes}


def size_of(text: str, counter: TokenCounter) -> Size:
    """Tokens and bytes of ``text``."""
    return Size(counter.count(text), len(text.encode("utf-8")))


def label_of(text: str) -> str:
    """A part's leading ``<tag>`` or markdown heading, else ``text``."""
    tag = _LEADING_TAG.match(text)
    if tag:
        return f"<{tag.group(1).strip()}>"
    heading = _LEADING_HEADING.match(text)
    return heading.group(1).strip() if heading else "text"


def measure_head(request: ModelRequest, prompt: str, counter: TokenCounter,
                 neutralise: Neutraliser) -> Head:
    """Measure the head of ``request``: all but the first block equal to ``prompt``."""
    body = request.body
    anthropic = request.api == ANTHROPIC
    system_texts = [neutralise(t) for t in _system_texts(body.get("system" if anthropic
                                                                   else "instructions"))]
    definitions = _definitions(body)
    tools_text = neutralise(json.dumps(definitions, separators=(",", ":"),
                                       ensure_ascii=False)) if definitions else ""
    parts: list[HeadPart] = []
    texts = list(system_texts)
    skipped_prompt = False
    for role, raw in _message_texts(body.get("input" if request.api == OPENAI else "messages")):
        if not skipped_prompt and role == "user" and raw.strip() == prompt.strip():
            skipped_prompt = True  # the user's own words are not head
            continue
        text = neutralise(raw)
        texts.append(text)
        parts.append(HeadPart(role, label_of(text), size_of(text, counter)))
    system = Size()
    for text in system_texts:
        system += size_of(text, counter)
    prose = "\n".join(texts)
    lines = Counter(line for text in texts for line in text.splitlines() if line.strip())
    return Head(model=str(body.get("model", "")), system=system,
                tools=size_of(tools_text, counter) if tools_text else Size(),
                parts=parts, tool_names=list(_tool_names(definitions)),
                mcp_names_in_text=sorted(set(_MCP_NAME.findall(prose))),
                deferred_tool_names=_deferred_names(prose),
                request_bytes=len(json.dumps(body, separators=(",", ":"),
                                             ensure_ascii=False).encode("utf-8")),
                lines=lines)


def delta(head: Head, bare: Head, counter: TokenCounter) -> dict[str, Any]:
    """What ``head`` adds over ``bare``: per component; the tools added or removed by
    name; and the text lines (system and message parts) only in ``head`` or only in
    ``bare``, so an added sentence counts as its own tokens wherever the client put it."""
    added = head.lines - bare.lines
    removed = bare.lines - head.lines
    added_text = "\n".join(line for line, n in sorted(added.items()) for _ in range(n))
    removed_text = "\n".join(line for line, n in sorted(removed.items()) for _ in range(n))
    return {"system": (head.system - bare.system).as_json(),
            "tools": (head.tools - bare.tools).as_json(),
            "messages": (head.messages - bare.messages).as_json(),
            "total": (head.total - bare.total).as_json(),
            "text_lines_added": {"count": sum(added.values()),
                                 **size_of(added_text, counter).as_json()},
            "text_lines_removed": {"count": sum(removed.values()),
                                   **size_of(removed_text, counter).as_json()},
            "tools_added": [n for n in head.tool_names if n not in bare.tool_names],
            "tools_removed": [n for n in bare.tool_names if n not in head.tool_names]}


@dataclass(frozen=True)
class Added:
    """One text the client appended between two prompts."""

    role: str
    text: str
    tool_result: bool


def added_texts(previous: ModelRequest, current: ModelRequest) -> list[Added]:
    """What the client appended to the conversation between two prompts, apart from
    the model's own turn: the tool result and anything a hook or the client added
    beside it (reminders, a hook's added context, a truncation notice)."""
    key = "messages" if current.api == ANTHROPIC else "input"
    before = previous.body.get(key) or []
    found: list[Added] = []
    for item in (current.body.get(key) or [])[len(before):]:
        if not isinstance(item, dict) or _is_model_turn(item):
            continue
        role = str(item.get("role") or item.get("type") or "?")
        if item.get("type") in {"function_call_output", "custom_tool_call_output"}:
            found.append(Added("tool", result_text(item.get("output")), True))
            continue
        content = item.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for block in blocks or []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                found.append(Added(role, result_text(block.get("content")), True))
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                found.append(Added(role, block["text"], False))
    return found


def added_since(previous: ModelRequest, current: ModelRequest, counter: TokenCounter,
                neutralise: Neutraliser) -> list[HeadPart]:
    """Sizes of :func:`added_texts`, labelled (``tool_result`` for the result)."""
    parts = []
    for added in added_texts(previous, current):
        text = neutralise(added.text)
        label = "tool_result" if added.tool_result else label_of(text)
        parts.append(HeadPart(added.role, label, size_of(text, counter)))
    return parts


def _is_model_turn(item: Mapping[str, Any]) -> bool:
    return item.get("role") == "assistant" or item.get("type") in {
        "function_call", "custom_tool_call", "local_shell_call", "reasoning"}


def _system_texts(system: Any) -> list[str]:
    if isinstance(system, str):
        return [system] if system else []
    return [b["text"] for b in system or [] if isinstance(b, dict)
            and isinstance(b.get("text"), str)]


def _definitions(body: Mapping[str, Any]) -> list[Any]:
    """The tool definitions sent: ``tools``, plus Codex's ``additional_tools`` items."""
    found = list(body.get("tools") or [])
    for item in body.get("input") or []:
        if isinstance(item, dict) and item.get("type") == "additional_tools":
            found.extend(item.get("tools") or [])
    return found


def _tool_names(definitions: Iterable[Any], prefix: str = "") -> Iterator[str]:
    for tool in definitions:
        if not isinstance(tool, dict):
            continue
        name = str(tool.get("name") or tool.get("type") or "?")
        if tool.get("type") == "namespace":
            yield from _tool_names(tool.get("tools") or [], f"{prefix}{name}.")
        else:
            yield prefix + name


def _message_texts(items: Any) -> Iterator[tuple[str, str]]:
    """(role, text) of every text block of a message list or a Responses input list."""
    for item in items or []:
        if not isinstance(item, dict):
            continue
        role = str(item.get("role") or item.get("type") or "?")
        content = item.get("content")
        if isinstance(content, str):
            yield role, content
            continue
        for block in content or []:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                yield role, block["text"]


def _deferred_names(prose: str) -> list[str]:
    """Names listed one per line after a client's "deferred tools" sentence (Claude
    Code: "…deferred tools are now available via ToolSearch…" then one name a line;
    Codex: "Deferred tool namespaces:" then ``- name: description`` lines)."""
    names: list[str] = []
    for match in re.finditer(r"(?im)^.*\bdeferred tool.*$", prose):
        for line in prose[match.end():].split("\n")[1:]:
            name = re.match(r"[A-Za-z][\w.-]*(?=$|:)", line.strip().removeprefix("- "))
            if name is None:
                break
            names.append(name.group(0))
    return names
