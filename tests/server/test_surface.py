"""Footprint, dispatch-only and dotted names, and a light start-up."""

from __future__ import annotations

import json
import subprocess
import sys

from mcp import Client

from osiris.config import Settings
from osiris.server import build_server
from osiris.server.footprint import BUDGET_TOKENS, SEED_TOKENS
from tests.conftest import run_cli
from tests.server.transports import osiris_env, run


def test_tool_definitions_stay_under_800_tokens() -> None:
    result = run_cli("footprint")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["encoding"] == "cl100k_base"
    assert doc["total_tokens"] <= BUDGET_TOKENS < SEED_TOKENS
    assert len(doc["tools"]) == 6
    assert doc["instructions_chars"] <= 1500


def test_listed_schemas_are_the_measured_ones() -> None:
    async def listed() -> list[dict]:
        async with Client(build_server(Settings.from_env())) as client:
            return [{"name": t.name, "description": t.description,
                     "input_schema": t.input_schema} for t in (await client.list_tools()).tools]
    from osiris.server.definitions import model_facing

    assert run(listed()) == model_facing()


def test_dispatch_only_lists_one_tool_that_reaches_all_six(settings: Settings) -> None:
    from dataclasses import replace

    server = build_server(replace(settings, dispatch_only=True))

    async def flow() -> None:
        async with Client(server) as client:
            tools = (await client.list_tools()).tools
            assert [t.name for t in tools] == ["osiris_call"]
            start = await client.call_tool("osiris_call", {
                "op": "plan", "args": {"mode": "start", "objective": "dispatch"}})
            assert not start.is_error
            task = start.structured_content["task_id"]
            observed = await client.call_tool("osiris_call", {
                "op": "observe", "args": {"task_id": task, "kind": "action", "tool": "Edit"}})
            assert observed.structured_content["recorded"] is True
            bad = await client.call_tool("osiris_call", {"op": "plan", "args": {"mode": 3}})
            assert bad.is_error and "invalid arguments for osiris_plan" in bad.content[0].text
    run(flow())


def test_the_hooks_surface_costs_the_agent_one_tool_and_no_instructions() -> None:
    """``OSIRIS_SURFACE=hooks`` (what ``osiris install claude-code`` sets), over stdio:
    osiris_recall (and the hooks' own tool) listed, no instructions, no resources; a
    recall still answers."""
    from tests.server.transports import stdio_params

    env = osiris_env(OSIRIS_SURFACE="hooks", OSIRIS_HOOK_TOOL="on")

    async def flow() -> None:
        async with Client(stdio_params(env), mode="legacy") as client:
            assert not client.instructions
            assert client.server_capabilities.resources is None
            tools = (await client.list_tools()).tools
            assert [t.name for t in tools] == ["osiris_recall", "osiris_hook"]
            bad = await client.call_tool("osiris_recall", {"ref": "mem://sha256:" + "0" * 64})
            assert bad.is_error and "is not in the ref store" in bad.content[0].text
            hidden = await client.call_tool("osiris_plan", {"mode": "status"})
            assert hidden.is_error
    run(flow())


def test_dotted_names_on_request(settings: Settings) -> None:
    from dataclasses import replace

    async def names() -> list[str]:
        async with Client(build_server(replace(settings, tool_names="dotted"))) as client:
            tools = (await client.list_tools()).tools
            result = await client.call_tool("osiris.plan", {"mode": "start",
                                                            "objective": "dots"})
            assert not result.is_error
            return [t.name for t in tools]
    assert run(names()) == ["osiris.plan", "osiris.precheck", "osiris.observe",
                            "osiris.recall", "osiris.checkpoint", "osiris.handoff"]
    assert Settings.from_env({"OSIRIS_TOOL_NAMES": "dotted"}).tool_names == "dotted"


def test_server_start_up_imports_no_analysis_stack() -> None:
    code = ("import sys; import osiris.cli, osiris.server.transports; "
            "from osiris.server import build_server; from osiris.config import Settings; "
            "build_server(Settings.from_env()); "
            "print(sorted(m for m in ('polars', 'pyarrow', 'nbclient', 'matplotlib', "
            "'osiris.harness') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], env=osiris_env(), capture_output=True,
                         text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]"
