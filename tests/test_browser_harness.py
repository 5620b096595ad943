"""The browser test harness (tests/browser.py) against a tiny real page.

A Starlette app in a real uvicorn on 127.0.0.1, a real headless Chromium driven by
Selenium: an inline SVG, text, a script from its own route that fetch()es JSON and adds
elements, hostile text that must stay text, and a screenshot that must not be blank. The
browser test skips without chromium/chromedriver (``.ci/install-browser``), unless
TEST_REQUIRE_BROWSER=1 (CI), where it fails. The PNG checks run everywhere.
"""

from __future__ import annotations

import html
import struct
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

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
    decode_png,
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
        image = decode_png(png)
        viewport = driver.execute_script("return [innerWidth, innerHeight, devicePixelRatio]")
        assert [image.width, image.height, 1] == viewport
        bar = driver.find_element("id", "bar").rect
        x, y = int(bar["x"] + 200), int(bar["y"] + 10)  # inside the rect, clear of the text
        row = image.rows[y]
        assert tuple(row[x * image.channels:x * image.channels + 3]) == SVG_FILL

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


# --- the PNG decoder, on PNGs written here with every filter type ---------------------

def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)


def _filter_row(kind: int, row: bytes, prior: bytes, bpp: int) -> bytes:
    out = bytearray()
    for i, value in enumerate(row):
        a = row[i - bpp] if i >= bpp else 0
        b = prior[i]
        c = prior[i - bpp] if i >= bpp else 0
        predictor = [0, a, b, (a + b) >> 1, _paeth(a, b, c)][kind]
        out.append((value - predictor) & 0xFF)
    return bytes(out)


def _png(width: int, height: int, colour_type: int, rows: list[bytes],
         depth: int = 8) -> bytes:
    """A PNG whose rows use filter types 0..4 in turn."""
    bpp = {0: 1, 2: 3, 4: 2, 6: 4}[colour_type]

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data)))

    raw = bytearray()
    prior = bytes(width * bpp)
    for y, row in enumerate(rows):
        raw.append(y % 5)
        raw += _filter_row(y % 5, row, prior, bpp)
        prior = row
    header = struct.pack(">IIBBBBB", width, height, depth, colour_type, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(bytes(raw))) + chunk(b"IEND", b""))


def _gradient(width: int, height: int, bpp: int) -> list[bytes]:
    return [bytes((x * 37 + y * 11 + k * 101) % 256 for x in range(width) for k in range(bpp))
            for y in range(height)]


@pytest.fixture(params=["pillow", "zlib"])
def decoder(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """count_colours through Pillow (when installed) and through the zlib fallback."""
    if request.param == "pillow":
        pytest.importorskip("PIL")
    else:
        monkeypatch.setitem(sys.modules, "PIL", None)  # `from PIL import Image` fails
    return str(request.param)


@pytest.mark.parametrize(("colour_type", "bpp"), [(0, 1), (2, 3), (4, 2), (6, 4)])
def test_png_decoder_undoes_every_filter(colour_type: int, bpp: int) -> None:
    rows = _gradient(23, 12, bpp)
    image = decode_png(_png(23, 12, colour_type, rows))
    assert (image.width, image.height, image.channels) == (23, 12, bpp)
    assert image.rows == rows


@pytest.mark.usefixtures("decoder")
def test_blank_and_not_blank() -> None:
    white = [b"\xff" * (40 * 3)] * 30
    assert count_colours(_png(40, 30, 2, white)) == 1
    assert not screenshot_is_not_blank(_png(40, 30, 2, white))
    one_dot = [*white[:29], b"\xff" * 117 + b"\x00\x00\x00"]
    assert screenshot_is_not_blank(_png(40, 30, 2, one_dot))
    assert not screenshot_is_not_blank(_png(40, 30, 2, one_dot), min_colours=3)
    gradient = _png(40, 30, 6, _gradient(40, 30, 4))
    assert count_colours(gradient) == len(set(decode_png(gradient).pixels()))
    assert count_colours(gradient, stop_at=5) == 5
    assert screenshot_is_not_blank(gradient, min_colours=50)


def test_png_decoder_rejects_what_it_cannot_read() -> None:
    good = _png(4, 4, 2, _gradient(4, 4, 3))
    with pytest.raises(ValueError, match="signature"):
        decode_png(b"GIF89a" + good[6:])
    corrupt = bytearray(good)
    corrupt[-20] ^= 0xFF  # inside the IDAT data
    with pytest.raises(ValueError, match="CRC"):
        decode_png(bytes(corrupt))
    with pytest.raises(ValueError, match="truncated"):
        decode_png(good[:-12])
    sixteen_bit = _png(4, 4, 2, [bytes(12)] * 4, depth=16)
    with pytest.raises(ValueError, match="bit depth 16"):
        decode_png(sixteen_bit)
