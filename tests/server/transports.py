"""Real MCP clients on every transport: in process, stdio subprocess, HTTP subprocess."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from osiris.config import Settings
from osiris.server import build_server
from tests.conftest import REPO
from tests.server.streams import announced

TRANSPORTS = ("inprocess", "stdio", "http")
ERAS = ("auto", "legacy")


def run(coro: Any) -> Any:
    """Run a coroutine to completion (tests stay plain functions)."""
    return asyncio.run(coro)


def osiris_env(**extra: str) -> dict[str, str]:
    """The environment an OSIRIS subprocess gets (the test's OSIRIS_* plus extras)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO)
    env.update(extra)
    return env


@contextlib.contextmanager
def http_server_announcing(env: dict[str, str] | None = None, host: str = "127.0.0.1",
                           ) -> Iterator[tuple[str, subprocess.Popen[str], list[str]]]:
    """``osiris serve --http --port 0``: the server binds a free port itself and says which
    on stderr; yields its /mcp URL, the process and the stderr lines up to that one."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "osiris", "serve", "--http", "--host", host, "--port", "0"],
        env=env or osiris_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = announced(proc, "listening on http://")
        url = re.search(r"listening on (http://\S+/mcp)", lines[-1])
        assert url is not None, lines
        yield url.group(1).replace("://0.0.0.0:", "://127.0.0.1:"), proc, lines
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


@contextlib.contextmanager
def http_server(env: dict[str, str] | None = None, host: str = "127.0.0.1",
                ) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """``osiris serve --http`` on a port of its own choosing; yields its /mcp URL and the
    process."""
    with http_server_announcing(env, host) as (url, proc, _):
        yield url, proc


@contextlib.asynccontextmanager
async def http_client(url: str, mode: str = "auto",
                      headers: dict[str, str] | None = None) -> AsyncIterator[Client]:
    """An SDK client on a Streamable HTTP URL."""
    async with httpx2.AsyncClient(headers=headers or {}, timeout=60) as http, \
            Client(streamable_http_client(url, http_client=http), mode=mode) as client:
        yield client


def stdio_params(env: dict[str, str] | None = None) -> StdioServerParameters:
    """``python -m osiris`` (the stdio server) as a subprocess."""
    return StdioServerParameters(command=sys.executable, args=["-m", "osiris"],
                                 env=env or osiris_env(), cwd=str(REPO))


@contextlib.asynccontextmanager
async def client_for(transport: str, mode: str, *, settings: Settings | None = None,
                     url: str | None = None, env: dict[str, str] | None = None,
                     ) -> AsyncIterator[Client]:
    """A connected client on ``transport`` in protocol ``mode``."""
    if transport == "inprocess":
        async with Client(build_server(settings or Settings.from_env()), mode=mode) as c:
            yield c
    elif transport == "stdio":
        async with Client(stdio_params(env), mode=mode) as c:
            yield c
    else:
        assert url is not None
        async with http_client(url, mode) as c:
            yield c


def home_of(env: dict[str, str]) -> Path:
    """The OSIRIS_HOME of an environment."""
    return Path(env["OSIRIS_HOME"])


async def observe_a_result(client: Client, command: str, result: str,
                           ) -> tuple[str, Any, Any]:
    """What a session stores: a task started, one Bash result observed (stored as a ref
    when large) and the head of that ref recalled. The task id and both answers."""
    start = await client.call_tool("osiris_plan", {
        "mode": "start", "objective": "fix the login test", "steps": ["fix"]})
    task = start.structured_content["task_id"]
    observed = await client.call_tool("osiris_observe", {
        "task_id": task, "kind": "result", "tool": "Bash", "args": {"command": command},
        "result": result})
    assert not observed.is_error, observed.content
    assert observed.structured_content["mode"] != "full"  # the payload is a ref
    recalled = await client.call_tool("osiris_recall", {
        "ref": observed.structured_content["ref"], "op": "head", "lines": 8,
        "task_id": task})
    return task, observed, recalled
