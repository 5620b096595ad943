"""``osiris-dashboard`` as a real process on a free port."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx2

from tests.server.transports import free_port, osiris_env


@contextlib.contextmanager
def dashboard(env: dict[str, str] | None = None, *args: str,
              port: int | None = None) -> Iterator[str]:
    """Start the dashboard (``python -c 'osiris.dashboard.main()'``); yield its base URL."""
    port = port or free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; from osiris.dashboard import main; "
         "sys.exit(main(sys.argv[1:]))", "--port", str(port), *args],
        env=env or osiris_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    try:
        while True:  # bounded wait for the first answer
            if proc.poll() is not None:
                raise RuntimeError(f"dashboard exited: {proc.stderr.read() if proc.stderr else ''}")
            with contextlib.suppress(httpx2.TransportError):
                if httpx2.get(f"{base}/healthz", timeout=2).status_code in (200, 401):
                    break
            if time.monotonic() > deadline:
                raise TimeoutError("dashboard did not start within 60 s")
            time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
