"""HTTP safety: Host/Origin checks, size limit, bearer tokens bound to their tasks."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx2
import pytest

from tests.server.transports import (
    http_client,
    http_server,
    http_server_announcing,
    osiris_env,
    run,
)

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "1"}}}
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def _post(url: str, body: bytes | str, **headers: str) -> httpx2.Response:
    return httpx2.post(url, content=body, headers={**HEADERS, **headers}, timeout=30)


def test_host_origin_and_size_are_checked() -> None:
    env = osiris_env(OSIRIS_HTTP_MAX_BODY_BYTES="100000")
    with http_server(env) as (url, _):
        ok = _post(url, json.dumps(INIT))
        assert ok.status_code == 200
        assert _post(url, json.dumps(INIT), Origin="http://evil.example").status_code == 403
        assert _post(url, json.dumps(INIT), Host="evil.example:80").status_code == 421
        big = json.dumps({**INIT, "params": {**INIT["params"], "pad": "x" * 200_000}})
        assert _post(url, big).status_code == 413
        assert _post(url, "{not json").status_code == 400
        assert _post(url, json.dumps(INIT), **{"Content-Type": "text/plain"}).status_code == 400
        # The server survived all of it.
        assert _post(url, json.dumps(INIT)).status_code == 200


def test_bearer_tokens_and_task_binding(in_store_mode: str) -> None:
    env = osiris_env(OSIRIS_HTTP_TOKEN="alice=alice-secret-token-0001,bob=bob-secret-token-0002")
    with http_server(env) as (url, _):
        missing = _post(url, json.dumps(INIT))
        assert missing.status_code == 401
        assert "Bearer" in missing.headers["www-authenticate"]
        wrong = _post(url, json.dumps(INIT), Authorization="Bearer not-the-token-at-all")
        assert wrong.status_code == 401

        async def flow() -> None:
            alice = {"Authorization": "Bearer alice-secret-token-0001"}
            bob = {"Authorization": "Bearer bob-secret-token-0002"}
            async with http_client(url, headers=alice) as client:
                start = await client.call_tool("osiris_plan", {"mode": "start",
                                                               "objective": "alice's task"})
                task = start.structured_content["task_id"]
                observed = await client.call_tool("osiris_observe", {
                    "task_id": task, "kind": "result", "tool": "cat",
                    "result": "alice data\n" * 500})
                ref = observed.structured_content["ref"]
                assert not (await client.call_tool("osiris_plan", {
                    "mode": "status", "task_id": task})).is_error
            async with http_client(url, headers=bob) as client:
                stolen = await client.call_tool("osiris_plan", {"mode": "status",
                                                                "task_id": task})
                assert stolen.is_error
                assert "does not exist" in stolen.content[0].text
                recall = await client.call_tool("osiris_recall", {"ref": ref, "op": "head"})
                assert recall.is_error
                assert not (await client.call_tool("osiris_plan", {
                    "mode": "start", "objective": "bob's own"})).is_error
        run(flow())


def test_non_loopback_bind_without_token_warns_loudly() -> None:
    # Every read of the server's stderr is bounded (tests/server/streams.announced).
    with http_server_announcing(osiris_env(), host="0.0.0.0") as (url, _, lines):
        stderr = "".join(lines)
        assert "WITHOUT a bearer token" in stderr
        assert "OSIRIS_HTTP_TOKEN" in stderr
        assert "no bearer token required" in lines[-1]
        assert _post(url, json.dumps(INIT)).status_code == 200


@pytest.mark.parametrize("value", ["short", "name=short"])
def test_weak_tokens_are_refused_at_start(value: str) -> None:
    result = subprocess.run([sys.executable, "-m", "osiris", "serve", "--http"],
                            env=osiris_env(OSIRIS_HTTP_TOKEN=value), capture_output=True,
                            text=True, timeout=60, check=False)
    assert result.returncode == 2
    assert "OSIRIS_HTTP_TOKEN" in result.stderr
    assert "16 characters" in result.stderr
    assert value not in result.stderr  # a secret is never echoed


@pytest.mark.parametrize("tokens", ["", "alice=alice-secret-token-0001,bob-secret-token-0002"])
def test_serve_http_says_where_it_listens_and_whether_a_token_is_required(tokens: str) -> None:
    env = osiris_env(OSIRIS_HTTP_TOKEN=tokens)
    with http_server_announcing(env) as (url, proc, lines):
        line = lines[-1]
        assert url in line and ":0/" not in url  # the port it bound, not the 0 it was given
        if tokens:
            assert "bearer token required" in line and "2 token identities" in line
            missing = _post(url, json.dumps(INIT))
            assert missing.status_code == 401
            message = missing.json()["error"]["message"]
            assert "name=token" in message and "only the token after '='" in message
        else:
            assert "no bearer token" in line
        proc.terminate()
        _, rest = proc.communicate(timeout=20)
    assert "secret-token" not in "".join(lines) + rest


def test_a_port_in_use_is_a_clear_error() -> None:
    with http_server_announcing(osiris_env()) as (url, _, _lines):
        port = url.rsplit(":", 1)[1].split("/")[0]
        taken = subprocess.run([sys.executable, "-m", "osiris", "serve", "--http", "--port",
                                port], env=osiris_env(), capture_output=True, text=True,
                               timeout=60, check=False)
    assert taken.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in taken.stderr
    assert "choose another --port" in taken.stderr and "Traceback" not in taken.stderr
