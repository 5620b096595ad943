"""``osiris-dashboard`` as a real process on a port of its own choosing."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx2

from tests.server.streams import WAIT_S, announced
from tests.server.transports import osiris_env


@contextlib.contextmanager
def dashboard(env: dict[str, str] | None = None, *args: str,
              command: list[str] | None = None) -> Iterator[str]:
    """Start the dashboard (``python -c 'osiris.dashboard.main()'``, or ``command``) on a
    port it binds itself (``--port 0``, announced on stderr); yield its base URL once it
    answers."""
    command = command or [sys.executable, "-c", "import sys; from osiris.dashboard import "
                          "main; sys.exit(main(sys.argv[1:]))"]
    proc = subprocess.Popen(
        [*command, "--port", "0", *args],
        env=env or osiris_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = announced(proc, "osiris-dashboard: http://")[-1]
        found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert found is not None, line
        base = f"http://127.0.0.1:{found.group(1)}"
        deadline = time.monotonic() + WAIT_S
        while True:  # the socket listens already; wait (bounded) for the app's first answer
            with contextlib.suppress(httpx2.TransportError):
                if httpx2.get(f"{base}/healthz", timeout=2).status_code in (200, 401):
                    break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"dashboard did not answer (exit {proc.poll()})")
            time.sleep(0.05)
        yield base
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
