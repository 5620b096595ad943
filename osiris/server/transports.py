"""Transports: stdio (default) and Streamable HTTP at ``/mcp``.

HTTP safety, configured explicitly because the SDK turns DNS-rebinding protection
off by itself for any non-loopback bind: Host and Origin allow-lists, a request size
limit, and optional bearer tokens (``OSIRIS_HTTP_TOKEN``) compared in constant time.
Binding beyond loopback without a token logs a loud warning. Both protocol eras are
served: 2025-11-25 (initialize, sessions: closed when idle, capped in number) and
2026-07-28 (stateless). Both transports answer malformed messages themselves where the
SDK would not (:mod:`osiris.server.stdio`, :mod:`osiris.server.http_guard`).
"""

from __future__ import annotations

import logging
import signal
import socket
import sys
import threading
from dataclasses import replace
from typing import Any

import anyio
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from osiris.config import Settings, is_loopback
from osiris.core.http_security import LOOPBACK_NAMES, bearer_token, token_name
from osiris.server.app import build_server
from osiris.server.http_guard import LegacyHttpGuard
from osiris.server.start_cache import Handover, StartCache
from osiris.server.stdio import serve as serve_lines

log = logging.getLogger(__name__)
UNAUTHORIZED = ("Unauthorized: send 'Authorization: Bearer <token>' with a token from "
                "OSIRIS_HTTP_TOKEN; for an entry written name=token, send only the token "
                "after '=', not the name")


class BearerAuth:
    """Pure ASGI middleware: 401 without a known bearer token; sets the principal."""

    def __init__(self, app: ASGIApp, tokens: tuple[tuple[str, str], ...]) -> None:
        self.app = app
        self.tokens = tokens

    def principal(self, header: str) -> str | None:
        """The token's name, comparing every known token in constant time."""
        return token_name(bearer_token(header), self.tokens)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        name = self.principal(headers.get(b"authorization", b"").decode("latin-1"))
        if name is None:
            response = JSONResponse(
                {"jsonrpc": "2.0", "id": None,
                 "error": {"code": -32001, "message": UNAUTHORIZED}},
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
    limit = settings.http_max_body_bytes or message_limit(settings)
    security = security_settings(settings, port)
    app: ASGIApp = server.streamable_http_app(
        streamable_http_path="/mcp", stateless_http=False, transport_security=security,
        max_request_body_size=limit, session_idle_timeout=settings.http_session_idle_s,
        max_sessions=settings.http_max_sessions)
    app = LegacyHttpGuard(app, TransportSecurityMiddleware(security), limit, (
        f"Too many open sessions: {settings.http_max_sessions} are open "
        "(OSIRIS_HTTP_MAX_SESSIONS). End sessions you no longer use (DELETE /mcp with their "
        f"Mcp-Session-Id), retry once idle ones expire (after {settings.http_session_idle_s:g} "
        "s without a request, OSIRIS_HTTP_SESSION_IDLE_S), use the stateless 2026-07-28 "
        "protocol, or raise OSIRIS_HTTP_MAX_SESSIONS."))
    if settings.http_tokens:
        app = BearerAuth(app, settings.http_tokens)
    elif not is_loopback(settings.http_host):
        log.warning(
            "OSIRIS is listening on %s:%s WITHOUT a bearer token: anyone who can reach this "
            "port can read and write this OSIRIS home. Set OSIRIS_HTTP_TOKEN.",
            settings.http_host, port)
    return app


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: any free port, the kernel's choice), so
    that the port served is known before anything is announced, and no other process can
    take it in between. OSError when the address cannot be bound."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host.strip("[]"), port), family=family, backlog=2048)


def serve_http(settings: Settings) -> None:
    """Run the Streamable HTTP server until interrupted (OSError: the address could not be
    bound)."""
    import uvicorn

    sock = listen(settings.http_host, settings.http_port)
    settings = replace(settings, http_port=int(sock.getsockname()[1]))

    class AnnouncingServer(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started:  # listening
                sys.stderr.write(listening_line(settings) + "\n")
                sys.stderr.flush()

    app = http_app(settings, settings.http_port)
    AnnouncingServer(uvicorn.Config(app, host=settings.http_host, port=settings.http_port,
                                    log_level=settings.log_level.lower(), lifespan="on")
                     ).run(sockets=[sock])


def listening_line(settings: Settings) -> str:
    """What ``osiris serve --http`` says on stderr once it listens: where, and whether a
    bearer token is required (how many identities, never the tokens)."""
    host = settings.http_host
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 address in a URL
    url = f"http://{host}:{settings.http_port}/mcp"
    count = len(settings.http_tokens)
    if count:
        auth = (f"bearer token required ({count} token "
                f"{'identity' if count == 1 else 'identities'} from OSIRIS_HTTP_TOKEN)")
    else:
        auth = "no bearer token required (set OSIRIS_HTTP_TOKEN to require one)"
    return f"osiris: MCP over Streamable HTTP listening on {url}; {auth}"


def serve_stdio(settings: Settings, server: Any = None, handover: Handover | None = None,
                cache: StartCache | None = None) -> None:
    """Run the MCP server on stdio (stdout carries JSON-RPC only); ``handover`` and
    ``cache``: what :func:`osiris.server.early.serve_stdio` answered before."""
    if threading.current_thread() is threading.main_thread():
        # Ctrl-C ends a stdio server as SIGTERM does: at once and quietly. Python's
        # KeyboardInterrupt would wait for the stdin reader thread, i.e. until the client
        # closes the pipe, then print a traceback. Every store transaction commits whole
        # or not at all, so ending here loses nothing that was acknowledged.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    anyio.run(serve_lines, server or build_server(settings), message_limit(settings),
              handover, cache)


def message_limit(settings: Settings) -> int:
    """The largest JSON-RPC message read, on stdio (a line) and HTTP (a body, unless
    OSIRIS_HTTP_MAX_BODY_BYTES says otherwise): a payload at its limit must pass even after
    JSON escaping has grown it (a quarter more, plus 1 MiB for the rest of the request),
    while a runaway message is refused long before it can exhaust memory."""
    return settings.max_payload_bytes + settings.max_payload_bytes // 4 + (1 << 20)
