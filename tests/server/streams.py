"""A subprocess's output read line by line, with every wait bounded; a raw stdio client."""

from __future__ import annotations

import json
import os
import queue
import select
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any, AnyStr, Generic

WAIT_S = 60  # a bound, not a wait: lines normally arrive in milliseconds


class Lines(Generic[AnyStr]):
    """The lines of ``stream``, read by a daemon thread so that no read can hang a test."""

    def __init__(self, stream: IO[AnyStr]) -> None:
        self._queue: queue.Queue[AnyStr | None] = queue.Queue()
        self.seen: list[AnyStr] = []
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: IO[AnyStr]) -> None:
        try:
            for line in iter(stream.readline, stream.read(0)):
                self._queue.put(line)
        except (OSError, ValueError):
            pass  # the owner closed the pipe (Popen.communicate at the end of a test)
        self._queue.put(None)  # end of stream

    def next(self, timeout: float = WAIT_S) -> AnyStr | None:
        """The next line, or None at the end of the stream."""
        try:
            line = self._queue.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no output within {timeout} s") from None
        if line is not None:
            self.seen.append(line)
        else:
            self._queue.put(None)  # stays at the end for the next reader
        return line

    def wait_for(self, predicate: Callable[[AnyStr], bool], timeout: float = WAIT_S) -> AnyStr:
        """The first line from here on that satisfies ``predicate``."""
        deadline = time.monotonic() + timeout
        while True:
            line = self.next(max(deadline - time.monotonic(), 0.001))
            if line is None:
                raise AssertionError("the stream ended before the expected line")
            if predicate(line):
                return line

    def rest(self) -> list[AnyStr]:
        """Every line still queued (call once the process has ended)."""
        out = []
        while (line := self.next()) is not None:
            out.append(line)
        return out


def announced(proc: subprocess.Popen[str], marker: str, timeout: float = WAIT_S) -> list[str]:
    """The stderr lines of ``proc`` up to and including the first that contains ``marker``,
    read byte by byte from the pipe with a deadline (nothing after it is consumed: the rest
    stays for ``proc.communicate()``). AssertionError when the process ends or the deadline
    passes first."""
    assert proc.stderr is not None
    fd, lines, line = proc.stderr.fileno(), [], b""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise AssertionError(f"no {marker!r} on stderr within {timeout} s: {lines}")
        byte = os.read(fd, 1)
        if not byte:
            raise AssertionError(f"the process ended (exit {proc.wait()}) before it said "
                                 f"{marker!r}: {lines}")
        line += byte
        if byte == b"\n":
            lines.append(line.decode("utf-8", "replace"))
            line = b""
            if marker in lines[-1]:
                return lines


class RawStdio:
    """``python -m osiris`` on pipes, read by threads so no missing reply can hang the test."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "osiris"], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self.stdout, self.stderr = Lines(self.proc.stdout), Lines(self.proc.stderr)

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def reply(self) -> dict[str, Any]:
        line = self.stdout.next()
        assert line is not None, "the server closed stdout"
        message = json.loads(line)  # stdout carries JSON-RPC only
        assert isinstance(message, dict) and message["jsonrpc"] == "2.0", message
        return message

    def close(self) -> tuple[list[bytes], bytes]:
        """End the client; what the server wrote after the last reply, and its stderr."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        rest, stderr = self.stdout.rest(), b"".join(self.stderr.seen + self.stderr.rest())
        for pipe in (self.proc.stdout, self.proc.stderr):
            assert pipe is not None
            pipe.close()  # both were read to their end
        return rest, stderr
