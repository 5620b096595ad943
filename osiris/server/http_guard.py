"""What OSIRIS adds in front of the SDK's Streamable HTTP transport (2025-11-25 era).

Two faults of the SDK (mcp 2.3) are corrected here, for POSTs to ``/mcp`` that the SDK
routes to its session-based 2025-11-25 transport (no ``MCP-Protocol-Version`` header,
or a handshake-era one; the 2026-07-28 path answers malformed bodies correctly):

- a body that is not one JSON-RPC message gets -32602 (invalid params) with a pydantic
  dump of the input, and a request whose id is an object is taken for a notification
  (202, never answered). The body is checked with :func:`~osiris.server.wire.check_message`,
  the same check as stdio, and refused with -32700 or -32600 under its id;
- past the session limit the SDK answers 503 "Too many open sessions", which does not
  say what to do. The answer names the settings and the ways out.

Host, Origin and Content-Type are left to the SDK: a request that fails them is passed
through untouched so that it gets the SDK's 421/403/400, as does an oversized body (413).
"""

from __future__ import annotations

from typing import Any

from mcp.server.transport_security import TransportSecurityMiddleware
from mcp.types import JSONRPCRequest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from osiris.server.wire import Rejection, check_message

SERVER_BUSY = -32000
"""JSON-RPC's implementation-defined server error: no room for another session."""


class LegacyHttpGuard:
    """Pure ASGI middleware for ``/mcp``: checks 2025-era POST bodies and explains the
    session limit (see the module docstring for why)."""

    def __init__(self, app: ASGIApp, security: TransportSecurityMiddleware, body_limit: int,
                 session_limit_message: str) -> None:
        self.app = app
        self.security = security
        self.body_limit = body_limit
        self.session_limit_message = session_limit_message

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not await self._applies(scope, receive):
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        body, complete, replay = await _buffer_body(receive, self.body_limit)
        if not complete:  # over the limit: the SDK answers 413
            await self.app(scope, replay, send)
            return
        verdict = check_message(body)
        if isinstance(verdict, Rejection):
            error = verdict.error().model_dump(by_alias=True, exclude_unset=True)
            await _json(error, 400)(scope, receive, send)
            return
        if "mcp-session-id" in request.headers:
            await self.app(scope, replay, send)
            return
        request_id = verdict.id if isinstance(verdict, JSONRPCRequest) else None
        await self.app(scope, replay, self._explain_session_limit(send, request_id))

    async def _applies(self, scope: Scope, receive: Receive) -> bool:
        """A POST to /mcp on the 2025 path (the SDK's own routing rule) that passes the
        SDK's Host, Origin and Content-Type checks."""
        if scope["type"] != "http" or scope["method"] != "POST" \
                or scope["path"].rstrip("/") != "/mcp":
            return False
        request = Request(scope, receive)
        version = request.headers.get("mcp-protocol-version")
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            return False
        return await self.security.validate_request(request, is_post=True) is None

    def _explain_session_limit(self, send: Send, request_id: Any) -> Send:
        """``send`` with the SDK's 503 for a request that would open one session too
        many replaced by an answer that says what to do (503 comes from nowhere else)."""
        replaced = False

        async def explaining_send(message: Message) -> None:
            nonlocal replaced
            if message["type"] == "http.response.start" and message["status"] == 503:
                replaced = True
                error = {"jsonrpc": "2.0", "id": request_id,
                         "error": {"code": SERVER_BUSY, "message": self.session_limit_message}}
                response = _json(error, 503, {"Retry-After": "60"})
                await send({"type": "http.response.start", "status": 503,
                            "headers": response.raw_headers})
                await send({"type": "http.response.body", "body": response.body})
            elif not replaced:
                await send(message)

        return explaining_send


def _json(content: dict[str, Any], status: int,
          headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(content, status_code=status, headers=headers)


async def _buffer_body(receive: Receive, limit: int) -> tuple[bytes, bool, Receive]:
    """The request body (read up to ``limit`` bytes), whether it was read whole, and a
    ``receive`` that hands the downstream app the same messages again."""
    chunks: list[bytes] = []
    size = 0
    pending: list[Message] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            pending.append(message)
            break
        chunk = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            pending.append({"type": "http.request", "body": b"".join(chunks),
                            "more_body": message.get("more_body", False)})
            return b"", False, _replaying(pending, receive)
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    return body, True, _replaying(
        [{"type": "http.request", "body": body, "more_body": False}, *pending], receive)


def _replaying(messages: list[Message], receive: Receive) -> Receive:
    async def replay() -> Message:
        return messages.pop(0) if messages else await receive()

    return replay
