"""A subprocess's output read line by line, with every wait bounded."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import IO, AnyStr, Generic

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
