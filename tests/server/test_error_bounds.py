"""Errors quote at most a short, scrubbed excerpt of their input; integers are bounded;
the payload limit is measured in UTF-8 bytes (issue 16, items 6, 14 and 15)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client

from osiris.config import Settings
from osiris.server import build_server
from tests.server.transports import client_for, run

SECRET = "ghp_" + "R8m2Kx9Qv4Lw7Zp1Tn6Yb3Hs5Jd0Fc8Ge2Ua"
ERROR_LIMIT = 2_000  # characters of error text, structured content included


def _error_size(result: Any) -> int:
    text = "".join(getattr(c, "text", "") for c in result.content)
    return len(text) + len(json.dumps(result.structured_content or {}))


async def _task(client: Client) -> str:
    start = await client.call_tool("osiris_plan", {"mode": "start", "objective": "bounds"})
    return str(start.structured_content["task_id"])


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["inprocess", "stdio"])
def test_a_huge_wrong_input_gets_a_short_scrubbed_error(transport: str) -> None:
    big_list = [f"line {i} token {SECRET}" for i in range(120_000)]  # ~5 MiB, not a string

    async def flow() -> None:
        async with client_for(transport, "auto") as client:
            task = await _task(client)
            cases: list[tuple[str, dict[str, Any]]] = [
                ("osiris_observe", {"task_id": task, "kind": "result", "result": big_list}),
                ("osiris_recall", {"ref": f"mem://sha256:{SECRET} " + "x" * 5_000_000}),
                ("osiris_plan", {"mode": "start", "objective": {"k": f"{SECRET} " * 200_000}}),
                ("osiris_precheck", {"task_id": task, "tool": "Bash",
                                     "args": f"not json {SECRET} " * 200_000}),
            ]
            for tool, args in cases:
                result = await client.call_tool(tool, args)
                assert result.is_error, tool
                assert _error_size(result) < ERROR_LIMIT, (tool, _error_size(result))
                shown = result.content[0].text + json.dumps(result.structured_content)
                assert SECRET not in shown, tool
                assert shown.startswith("invalid_input"), shown[:200]

    run(flow())


@pytest.mark.parametrize("transport", ["inprocess", "stdio"])
def test_integers_beyond_the_json_safe_range_are_invalid_input(transport: str) -> None:
    async def flow() -> None:
        async with client_for(transport, "auto") as client:
            task = await _task(client)
            cases: list[tuple[str, dict[str, Any], str]] = [
                ("osiris_observe", {"task_id": task, "kind": "action", "tool": "x",
                                    "usage": {"input_tokens": 2 ** 63}}, "usage.input_tokens"),
                ("osiris_observe", {"task_id": task, "kind": "action", "tool": "x",
                                    "usage": {"input_tokens": -(2 ** 70)}},
                 "usage.input_tokens"),
                ("osiris_plan", {"mode": "update", "task_id": task, "active_step": 2 ** 64},
                 "active_step"),
                ("osiris_plan", {"mode": "update", "task_id": task,
                                 "budget": {"tokens": 10 ** 30}}, "budget.tokens"),
                ("osiris_checkpoint", {"task_id": task, "mode": "report", "offset": 2 ** 63},
                 "offset"),
            ]
            for tool, args, where in cases:
                result = await client.call_tool(tool, args)
                assert result.is_error, (tool, where)
                text = result.content[0].text
                assert text.startswith("invalid_input"), text
                assert where in text, text
            # The task is intact and still usable.
            status = await client.call_tool("osiris_plan", {"mode": "status", "task_id": task})
            assert not status.is_error

    run(flow())


def test_the_payload_limit_counts_utf8_bytes_not_escaped_json() -> None:
    settings = Settings.from_env()
    emoji = "\U0001F600" * (6 * 1024 * 1024)  # 24 MiB of UTF-8, 72 MiB as ASCII-escaped JSON

    async def flow() -> None:
        async with Client(build_server(settings)) as client:
            task = await _task(client)
            result = await client.call_tool("osiris_observe", {
                "task_id": task, "kind": "result", "tool": "cat", "result": emoji})
            assert not result.is_error, result.content[0].text
            assert result.structured_content["ref"].startswith("mem://sha256:")
            over = await client.call_tool("osiris_observe", {
                "task_id": task, "kind": "result", "tool": "cat",
                "result": "\U0001F600" * (8 * 1024 * 1024 + 1)})
            assert over.is_error
            assert "OSIRIS_MAX_PAYLOAD_BYTES" in over.content[0].text

    run(flow())
