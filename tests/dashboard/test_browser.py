"""The dashboard in a real headless Chromium, over data a real MCP server process writes."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.browser import (
    chromium_driver,
    console_errors,
    require_browser,
    screenshot_is_not_blank,
    wait_for,
)
from tests.dashboard.process import dashboard
from tests.server.transports import osiris_env, stdio_params

pytestmark = pytest.mark.slow  # a real browser

HOSTILE = "<script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\">"


async def _agent(env: dict[str, str], objective: str) -> dict[str, Any]:
    """A stdio MCP server process doing an agent's work on the home."""
    async with Client(stdio_params(env)) as client:
        start = await client.call_tool("osiris_plan", {
            "mode": "start", "objective": objective, "steps": ["read", "fix", "test"],
            "active_step": 0})
        task = start.structured_content["task_id"]
        log = "\n".join(f"tests/test_mod{i}.py::test_case PASSED" for i in range(300))
        await client.call_tool("osiris_observe", {
            "task_id": task, "kind": "result", "tool": "Bash",
            "args": {"command": "pytest -q"}, "result": log})
        page = await client.call_tool("osiris_observe", {
            "task_id": task, "kind": "result", "tool": "Read",
            "args": {"file_path": "page.html"}, "result": (HOSTILE + "\n") * 200})
        ref = page.structured_content["ref"]
        await client.call_tool("osiris_recall", {"ref": ref, "op": "grep",
                                                 "pattern": "script", "task_id": task})
        for _ in range(3):
            await client.call_tool("osiris_precheck", {
                "task_id": task, "tool": "Bash", "args": {"command": "npm test"}})
            await client.call_tool("osiris_observe", {
                "task_id": task, "kind": "error", "tool": "Bash",
                "args": {"command": "npm test"}, "result": "Error: expected 2, got 3\n"})
        await client.call_tool("osiris_precheck", {
            "task_id": task, "tool": "Bash", "args": {"command": "npm test"}})
        await client.call_tool("osiris_observe", {
            "task_id": task, "kind": "head", "result": "system prompt, now 10:00:00"})
        await client.call_tool("osiris_observe", {
            "task_id": task, "kind": "head", "result": "system prompt, now 10:05:00"})
        return {"task": task, "ref": ref}


def test_the_dashboard_in_a_real_browser(tmp_path: Path) -> None:
    require_browser()
    env = osiris_env(OSIRIS_HOME=str(tmp_path / "home"))
    first = asyncio.run(_agent(env, "first agent: fix the parser"))
    with dashboard(env) as base, chromium_driver(tmp_path) as driver:
        driver.get(base + "/")
        wait_for(driver, "svg.chart polyline")
        assert len(driver.find_elements("css selector", "svg.chart polyline")) >= 4
        assert "drift critical" in driver.find_element("css selector", "main").text
        assert "block" in driver.find_element("css selector", "main").text
        png = driver.get_screenshot_as_png()
        (tmp_path / "overview.png").write_bytes(png)
        assert screenshot_is_not_blank(png, min_colours=8)

        # Live: a second MCP server process writes; the open page shows it without a
        # reload (the marker set on this page survives, the task count changes).
        driver.execute_script("window.__sameDocument = 42;")
        asyncio.run(_agent(env, "second agent: update the docs"))
        deadline = time.monotonic() + 30
        while "2\ntasks" not in _text(driver, ".cards"):
            assert time.monotonic() < deadline, _text(driver, "main")
            time.sleep(0.5)
        assert driver.execute_script("return window.__sameDocument") == 42

        driver.get(f"{base}/tasks/{first['task']}")
        wait_for(driver, "pre.manifest")
        assert driver.find_element("css selector", "pre.manifest").text.startswith(
            f"OSIRIS/1 task={first['task']}")
        assert driver.find_elements("css selector", "svg.chart polyline")

        driver.get(f"{base}/ref?ref={first['ref']}")
        preview = wait_for(driver, "pre.preview").text
        assert preview.startswith(HOSTILE)
        assert driver.execute_script("return typeof window.__pwned") == "undefined"
        assert not driver.find_elements("css selector", "main img")

        driver.get(f"{base}/tasks/{first['task']}/audit")
        assert "lossless" in wait_for(driver, "p.audit").text
        driver.get(base + "/bench/")
        wait_for(driver, "main")
        assert console_errors(driver) == []


def _text(driver: Any, selector: str) -> str:
    """The element's text; the live page may replace it between finding and reading
    (StaleElementReferenceException), then it is found again."""
    from selenium.common.exceptions import StaleElementReferenceException

    for _ in range(20):
        try:
            return str(driver.find_element("css selector", selector).text)
        except StaleElementReferenceException:
            time.sleep(0.05)
    return str(driver.find_element("css selector", selector).text)
