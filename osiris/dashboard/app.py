"""``osiris-dashboard``: a read-only web page of what OSIRIS is doing.

A Starlette app over one OSIRIS home, safe to run while MCP servers write to it: every
request is one short read under the store's shared lock (``Store.read``), and there
is no write endpoint at all (only GET and HEAD are routed). Pages are rendered on the
server with Jinja2 autoescaping, so payload text always shows as text; charts are
inline SVG. ``static/app.js`` refreshes the page's main section every few seconds
without reloading it. Host and Origin are checked as for the MCP HTTP server, and
beyond loopback a bearer token (``OSIRIS_HTTP_TOKEN``) is required: the dashboard
refuses to start there without one.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from osiris.config import Settings, is_loopback
from osiris.core.http_security import LOOPBACK_NAMES, token_name
from osiris.dashboard.views import Views
from osiris.errors import ConfigError

log = logging.getLogger(__name__)
COOKIE = "osiris_dashboard"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


class Guard:
    """Pure ASGI middleware: read-only methods, Host/Origin allow-lists, bearer token
    (header or the cookie set by ``/?token=…``) when tokens are configured, and
    security headers on every response."""

    def __init__(self, app: ASGIApp, settings: Settings, port: int) -> None:
        self.app = app
        self.tokens = settings.http_tokens
        names = [*LOOPBACK_NAMES]
        if not is_loopback(settings.dashboard_host):
            names.append(settings.dashboard_host)
        self.hosts = {h for n in names for h in (n, f"{n}:{port}")} | set(
            settings.http_allowed_hosts)
        self.origins = {f"http://{h}" for h in self.hosts} | {
            f"https://{h}" for h in self.hosts} | set(settings.http_allowed_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        response = self._refusal(request)
        if response is None and self.tokens:
            response = self._authenticate(request)
        if response is not None:
            await self._secured(response)(scope, receive, send)
            return

        async def send_secured(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers") or [])
                headers += [(k.encode(), v.encode()) for k, v in _SECURITY_HEADERS.items()]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_secured)

    def _refusal(self, request: Request) -> Response | None:
        if request.method not in ("GET", "HEAD"):
            return PlainTextResponse("the dashboard is read-only: only GET and HEAD",
                                     status_code=405, headers={"Allow": "GET, HEAD"})
        host = request.headers.get("host", "")
        if host not in self.hosts:
            return PlainTextResponse(f"Host {host[:80]!r} is not allowed (DNS rebinding "
                                     "protection): add it to OSIRIS_HTTP_ALLOWED_HOSTS",
                                     status_code=421)
        origin = request.headers.get("origin")
        if origin is not None and origin not in self.origins:
            return PlainTextResponse(f"Origin {origin[:80]!r} is not allowed",
                                     status_code=403)
        if request.headers.get("sec-fetch-site") == "cross-site":
            return PlainTextResponse("cross-site requests are refused", status_code=403)
        return None

    def _authenticate(self, request: Request) -> Response | None:
        offered = request.query_params.get("token")
        if offered is not None:
            if token_name(offered, self.tokens) is None:
                return PlainTextResponse("unknown token", status_code=401)
            # Trade the token for a cookie and drop it from the address bar.
            query = urlencode([(k, v) for k, v in request.query_params.multi_items()
                               if k != "token"])
            target = request.url.path + (f"?{query}" if query else "")
            response = RedirectResponse(target, status_code=303)
            response.set_cookie(COOKIE, offered, httponly=True, samesite="strict",
                                secure=request.url.scheme == "https")
            return response
        scheme, _, bearer = request.headers.get("authorization", "").partition(" ")
        presented = bearer if scheme.lower() == "bearer" else request.cookies.get(COOKIE, "")
        name = token_name(presented, self.tokens)
        if name is not None:
            # The token's name is the reader's principal: the pages that show payload
            # bytes show only its own refs (views.Views.ref).
            request.scope.setdefault("state", {})["osiris_principal"] = name
            return None
        return PlainTextResponse(
            "Unauthorized: open the dashboard once as /?token=<OSIRIS_HTTP_TOKEN> (it is "
            "kept in an HttpOnly cookie) or send 'Authorization: Bearer <token>'",
            status_code=401, headers={"WWW-Authenticate": 'Bearer realm="osiris-dashboard"'})

    @staticmethod
    def _secured(response: Response) -> Response:
        for key, value in _SECURITY_HEADERS.items():
            response.headers[key] = value
        return response


_SECURITY_HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
                     "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY",
                     "Cache-Control": "no-store"}


def create_app(settings: Settings, *, port: int | None = None,
               reports: Path | None = None) -> ASGIApp:
    """The dashboard application over ``settings.home``."""
    views = Views(settings, reports)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        views.close()

    app = Starlette(routes=views.routes(), lifespan=lifespan)
    return Guard(app, settings, port or settings.dashboard_port)


def default_reports(settings: Settings) -> Path | None:
    """Where the benchmark report is: ``$OSIRIS_HOME/reports``, else ``./reports``."""
    for candidate in (settings.home / "reports", Path.cwd() / "reports"):
        if (candidate / "BENCHMARK.md").exists():
            return candidate
    return None


def build_parser() -> argparse.ArgumentParser:
    """Arguments of ``osiris-dashboard``."""
    parser = argparse.ArgumentParser(
        prog="osiris-dashboard", description="A read-only web page of what OSIRIS is doing "
        "in one OSIRIS home (tasks, drift, ledger, verdicts, refs, audits, benchmark).")
    parser.add_argument("--host", help="bind address (default OSIRIS_DASHBOARD_HOST or "
                        "127.0.0.1; beyond loopback OSIRIS_HTTP_TOKEN is required)")
    parser.add_argument("--port", type=int, help="port (default OSIRIS_DASHBOARD_PORT or "
                        "8770; 0: any free port, announced on stderr)")
    parser.add_argument("--reports", help="benchmark reports directory (default "
                        "$OSIRIS_HOME/reports, else ./reports)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``osiris-dashboard``."""
    args = build_parser().parse_args(argv)
    try:
        settings = Settings.from_env()
    except ConfigError as exc:
        sys.stderr.write(f"osiris-dashboard: configuration error: {exc}\n")
        return 2
    if args.host:
        settings = replace(settings, dashboard_host=args.host)
    if args.port is not None:
        if not 0 <= args.port < 65536:
            sys.stderr.write("osiris-dashboard: --port must be from 0 (any free port) to "
                             "65535\n")
            return 2
        settings = replace(settings, dashboard_port=args.port)
    if not is_loopback(settings.dashboard_host) and not settings.http_tokens:
        sys.stderr.write(f"osiris-dashboard: refusing to serve {settings.dashboard_host} "
                         "without a token: set OSIRIS_HTTP_TOKEN (the dashboard shows payload "
                         "text) or bind 127.0.0.1\n")
        return 2
    if not settings.db_path.exists():  # a mistyped OSIRIS_HOME must not show an empty home
        from osiris.errors import missing_home_message

        sys.stderr.write(f"osiris-dashboard: {missing_home_message(settings.home)} (the "
                         "one your MCP servers use)\n")
        return 2
    reports = Path(args.reports).resolve() if args.reports else default_reports(settings)
    logging.basicConfig(stream=sys.stderr, level=settings.log_level,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    import socket

    import uvicorn

    host = settings.dashboard_host
    try:  # bound first: the port served is known before it is announced (0: any free one)
        sock = socket.create_server((host.strip("[]"), settings.dashboard_port),
                                    family=socket.AF_INET6 if ":" in host else socket.AF_INET)
    except OSError as exc:
        sys.stderr.write(f"osiris-dashboard: cannot listen on {host}:{settings.dashboard_port}: "
                         f"{exc.strerror or exc}; choose another --port (0: any free port)\n")
        return 2
    settings = replace(settings, dashboard_port=int(sock.getsockname()[1]))
    app = create_app(settings, reports=reports)
    sys.stderr.write(f"osiris-dashboard: http://{host}:{settings.dashboard_port}/ over "
                     f"{settings.home}\n")
    sys.stderr.flush()
    uvicorn.Server(uvicorn.Config(app, host=host, port=settings.dashboard_port,
                                  log_level=settings.log_level.lower())).run(sockets=[sock])
    return 0
