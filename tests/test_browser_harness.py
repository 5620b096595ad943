"""The browser test harness (tests/browser.py) against a tiny real page.

A Starlette app in a real uvicorn on 127.0.0.1, a real headless Chromium driven by
Selenium: an inline SVG, text, a script from its own route that fetch()es JSON and adds
elements, hostile text that must stay text, and a screenshot that must not be blank. The
browser test skips without chromium/chromedriver (``.ci/install-browser``), unless
TEST_REQUIRE_BROWSER=1 (CI), where it fails. The PNG checks run everywhere.
"""

from __future__ import annotations

import html
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from tests import browser
from tests.browser import (
    chromium_driver,
    console_errors,
    count_colours,
    pixel_at,
    png_size,
    screenshot_is_not_blank,
    serve_app,
    wait_for,
)

# Would set window.__pwned if it ever ran: as markup (script, event handler) or as text.
PAYLOAD = ('<script>window.__pwned = "script"</script>'
           '<img src="x" onerror="window.__pwned = \'img\'">')
SVG_FILL = (30, 144, 255)  # dodgerblue, painted as a solid block the screenshot must show
ITEMS = ["naïve café", "日本語", "a & b < c"]

PAGE = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Harness self-test</title>
<link rel="icon" href="data:,">
<style>body {{ font-family: sans-serif; margin: 16px; background: #fff; }}</style>
<script src="/app.js" defer></script>
</head>
<body>
<main>
<h1 id="title">OSIRIS harness</h1>
<svg id="chart" width="240" height="120" viewBox="0 0 240 120"
     xmlns="http://www.w3.org/2000/svg">
  <rect id="bar" x="0" y="0" width="240" height="120" fill="rgb{SVG_FILL}"/>
  <text x="12" y="64" fill="#fff">chart</text>
</svg>
<p id="server-note">{html.escape(PAYLOAD)}</p>
<div id="control"></div>
</main>
</body>
</html>
"""

APP_JS = """"use strict";
(async () => {
  const response = await fetch("/api/data", { headers: { Accept: "application/json" } });
  const data = await response.json();
  const note = document.createElement("p");
  note.id = "note";
  note.textContent = data.note;
  const list = document.createElement("ul");
  list.id = "items";
  for (const item of data.items) {
    const li = document.createElement("li");
    li.textContent = item;
    list.append(li);
  }
  const done = document.createElement("div");
  done.id = "loaded";
  done.textContent = `loaded ${data.items.length} items`;
  document.querySelector("main").append(note, list, done);
})();
"""


def _app() -> Starlette:
    async def page(_: Request) -> Response:
        return HTMLResponse(PAGE)

    async def script(_: Request) -> Response:
        return Response(APP_JS, media_type="text/javascript")

    async def data(_: Request) -> Response:
        return JSONResponse({"note": PAYLOAD, "items": ITEMS})

    return Starlette(routes=[Route("/", page), Route("/app.js", script),
                             Route("/api/data", data)])


@pytest.fixture
def base_url() -> Iterator[str]:
    with serve_app(_app()) as url:
        yield url


@pytest.fixture
def no_selenium_manager(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make Selenium Manager (which downloads browsers and drivers) an error if it runs."""
    browser.require_browser()  # skip (or fail) here already when there is no browser
    from selenium.webdriver.common.selenium_manager import SeleniumManager

    def refuse(*_args: object, **_kwargs: object) -> dict[str, str]:
        raise AssertionError("Selenium Manager ran: the driver path was not passed")

    monkeypatch.setattr(SeleniumManager, "binary_paths", refuse)


@pytest.mark.slow
@pytest.mark.usefixtures("no_selenium_manager")
def test_real_browser_renders_fetches_and_keeps_text_as_text(base_url: str,
                                                             tmp_path: Path) -> None:
    with chromium_driver(tmp_path) as driver:
        assert driver.get_window_size() == {"width": 1280, "height": 900}
        driver.get(base_url + "/")
        assert driver.title == "Harness self-test"
        loaded = wait_for(driver, "#loaded", timeout=15, visible=True)
        assert loaded.text == "loaded 3 items"
        items = [li.text for li in driver.find_elements("css selector", "#items li")]
        assert items == ITEMS
        assert driver.find_element("id", "title").text == "OSIRIS harness"

        # Hostile text, from the JSON (textContent) and from the server (escaped HTML),
        # shows as the literal string and ran nowhere.
        assert driver.find_element("id", "note").text == PAYLOAD
        assert driver.find_element("id", "server-note").text == PAYLOAD
        assert driver.find_elements("css selector", "main img") == []
        assert driver.execute_script("return typeof window.__pwned") == "undefined"
        assert console_errors(driver) == []  # no JS error, no failed load

        # The screenshot shows the page: many colours, and the SVG's fill where it is.
        png = driver.get_screenshot_as_png()
        assert screenshot_is_not_blank(png, min_colours=8)
        viewport = driver.execute_script("return [innerWidth, innerHeight, devicePixelRatio]")
        assert [*png_size(png), 1] == viewport
        bar = driver.find_element("id", "bar").rect
        x, y = int(bar["x"] + 200), int(bar["y"] + 10)  # inside the rect, clear of the text
        assert pixel_at(png, x, y) == SVG_FILL

        # Control: the probe does see markup that runs (so "undefined" above means something).
        driver.execute_script("document.getElementById('control').innerHTML = arguments[0]",
                              PAYLOAD)
        from selenium.webdriver.support.ui import WebDriverWait

        WebDriverWait(driver, 10).until(
            lambda d: d.execute_script("return window.__pwned") == "img")

        # Control: an empty page's screenshot is blank.
        driver.get("about:blank")
        assert not screenshot_is_not_blank(driver.get_screenshot_as_png())


def test_missing_browser_skips_or_fails_when_required(monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no chromium anywhere
    monkeypatch.delenv("TEST_REQUIRE_BROWSER", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"run \.ci/install-browser"):
        browser.require_browser()
    monkeypatch.setenv("TEST_REQUIRE_BROWSER", "1")
    with pytest.raises(pytest.fail.Exception, match=r"run \.ci/install-browser"):
        browser.require_browser()


# --- screenshots: PNGs written by Pillow ----------------------------------------------

def _png(width: int, height: int, mode: str, pixels: list[Any]) -> bytes:
    """A PNG of ``pixels`` (row by row), written by Pillow."""
    from PIL import Image

    image = Image.new(mode, (width, height))
    image.putdata(pixels)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def _gradient(width: int, height: int) -> list[tuple[int, int, int, int]]:
    return [((x * 37 + y * 11) % 256, (x * 37 + y * 11 + 101) % 256,
             (x * 37 + y * 11 + 202) % 256, (x * 5 + y * 7) % 256)
            for y in range(height) for x in range(width)]


def test_blank_and_not_blank() -> None:
    white = [(255, 255, 255)] * (40 * 30)
    assert count_colours(_png(40, 30, "RGB", white)) == 1
    assert not screenshot_is_not_blank(_png(40, 30, "RGB", white))
    one_dot = [*white[:-1], (0, 0, 0)]
    assert screenshot_is_not_blank(_png(40, 30, "RGB", one_dot))
    assert not screenshot_is_not_blank(_png(40, 30, "RGB", one_dot), min_colours=3)
    pixels = _gradient(40, 30)
    gradient = _png(40, 30, "RGBA", pixels)
    assert count_colours(gradient) == len(set(pixels))
    assert count_colours(gradient, stop_at=5) == 5
    assert screenshot_is_not_blank(gradient, min_colours=50)
    assert png_size(gradient) == (40, 30)
    assert pixel_at(gradient, 3, 2) == pixels[2 * 40 + 3][:3]


def test_a_file_that_is_not_a_png_is_refused() -> None:
    with pytest.raises(OSError, match="cannot identify image"):
        count_colours(b"GIF89a not an image")
