"""2025-11-25 HTTP sessions are bounded: capped in number, closed when idle."""

from __future__ import annotations

import json

import httpx2

from tests.server.streams import Lines
from tests.server.transports import http_server, osiris_env

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
LIST = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})


def _initialize(url: str) -> httpx2.Response:
    return httpx2.post(url, headers=HEADERS, timeout=30, content=json.dumps(
        {"jsonrpc": "2.0", "id": "init", "method": "initialize",
         "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "abandoned", "version": "1"}}}))


def _in(session: str) -> dict[str, str]:
    return {**HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}


def test_sessions_past_the_cap_are_refused_with_what_to_do() -> None:
    env = osiris_env(OSIRIS_HTTP_MAX_SESSIONS="2")
    with http_server(env) as (url, _):
        first, second = (_initialize(url).headers["mcp-session-id"] for _ in range(2))
        refused = _initialize(url)
        assert refused.status_code == 503
        error = refused.json()
        assert error["id"] == "init" and error["error"]["code"] == -32000
        for hint in ("OSIRIS_HTTP_MAX_SESSIONS", "DELETE", "OSIRIS_HTTP_SESSION_IDLE_S"):
            assert hint in error["error"]["message"]
        assert refused.headers["retry-after"]
        # Open sessions are unaffected; ending one makes room.
        assert httpx2.post(url, content=LIST, headers=_in(second), timeout=30).status_code == 200
        assert httpx2.delete(url, headers=_in(first), timeout=30).status_code < 300
        assert _initialize(url).status_code == 200
        gone = httpx2.post(url, content=LIST, headers=_in(first), timeout=30)
        assert gone.status_code == 404


def test_idle_sessions_expire_and_their_ids_get_404() -> None:
    env = osiris_env(OSIRIS_HTTP_SESSION_IDLE_S="0.2", OSIRIS_HTTP_MAX_SESSIONS="1",
                     OSIRIS_LOG_LEVEL="INFO")
    with http_server(env) as (url, proc):
        assert proc.stderr is not None
        stderr = Lines(proc.stderr)
        session = _initialize(url).headers["mcp-session-id"]
        # The server says when it closes the session; no guessing at timings.
        stderr.wait_for(lambda line: f"Session {session} idle timeout" in line)
        expired = httpx2.post(url, content=LIST, headers=_in(session), timeout=30)
        assert expired.status_code == 404
        assert "Session not found" in expired.text
        assert _initialize(url).status_code == 200  # its place is free again
