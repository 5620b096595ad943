"""A real headless Chromium for tests, driven by Selenium (a helper module, not a test file).

Chromium and chromedriver come from Debian's ``chromium`` and ``chromium-driver`` packages,
installed by ``.ci/install-browser`` (run by ``nox -s tests`` and ``.ci/run``). Nothing is
downloaded at test time: the driver path is passed to Selenium explicitly, so Selenium
Manager never runs. Without the two binaries the tests that use them skip, unless
TEST_REQUIRE_BROWSER=1 (CI), where they fail.

Usage::

    with serve_app(app) as base_url, chromium_driver(tmp_path) as driver:
        driver.get(base_url + "/")
        wait_for(driver, "#loaded")
        assert screenshot_is_not_blank(driver.get_screenshot_as_png())
"""

from __future__ import annotations

import io
import os
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from selenium.webdriver.chrome.webdriver import WebDriver
    from selenium.webdriver.remote.webelement import WebElement

REQUIRE_ENV = "TEST_REQUIRE_BROWSER"
MISSING_MESSAGE = "chromium/chromedriver not found on PATH: run .ci/install-browser"
WINDOW_SIZE = (1280, 900)
PAGE_LOAD_TIMEOUT = 30.0
# The flags ../shared/FACTS.md prescribes, then ours: a fixed window and scale (stable
# screenshots), no proxy (the pages are on 127.0.0.1), and no /dev/shm (often 64 MB in
# containers; Debian's launcher means to add this flag itself but its check misfires
# when /dev/shm is mounted twice, as here).
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    f"--window-size={WINDOW_SIZE[0]},{WINDOW_SIZE[1]}",
    "--force-device-scale-factor=1",
    "--no-proxy-server",
    "--disable-dev-shm-usage",
)


def browser_binaries() -> tuple[Path, Path] | None:
    """``(chromium, chromedriver)`` from PATH, or None when either is missing."""
    chromium = shutil.which("chromium")
    chromedriver = shutil.which("chromedriver")
    if not chromium or not chromedriver:
        return None
    return Path(chromium), Path(chromedriver)


def require_browser() -> tuple[Path, Path]:
    """The two binaries; skip the test without them (fail when TEST_REQUIRE_BROWSER=1)."""
    found = browser_binaries()
    if found is None:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(MISSING_MESSAGE)
        pytest.skip(MISSING_MESSAGE)
    try:
        import selenium  # noqa: F401
    except ImportError:  # pragma: no cover - selenium is in the test extra
        message = 'selenium is not installed: pip install -e ".[test]"'
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(message)
        pytest.skip(message)
    return found


@contextmanager
def chromium_driver(tmp_path: Path, *,
                    page_load_timeout: float = PAGE_LOAD_TIMEOUT) -> Iterator[WebDriver]:
    """A fresh headless Chromium (own profile under ``tmp_path``), quit on exit.

    Browser console messages are recorded (see :func:`console_errors`); chromedriver's log
    is ``tmp_path / "chromedriver-*.log"``, quoted when the browser does not start.
    """
    from selenium import webdriver
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.options import BaseOptions

    chromium, chromedriver = require_browser()
    tmp_path.mkdir(parents=True, exist_ok=True)
    # A fresh directory per browser, so one test may start several.
    profile = Path(tempfile.mkdtemp(prefix="chromium-profile-", dir=tmp_path))
    log_path = profile.with_name(profile.name.replace("chromium-profile-", "chromedriver-")
                                 + ".log")

    options = webdriver.ChromeOptions()
    options.binary_location = str(chromium)
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # WebDriver commands go to chromedriver on localhost: never through an HTTP(S)_PROXY
    # from the environment. (ChromeOptions' override of this method only adds a
    # DeprecationWarning, an error under our filterwarnings.)
    BaseOptions.ignore_local_proxy_environment_variables(options)
    # An explicit executable_path is what keeps Selenium Manager (a downloader) out.
    service = Service(executable_path=str(chromedriver), log_output=str(log_path),
                      service_args=["--enable-chrome-logs"])
    try:
        driver = webdriver.Chrome(options=options, service=service)
    except WebDriverException as exc:
        log = log_path.read_text(errors="replace")[-4000:] if log_path.exists() else ""
        pytest.fail(f"headless Chromium did not start: {exc.msg}\n"
                    f"--- chromedriver log tail ({log_path}) ---\n{log}")
    try:
        driver.set_page_load_timeout(page_load_timeout)
        driver.set_script_timeout(page_load_timeout)
        yield driver
    finally:
        driver.quit()


def wait_for(driver: WebDriver, css: str, timeout: float = 10.0, *,
             visible: bool = False) -> WebElement:
    """The first element matching ``css`` once it exists (and is displayed, if ``visible``).

    Fails the test with the page's URL and visible text when it does not appear in time.
    """
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    locator = (By.CSS_SELECTOR, css)
    condition = (ec.visibility_of_element_located(locator) if visible
                 else ec.presence_of_element_located(locator))
    try:
        element: WebElement = WebDriverWait(driver, timeout).until(condition)
    except TimeoutException:
        body = driver.execute_script("return document.body ? document.body.innerText : ''")
        pytest.fail(f"no element {css!r} after {timeout}s on {driver.current_url}\n"
                    f"page text: {str(body)[:2000]!r}\n"
                    f"console errors: {console_errors(driver)}")
    return element


def console_errors(driver: WebDriver) -> list[str]:
    """SEVERE browser-console messages since the last call (JS errors, failed loads)."""
    entries: list[dict[str, Any]] = driver.get_log("browser")
    return [str(e.get("message")) for e in entries if e.get("level") == "SEVERE"]


# --- screenshots ---------------------------------------------------------------------

def _image(png: bytes) -> Any:
    """``png`` as an RGBA Pillow image (Pillow comes with matplotlib, the tests' extra)."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        image.load()
        return image.convert("RGBA")


def png_size(png: bytes) -> tuple[int, int]:
    """Width and height of ``png``."""
    image = _image(png)
    return image.width, image.height


def pixel_at(png: bytes, x: int, y: int) -> tuple[int, int, int]:
    """The RGB colour of one pixel of ``png``."""
    red, green, blue, _alpha = _image(png).getpixel((x, y))
    return red, green, blue


def count_colours(png: bytes, stop_at: int | None = None) -> int:
    """Distinct pixel values in ``png`` (counting stops early once ``stop_at`` is reached)."""
    rgba = _image(png)
    limit = stop_at if stop_at is not None else rgba.width * rgba.height
    # getcolors returns None when there are more than maxcolors colours.
    colours = rgba.getcolors(maxcolors=max(limit - 1, 1))
    return limit if colours is None else len(colours)


def screenshot_is_not_blank(png: bytes, min_colours: int = 2) -> bool:
    """True when the screenshot has at least ``min_colours`` distinct colours.

    The default (2) means "not every pixel is the same"; rendered text alone gives dozens
    of colours (anti-aliasing), so a page check can ask for more.
    """
    if min_colours < 1:
        raise ValueError("min_colours must be at least 1")
    return count_colours(png, stop_at=min_colours) >= min_colours


# --- a real server for the page under test -------------------------------------------

@contextmanager
def serve_app(app: Any, *, startup_timeout: float = 10.0) -> Iterator[str]:
    """Serve an ASGI ``app`` with a real uvicorn on 127.0.0.1 (a free port) in a thread.

    Yields the base URL (``http://127.0.0.1:PORT``, no trailing slash); stops the server
    on exit. The listening socket is bound before the thread starts, so there is no race
    for the port.
    """
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="off", ws="none",
                            http="h11", loop="asyncio", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]},
                              name=f"uvicorn-{port}", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + startup_timeout
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                pytest.fail(f"uvicorn did not start on 127.0.0.1:{port}")
            time.sleep(0.02)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
