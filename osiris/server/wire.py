"""What an incoming JSON-RPC message must look like: one check for stdio and HTTP.

The MCP SDK (mcp 2.3) gets malformed input wrong in three ways, so OSIRIS checks
every incoming message itself before the SDK sees it:

- its stdio transport drops any line it cannot parse or validate (logged at DEBUG):
  the client waits forever for the answer to a request that had an id;
- its 2025-11-25 HTTP transport answers -32602 (invalid params) for a message that is
  not a JSON-RPC request at all (``"jsonrpc": "1.0"``, a batch), where the spec wants
  -32600, with a pydantic dump that repeats the input;
- it reads a request whose id is an object or a boolean as a notification (the id is
  silently ignored), so such a request is never answered.

:func:`check_message` turns raw bytes into the SDK's message or a :class:`Rejection`
that carries the JSON-RPC error to send and the request id when one can be read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pydantic_core
from mcp.types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    RequestId,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

_NOT_A_MESSAGE = ("Invalid Request: expected one JSON-RPC 2.0 request, notification or "
                  "response object")


@dataclass(frozen=True)
class Rejection:
    """A malformed incoming message and the error that answers it."""

    code: int
    """PARSE_ERROR (-32700) or INVALID_REQUEST (-32600)."""
    message: str
    """Short, and never a copy of the input (which may be huge or hold secrets)."""
    request_id: RequestId | None
    """The id read from the message, or None when none can be read (``"id": null``)."""
    notification: bool = False
    """The message is a notification (a method, no id): it must get no reply."""

    def error(self) -> JSONRPCError:
        """The JSON-RPC error message answering the rejected one."""
        return JSONRPCError(jsonrpc="2.0", id=self.request_id,
                            error=ErrorData(code=self.code, message=self.message))


def check_message(data: bytes) -> JSONRPCMessage | Rejection:
    """The SDK's message for ``data``, or why it is not one."""
    try:
        raw = pydantic_core.from_json(data)  # the parser the SDK uses: same verdicts
    except ValueError as exc:
        members, complete = leading_members(data)
        return Rejection(PARSE_ERROR, f"Parse error: {exc}"[:200], _readable_id(members),
                         complete and _is_notification(members))
    if isinstance(raw, list):
        return Rejection(INVALID_REQUEST, "Invalid Request: batches are not supported "
                         "(MCP removed JSON-RPC batching): send one message at a time", None)
    if not isinstance(raw, dict):
        return Rejection(INVALID_REQUEST, _NOT_A_MESSAGE, None)
    request_id = _readable_id(raw)
    notification = _is_notification(raw)
    problem = _envelope_problem(raw)
    if problem is None:
        try:
            return jsonrpc_message_adapter.validate_python(raw, by_name=False)
        except ValidationError:
            problem = _NOT_A_MESSAGE
    return Rejection(INVALID_REQUEST, problem, request_id, notification)


def oversized(head: bytes, size: int, limit: int, setting: str) -> Rejection:
    """The answer to a message of ``size`` bytes over ``limit``, read only from its
    first bytes ``head`` (the rest was discarded unread)."""
    members, _ = leading_members(head)
    return Rejection(INVALID_REQUEST, f"Invalid Request: message of {size} bytes or more, "
                     f"over the limit of {limit} bytes (set by {setting}); send big outputs "
                     "as files (observe kind=file) or raise the limit",
                     _readable_id(members))


def leading_members(data: bytes) -> tuple[dict[str, Any], bool]:
    """The members of a JSON object read from its start, as far as they parse, and
    whether the whole object was read. Lets an unparsable or truncated request still be
    answered under its id (clients write ``jsonrpc`` and ``id`` first)."""
    text = data.decode("utf-8", errors="replace")
    decoder = json.JSONDecoder()
    members: dict[str, Any] = {}
    pos = _skip_space(text, 0)
    if not text.startswith("{", pos):
        return members, False
    pos = _skip_space(text, pos + 1)
    if text.startswith("}", pos):
        return members, True
    try:
        while True:
            key, pos = decoder.raw_decode(text, pos)
            pos = _skip_space(text, pos)
            if not isinstance(key, str) or not text.startswith(":", pos):
                return members, False
            value, pos = decoder.raw_decode(text, _skip_space(text, pos + 1))
            members.setdefault(key, value)
            pos = _skip_space(text, pos)
            if text.startswith("}", pos):
                return members, True
            if not text.startswith(",", pos):
                return members, False
            pos = _skip_space(text, pos + 1)
    except (ValueError, RecursionError):
        return members, False


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _readable_id(members: dict[str, Any]) -> RequestId | None:
    value = members.get("id")
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return None


def _is_notification(members: dict[str, Any]) -> bool:
    return "method" in members and "id" not in members


def _envelope_problem(raw: dict[str, Any]) -> str | None:
    """What is wrong with the JSON-RPC envelope, in words a client author can act on."""
    if raw.get("jsonrpc") != "2.0":
        return 'Invalid Request: "jsonrpc" must be "2.0"'
    if "id" in raw and _readable_id(raw) is None:
        return 'Invalid Request: "id" must be a string or an integer'
    if "method" in raw and not isinstance(raw["method"], str):
        return 'Invalid Request: "method" must be a string'
    if "method" in raw and "params" in raw and not isinstance(raw["params"], dict):
        return 'Invalid Request: "params" must be an object'
    return None
