"""JSON-RPC robustness on the wire: every malformed request gets exactly one error reply
with the right code (stdio and HTTP, both protocol eras), and the server keeps serving."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from mcp import MCPError

from tests.server.streams import RawStdio
from tests.server.transports import ERAS, client_for, http_server, osiris_env, run

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602

INIT = {"jsonrpc": "2.0", "id": "init", "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}}}
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def _deep(request_id: int, levels: int) -> str:
    return (f'{{"jsonrpc":"2.0","id":{request_id},"method":"ping","params":{{"x":'
            + "[" * levels + "]" * levels + "}}")


def _line(request_id: int, pad: int) -> bytes:
    """A ping whose params carry ``pad`` bytes: the size of a big escaped payload."""
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping",
                       "params": {"pad": "x" * pad}}).encode()


# (line, expected code, expected id): one error reply each; the id where one can be read.
MALFORMED: list[tuple[bytes, int, Any]] = [
    (b"this is not json", PARSE_ERROR, None),
    (b"{}", INVALID_REQUEST, None),
    (b'{"jsonrpc": "1.0", "id": "v1", "method": "ping"}', INVALID_REQUEST, "v1"),
    (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}', INVALID_REQUEST, None),
    (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', INVALID_REQUEST, None),
    (b'{"jsonrpc": "2.0", "id": 12, "method": "tools/list", "params": [1]}',
     INVALID_REQUEST, 12),
    (b'[{"jsonrpc": "2.0", "id": 13, "method": "ping"}]', INVALID_REQUEST, None),
    (b'{"jsonrpc": "2.0", "id": 14, "method": "tools/call", "params": {"name": '
     b'"osiris_plan", "arguments": {"mode": "start", "objective": "\\ud800"}}}',
     PARSE_ERROR, 14),
    (_deep(16, 200).encode(), PARSE_ERROR, 16),
    (b'{"jsonrpc": "2.0", "id": 17}', INVALID_REQUEST, 17),
    (b'{"jsonrpc": "2.0", "id": 18, "method": 5}', INVALID_REQUEST, 18),
    (b'{"jsonrpc": "2.0", "id": 19, "method": "ping"', PARSE_ERROR, 19),
    (b"\xff\xfe not even utf-8", PARSE_ERROR, None),
]


def _ping(raw: RawStdio, request_id: str) -> None:
    raw.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"}).encode())
    answer = raw.reply()
    assert answer == {"jsonrpc": "2.0", "id": request_id, "result": {}}, answer


def test_stdio_answers_every_malformed_request_once_and_keeps_serving() -> None:
    raw = RawStdio(osiris_env())
    try:
        raw.send(json.dumps(INIT).encode())
        assert raw.reply()["id"] == "init"
        raw.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        for n, (line, code, request_id) in enumerate(MALFORMED):
            raw.send(line)
            error = raw.reply()
            assert "error" in error, (line[:80], error)
            assert error["error"]["code"] == code, (line[:80], error)
            assert error["id"] == request_id, (line[:80], error)
            assert len(error["error"]["message"]) < 300  # never an echo of the input
            _ping(raw, f"after-{n}")  # the next valid request is answered, and nothing else
        # Malformed notifications (no id) get no reply: the next reply is the ping's.
        raw.send(b'{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": [1]}')
        raw.send(b'{"jsonrpc": "1.0", "method": "notifications/initialized"}')
        _ping(raw, "after-notifications")
        # Blank lines are not messages.
        raw.send(b"")
        _ping(raw, "after-blank")
        # A line a bit larger than the payload limit (32 MiB, plus escaping) passes ...
        raw.send(_line(20, 36 << 20))
        assert raw.reply() == {"jsonrpc": "2.0", "id": 20, "result": {}}
        # ... a 50 MB line is refused with its id, without reading it whole ...
        raw.send(_line(21, 50_000_000))
        refused = raw.reply()
        assert refused["id"] == 21 and refused["error"]["code"] == INVALID_REQUEST
        assert "OSIRIS_MAX_PAYLOAD_BYTES" in refused["error"]["message"]
        _ping(raw, "after-50MB")
        # ... and one that does not start with its id still gets an answer (id null).
        raw.send(b'{"params": {"pad": "' + b"y" * 50_000_000 + b'"}, "id": 22}')
        late = raw.reply()
        assert late["id"] is None and late["error"]["code"] == INVALID_REQUEST
        _ping(raw, "last")
    finally:
        rest, stderr = raw.close()
    assert rest == []  # exactly one reply per request
    assert b"Traceback" not in stderr


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("transport", ["inprocess", "stdio", "http"])
def test_prompt_errors_are_invalid_params(transport: str, mode: str) -> None:
    env = osiris_env()

    async def flow(url: str | None) -> None:
        async with client_for(transport, mode, url=url, env=env) as client:
            for name, arguments, expected in [
                    ("osiris/no-such-prompt", {}, "osiris/task-resume"),
                    ("osiris/task-resume", {}, "task_id"),
                    ("osiris/task-resume", {"task_id": "t_missing"}, "does not exist")]:
                with pytest.raises(MCPError) as caught:
                    await client.get_prompt(name, arguments)
                assert caught.value.error.code == INVALID_PARAMS, (name, caught.value.error)
                assert expected in caught.value.error.message
            # The server is still serving.
            assert (await client.list_prompts()).prompts

    if transport == "http":
        with http_server(env) as (url, proc):
            run(flow(url))
            proc.terminate()
            _, err = proc.communicate(timeout=30)
        assert "Traceback" not in err  # a client's mistake is not a server crash
    else:
        run(flow(None))


def _legacy_session(url: str) -> dict[str, str]:
    opened = httpx2.post(url, content=json.dumps(INIT), headers=HEADERS, timeout=30)
    assert opened.status_code == 200
    return {**HEADERS, "mcp-session-id": opened.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-11-25"}


def test_http_answers_malformed_requests_with_the_right_codes() -> None:
    with http_server() as (url, _):
        legacy = _legacy_session(url)
        modern = {**HEADERS, "mcp-protocol-version": "2026-07-28"}
        for headers in (legacy, modern, HEADERS):  # HEADERS: no session, no version
            for line, code, request_id in MALFORMED:
                if headers is modern and request_id in (14, 16):
                    continue  # the 2026 era parses a lone surrogate and deep nesting
                answer = httpx2.post(url, content=line, headers=headers, timeout=30)
                assert answer.status_code == 400, (headers, line, answer.text)
                error = answer.json()
                assert error["error"]["code"] == code, (headers, line, error)
                assert len(error["error"]["message"]) < 300, error
            # The session still works.
            ping = httpx2.post(url, content=json.dumps(
                {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}), headers=legacy,
                timeout=30)
            assert ping.status_code == 200
