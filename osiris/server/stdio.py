"""The stdio transport: one JSON-RPC message per line, every request answered.

OSIRIS serves stdio through this module instead of the SDK's ``stdio_server``
(mcp 2.3), which drops any line it cannot parse or validate (it logs it at DEBUG and
moves on) and reads each line whole, however long. A client that sent a malformed
request then waits forever, and one endless line can exhaust memory. Here each line
is read with a bound, checked by :func:`osiris.server.wire.check_message`, and
answered with -32700 or -32600 (under its id where one can be read) when it is not a
valid message; a malformed notification is only logged, as JSON-RPC wants.

The descriptors are claimed as the SDK claims them (its own helper): while serving,
fd 0 reads the null device and fd 1 points at stderr, so stray output of a library
or a child process cannot corrupt the protocol.
"""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import anyio
import anyio.to_thread
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server import Server
from mcp.server.stdio import _claim_fd, _open_stdin_diversion, _open_stdout_diversion
from mcp.shared.message import SessionMessage

from osiris.server.start_cache import Handover, StartCache
from osiris.server.wire import Rejection, check_message, oversized

log = logging.getLogger(__name__)
HEAD_BYTES = 64 * 1024
"""How much of an oversized line is kept to find its id (the rest is discarded)."""
_DRAIN_CHUNK = 1 << 20


@dataclass(frozen=True)
class Line:
    """One line of input: its bytes, or only its head when it was over the limit."""

    data: bytes
    size: int
    """Its length in bytes (for an oversized line: at least the limit)."""
    complete: bool


def read_line(stream: BinaryIO, limit: int) -> Line | None:
    """The next line of ``stream``, holding at most ``limit`` bytes of it in memory;
    None at the end of input."""
    data = stream.readline(limit + 1)
    if not data:
        return None
    if data.endswith(b"\n") or len(data) <= limit:
        return Line(data, len(data), True)
    # Over the limit: keep the head (the id is there) and discard the rest unread
    # into memory, a chunk at a time, up to the end of the line.
    head, size = data[:HEAD_BYTES], len(data)
    del data
    while chunk := stream.readline(_DRAIN_CHUNK):
        size += len(chunk)
        if chunk.endswith(b"\n"):
            break
    return Line(head, size, False)


async def serve(server: Server[Any], max_line_bytes: int, handover: Handover | None = None,
                cache: StartCache | None = None) -> None:
    """Serve ``server`` on the process's stdin and stdout until stdin closes, after what
    :mod:`osiris.server.early` left (``handover``), recording the answers ``cache``
    keeps."""
    async with stdio_streams(max_line_bytes, handover, cache) as (read_stream, write_stream):
        # The SDK's own stdio transport reads unbounded lines; this is its `run` on
        # OSIRIS's streams.
        await server.run(read_stream, write_stream, server.create_initialization_options())


class _Prefixed(io.RawIOBase):
    """``prefix``, then what ``stream`` reads (the bytes the early phase took)."""

    def __init__(self, prefix: bytes, stream: BinaryIO) -> None:
        self._prefix = memoryview(prefix)
        self._stream = stream

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._prefix:
            size = min(len(buffer), len(self._prefix))
            buffer[:size] = self._prefix[:size]
            self._prefix = self._prefix[size:]
            return size
        data = self._stream.read1(len(buffer)) if hasattr(self._stream, "read1") \
            else self._stream.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)


@dataclass
class _Answers:
    """The SDK's answers that the start cache keeps: which requests asked for them."""

    cache: StartCache | None
    swallow: Any = None
    asked: dict[Any, tuple[str, str]] = field(default_factory=dict)
    negotiated: str = ""

    def note(self, data: bytes) -> None:
        """A request line going to the SDK (an initialize or a first tools/list)."""
        if self.cache is None or (b'"initialize"' not in data and b'"tools/list"' not in data):
            return
        with suppress(ValueError, AttributeError, TypeError):
            msg = json.loads(data)
            params = msg.get("params") or {}
            if msg.get("method") == "initialize":
                self.asked[msg["id"]] = ("initialize", str(params.get("protocolVersion")))
            elif msg.get("method") == "tools/list" and not params.get("cursor"):
                self.asked[msg["id"]] = ("tools", "")

    def sent(self, data: str) -> bool:
        """Record an answer going out; False when it must not be sent (the replayed
        initialize, answered early already)."""
        if not self.asked and self.swallow is None:
            return True
        with suppress(ValueError, AttributeError, TypeError):
            msg = json.loads(data)
            request_id = msg.get("id")
            kind = self.asked.pop(request_id, None) if request_id is not None else None
            if kind is not None and self.cache is not None and "result" in msg:
                version = kind[1] if kind[0] == "initialize" else self.negotiated
                if kind[0] == "initialize":
                    self.negotiated = str(msg["result"].get("protocolVersion"))
                self.cache.record(kind[0], version, msg["result"])
                self.cache.save()
            if self.swallow is not None and request_id == self.swallow and (
                    "result" in msg or "error" in msg):
                self.swallow = None
                return False
        return True


@asynccontextmanager
async def stdio_streams(max_line_bytes: int, handover: Handover | None = None,
                        cache: StartCache | None = None) -> AsyncIterator[tuple[
        MemoryObjectReceiveStream[SessionMessage | Exception],
        MemoryObjectSendStream[SessionMessage]]]:
    """The server's read and write streams over fd 0 and fd 1."""
    restore_stdin = restore_stdout = None
    answers = _Answers(cache, handover.swallow if handover is not None else None)
    if handover is not None and handover.negotiated:  # initialize was answered early
        answers.negotiated = handover.negotiated
    try:
        stdin, restore_stdin = _claim_fd(0, sys.stdin, "rb", _open_stdin_diversion)
        if handover is not None and (handover.replay or handover.rest):
            stdin = io.BufferedReader(_Prefixed(b"".join(handover.replay) + handover.rest,
                                                stdin))
        stdout, restore_stdout = _claim_fd(1, sys.stdout, "wb", _open_stdout_diversion)
        inbound_send, inbound = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        outbound, outbound_receive = anyio.create_memory_object_stream[SessionMessage](0)
        # The reader answers rejected lines itself, through the same writer as the
        # server, so replies never interleave on the wire.
        replies = outbound.clone()

        async def reader() -> None:
            with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await read_lines()  # these two only when the server has already stopped

        async def read_lines() -> None:
            async with inbound_send, replies:
                while line := await anyio.to_thread.run_sync(
                        read_line, stdin, max_line_bytes, abandon_on_cancel=True):
                    if not line.data.strip():
                        continue  # a blank line is not a message
                    verdict = (check_message(line.data) if line.complete else
                               oversized(line.data, line.size, max_line_bytes,
                                         "OSIRIS_MAX_PAYLOAD_BYTES"))
                    if not isinstance(verdict, Rejection):
                        answers.note(line.data)
                        await inbound_send.send(SessionMessage(verdict))
                        continue
                    log.warning("stdio: rejected a %d-byte message (%s, id %r)%s",
                                line.size, verdict.message, verdict.request_id,
                                ": a notification, not answered" if verdict.notification
                                else "")
                    if not verdict.notification:
                        await replies.send(SessionMessage(verdict.error()))

        async def writer() -> None:
            async with outbound_receive:
                async for message in outbound_receive:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    if answers.sent(data):
                        await anyio.to_thread.run_sync(_write, stdout, data.encode() + b"\n")

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(reader)
            tasks.start_soon(writer)
            yield inbound, outbound
    finally:
        if restore_stdout is not None:
            restore_stdout()
        if restore_stdin is not None:
            restore_stdin()


def _write(stream: BinaryIO, data: bytes) -> None:
    stream.write(data)
    stream.flush()
