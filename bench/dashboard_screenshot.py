"""Take the README's dashboard screenshots: ``python bench/dashboard_screenshot.py [OUT_DIR]``.

Builds a home of 300 tasks and 30,000 journal events from real engine activity
(``osiris.harness.bench.large_home``), serves it with ``osiris-dashboard`` in its own process,
and photographs the overview and one task in headless Chromium (Debian's ``chromium``
and ``chromium-driver``; Selenium from the ``test`` extra). Writes
``docs/dashboard.png`` and ``docs/dashboard-task.png`` by default.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def _dashboard(home: Path):  # type: ignore[no-untyped-def]
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; from osiris.dashboard import main; "
         "sys.exit(main(sys.argv[1:]))", "--port", str(port),
         "--reports", str(REPO / "reports")],
        env={"OSIRIS_HOME": str(home), "PATH": "/usr/bin:/bin"},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            with contextlib.suppress(OSError):
                urllib.request.urlopen(base + "/healthz", timeout=2).close()
                break
            if proc.poll() is not None:
                raise RuntimeError(proc.stderr.read().decode() if proc.stderr else "exited")
            time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main(argv: list[str]) -> int:
    from selenium.webdriver.common.by import By

    from osiris.harness.bench.large_home import build_large_home
    from tests.browser import chromium_driver, screenshot_is_not_blank, wait_for

    out = Path(argv[0]) if argv else REPO / "docs"
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="osiris-shot-") as scratch:
        home = Path(scratch) / "home"
        build_large_home(home, 300, 30_000, seed=3, days=7.0, handoff_share=0.05)
        with _dashboard(home) as base, chromium_driver(Path(scratch)) as driver:
            driver.set_window_size(1280, 1500)
            driver.get(base + "/")
            wait_for(driver, "svg")
            time.sleep(1)
            shots = {"dashboard.png": driver.get_screenshot_as_png()}
            driver.get(base + "/tasks")
            link = driver.find_elements(By.CSS_SELECTOR, "main a[href^='/tasks/']")[0]
            driver.get(link.get_attribute("href") or base)
            wait_for(driver, "main")
            time.sleep(1)
            shots["dashboard-task.png"] = driver.get_screenshot_as_png()
    for name, png in shots.items():
        if not screenshot_is_not_blank(png):
            sys.stderr.write(f"{name}: the screenshot is blank\n")
            return 1
        (out / name).write_bytes(png)
        sys.stderr.write(f"wrote {out / name} ({len(png):,} bytes)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
