"""Real MCP clients on every transport: in process, stdio subprocess, HTTP subprocess."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from osiris.config import Settings
from osiris.server import build_server
from tests.conftest import REPO

TRANSPORTS = ("inprocess", "stdio", "http")
ERAS = ("auto", "legacy")


def run(coro: Any) -> Any:
    """Run a coroutine to completion (tests stay plain functions)."""
    return asyncio.run(coro)


def free_port() -> int:
    """A free TCP port on loopback."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def osiris_env(**extra: str) -> dict[str, str]:
    """The environment an OSIRIS subprocess gets (the test's OSIRIS_* plus extras)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO)
    env.update(extra)
    return env


@contextlib.contextmanager
def http_server(env: dict[str, str] | None = None, host: str = "127.0.0.1",
                port: int | None = None) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """``osiris serve --http`` on a free port; yields its /mcp URL and the process."""
    port = port or free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "osiris", "serve", "--http", "--host", host, "--port",
         str(port)], env=env or osiris_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    deadline = time.monotonic() + 60
    try:
        while True:  # wait until the port accepts connections (bounded)
            if proc.poll() is not None:
                err = proc.stderr.read() if proc.stderr else ""
                raise RuntimeError(f"HTTP server exited: {err}")
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if time.monotonic() > deadline:
                raise TimeoutError("HTTP server did not start within 60 s")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp", proc
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


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
