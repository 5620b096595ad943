"""Transports: stdio (default) and Streamable HTTP at ``/mcp``.

HTTP safety, configured explicitly because the SDK turns DNS-rebinding protection
off by itself for any non-loopback bind: Host and Origin allow-lists, a request size
limit, and optional bearer tokens (``OSIRIS_HTTP_TOKEN``) compared in constant time.
Binding beyond loopback without a token logs a loud warning. Both protocol eras are
served: 2025-11-25 (initialize, sessions) and 2026-07-28 (stateless).
"""

from __future__ import annotations

import hmac
import logging
import signal
import threading
from typing import Any

from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from osiris.config import Settings, is_loopback
from osiris.server import build_server

log = logging.getLogger(__name__)
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


class BearerAuth:
    """Pure ASGI middleware: 401 without a known bearer token; sets the principal."""

    def __init__(self, app: ASGIApp, tokens: tuple[tuple[str, str], ...]) -> None:
        self.app = app
        self.tokens = tokens

    def principal(self, header: str) -> str | None:
        """The token's name, comparing every known token in constant time."""
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token:
            return None
        found = None
        for name, known in self.tokens:
            if hmac.compare_digest(token.encode(), known.encode()):
                found = name
        return found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        name = self.principal(headers.get(b"authorization", b"").decode("latin-1"))
        if name is None:
            response = JSONResponse(
                {"jsonrpc": "2.0", "id": None,
                 "error": {"code": -32001, "message": "Unauthorized: send "
                           "'Authorization: Bearer <OSIRIS_HTTP_TOKEN>'"}},
                status_code=401, headers={"WWW-Authenticate": 'Bearer realm="osiris"'})
            await response(scope, receive, send)
            return
        scope.setdefault("state", {})["osiris_principal"] = name
        await self.app(scope, receive, send)


def security_settings(settings: Settings, port: int) -> TransportSecuritySettings:
    """Host/Origin allow-lists for the bind address (never left to the SDK's default)."""
    hosts = [f"{h}:*" for h in LOOPBACK_NAMES] + [*LOOPBACK_NAMES]
    origins = [f"http://{h}:*" for h in LOOPBACK_NAMES]
    if not is_loopback(settings.http_host):
        hosts += [settings.http_host, f"{settings.http_host}:{port}"]
        origins += [f"http://{settings.http_host}:{port}", f"https://{settings.http_host}"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*hosts, *settings.http_allowed_hosts],
        allowed_origins=[*origins, *settings.http_allowed_origins])


def http_app(settings: Settings, port: int, server: Any = None) -> ASGIApp:
    """The ASGI application serving MCP at ``/mcp``."""
    server = server or build_server(settings)
    limit = settings.http_max_body_bytes or settings.max_payload_bytes + (1 << 20)
    app: ASGIApp = server.streamable_http_app(
        streamable_http_path="/mcp", stateless_http=False,
        transport_security=security_settings(settings, port), max_request_body_size=limit)
    if settings.http_tokens:
        app = BearerAuth(app, settings.http_tokens)
    elif not is_loopback(settings.http_host):
        log.warning(
            "OSIRIS is listening on %s:%s WITHOUT a bearer token: anyone who can reach this "
            "port can read and write this OSIRIS home. Set OSIRIS_HTTP_TOKEN.",
            settings.http_host, port)
    return app


def serve_http(settings: Settings) -> None:
    """Run the Streamable HTTP server until interrupted."""
    import uvicorn

    app = http_app(settings, settings.http_port)
    log.info("OSIRIS MCP over HTTP at http://%s:%s/mcp", settings.http_host, settings.http_port)
    uvicorn.Server(uvicorn.Config(app, host=settings.http_host, port=settings.http_port,
                                  log_level=settings.log_level.lower(), lifespan="on")).run()


def serve_stdio(settings: Settings) -> None:
    """Run the MCP server on stdio (stdout carries JSON-RPC only)."""
    if threading.current_thread() is threading.main_thread():
        # Ctrl-C ends a stdio server as SIGTERM does: at once and quietly. Python's
        # KeyboardInterrupt would wait for the stdin reader thread, i.e. until the client
        # closes the pipe, then print a traceback. Every store transaction commits whole
        # or not at all, so ending here loses nothing that was acknowledged.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    build_server(settings).run("stdio")
