"""What the scripted model sees and says: requests, actions, scripts.

A :class:`Script` gets each prompt a client sends (:class:`ModelRequest`, either wire
API) and returns the next :data:`Action`: a :class:`ToolCall` or a :class:`FinalText`.
:class:`ScriptedTurns` plays a fixed list of actions, one per agent step; the readers
below (:func:`tool_results`, :func:`prompt_text`, …) let a script, or a measurement,
look into a request of either API the same way. The server that speaks the wire
protocols is :mod:`osiris.harness.real_clients.model_server`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

ANTHROPIC = "anthropic"
OPENAI = "openai"
CHAT = "chat"
"""OpenAI Chat Completions (litellm's ``openai/…`` models: mini-swe-agent)."""


@dataclass(frozen=True)
class ToolCall:
    """The model calls one tool: ``name`` with ``input``.

    ``input`` is a JSON object for function tools (both APIs), or a string for the
    Responses API's custom (freeform) tools, such as Codex's ``apply_patch`` and the
    ``exec`` tool of its code mode: sent as a ``custom_tool_call`` item."""

    name: str
    input: Mapping[str, Any] | str
    call_id: str | None = None
    """The id sent to the client (generated when None)."""


@dataclass(frozen=True)
class FinalText:
    """The model ends its turn with this text."""

    text: str


Action = ToolCall | FinalText


@dataclass(frozen=True)
class ModelRequest:
    """One prompt a client sent, as the script sees it."""

    index: int
    """Position in the server's log (0 for the first request of any kind)."""
    api: str
    """``anthropic``, ``openai`` (Responses) or ``chat`` (Chat Completions)."""
    path: str
    body: Mapping[str, Any]


class Script(Protocol):
    """What plays the model: the next action for each prompt."""

    def reply(self, request: ModelRequest) -> Action:
        """The action answering ``request`` (called from the server's threads)."""
        ...


def assistant_turns(request: ModelRequest) -> int:
    """How many model actions the conversation already holds: the step the script is at.

    Derived from the request itself rather than counted by the server, so a retried or
    duplicated request gets the same answer. Anthropic: assistant messages; OpenAI
    Responses: ``function_call`` and assistant ``message`` items of ``input``."""
    if request.api in (ANTHROPIC, CHAT):
        messages = request.body.get("messages")
        return sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant"
                   ) if isinstance(messages, list) else 0
    items = request.body.get("input")
    if not isinstance(items, list):
        return 0
    return sum(1 for item in items if isinstance(item, dict) and (
        item.get("type") in {"function_call", "custom_tool_call", "local_shell_call"}
        or (item.get("type") == "message" and item.get("role") == "assistant")))


def tool_names(request: ModelRequest) -> list[str]:
    """Names of the tools the request offers the model (both APIs; for Codex's
    ``additional_tools`` input items, the names of their namespaces)."""
    tools = list(_list(request.body.get("tools")))
    for item in _list(request.body.get("input")):
        if isinstance(item, dict) and item.get("type") == "additional_tools":
            tools.extend(_list(item.get("tools")))
    # Chat Completions nests each definition: {"type": "function", "function": {…}}
    tools = [t.get("function") if isinstance(t, dict) and isinstance(t.get("function"), dict)
             else t for t in tools]
    return [str(t.get("name")) for t in tools if isinstance(t, dict) and t.get("name")]


def is_agent_turn(request: ModelRequest) -> bool:
    """Whether the request is the agent's own loop rather than a side query.

    Side queries (a title, a summary, a command's prefix) come without tools; the agent's
    loop always offers its tools."""
    return bool(tool_names(request))


@dataclass
class ScriptedTurns:
    """Plays ``actions`` in order, one per agent step, then ``final``.

    The step is :func:`assistant_turns` of the request, so the script is stateless and
    thread-safe. Requests that are not agent turns (``is_agent``) get ``side_text``."""

    actions: Sequence[Action]
    final: str = "Done."
    side_text: str = "OK"
    is_agent: Callable[[ModelRequest], bool] = is_agent_turn

    def reply(self, request: ModelRequest) -> Action:
        if not self.is_agent(request):
            return FinalText(self.side_text)
        step = assistant_turns(request)
        return self.actions[step] if step < len(self.actions) else FinalText(self.final)


def tool_results(request: ModelRequest) -> list[str]:
    """The text of every tool result in the request, in order (both APIs).

    Anthropic: ``tool_result`` blocks of user messages (text parts joined); OpenAI:
    ``function_call_output`` / ``custom_tool_call_output`` items of ``input``."""
    found: list[str] = []
    if request.api == ANTHROPIC:
        for message in _list(request.body.get("messages")):
            for block in _list(message.get("content") if isinstance(message, dict) else None):
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    found.append(result_text(block.get("content")))
        return found
    if request.api == CHAT:
        return [text for text, _ in results_by_id(request).values()]
    for item in _list(request.body.get("input")):
        if isinstance(item, dict) and item.get("type") in {"function_call_output",
                                                             "custom_tool_call_output"}:
            found.append(result_text(item.get("output")))
    return found


def results_by_id(request: ModelRequest) -> dict[str, tuple[str, bool]]:
    """Every tool result of the request by the call id it answers: (text, is_error).

    Anthropic: ``tool_result`` blocks (``is_error`` as the client set it); OpenAI:
    ``function_call_output`` / ``custom_tool_call_output`` items (never marked)."""
    found: dict[str, tuple[str, bool]] = {}
    if request.api == ANTHROPIC:
        for message in _list(request.body.get("messages")):
            for block in _list(message.get("content") if isinstance(message, dict) else None):
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    found[str(block.get("tool_use_id"))] = (
                        result_text(block.get("content")), bool(block.get("is_error")))
        return found
    if request.api == CHAT:  # role "tool" messages, by tool_call_id (never marked)
        for message in _list(request.body.get("messages")):
            if isinstance(message, dict) and message.get("role") == "tool":
                found[str(message.get("tool_call_id"))] = (
                    result_text(message.get("content")), False)
        return found
    for item in _list(request.body.get("input")):
        if isinstance(item, dict) and item.get("type") in {"function_call_output",
                                                             "custom_tool_call_output"}:
            found[str(item.get("call_id"))] = (result_text(item.get("output")), False)
    return found


def last_user_text(request: ModelRequest) -> str:
    """The text of the last user message (either API), "" when the last item is not one."""
    items = _list(request.body.get("input" if request.api == OPENAI else "messages"))
    for item in reversed(items):
        if not isinstance(item, dict):
            continue
        if item.get("role") == "user":
            return "\n".join(_texts(item.get("content")))
        if item.get("role") in ("assistant", "tool") or item.get("type") in {
                "function_call", "custom_tool_call", "function_call_output",
                "custom_tool_call_output"}:
            return ""
    return ""


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def result_text(content: Any) -> str:
    """Text of a tool result's content, either API: a string, a list of text parts
    (joined by newlines), or an object holding either."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):  # Responses output may be {"content": [...]} or text
        return result_text(content.get("content", content.get("text", "")))
    parts = [p.get("text", "") for p in _list(content) if isinstance(p, dict)]
    return "\n".join(str(p) for p in parts)


def prompt_text(body: Mapping[str, Any]) -> str:
    """The model-visible text of a prompt, either API: system or instructions, the tool
    definitions (compact JSON), and every message's text, tool input and tool result."""
    parts: list[str] = []
    for key in ("system", "instructions"):
        parts.extend(_texts(body.get(key)))
    if isinstance(body.get("tools"), list):
        parts.append(json.dumps(body["tools"], separators=(",", ":"), ensure_ascii=False))
    for key in ("messages", "input"):
        parts.extend(_texts(body.get(key)))
    return "\n".join(parts)


def _texts(value: Any) -> Iterator[str]:
    """Texts of a system field, a message list or an input list (both APIs)."""
    if isinstance(value, str):
        yield value
        return
    for item in _list(value):
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            kind = item.get("type")
            if kind in {"tool_use", "function_call", "custom_tool_call"}:
                raw = item.get("input", item.get("arguments"))
                yield raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
            elif kind in {"tool_result", "function_call_output", "custom_tool_call_output"}:
                yield result_text(item.get("content", item.get("output")))
            elif isinstance(item.get("text"), str):
                yield item["text"]
            else:
                if "content" in item:
                    yield from _texts(item["content"])
                for call in _list(item.get("tool_calls")):  # a Chat Completions assistant
                    function = call.get("function") if isinstance(call, dict) else None
                    if isinstance(function, dict):
                        yield str(function.get("arguments") or "")


def prompt_tokens(body: Mapping[str, Any]) -> int:
    """cl100k tokens of :func:`prompt_text`: what ``usage`` and ``count_tokens`` report.

    Claude Code acts on these numbers (its Read cap asks ``count_tokens`` whether a
    file fits; it compacts near its window), so they are exact counts in the project's
    encoding rather than a guess; the real API would count with the model's own."""
    from osiris.core.tokens import default_counter

    return max(1, default_counter().count(prompt_text(body)))
