"""The same server on every transport and protocol era: identical listings, a full
agent flow, and two stdio servers sharing one home."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from osiris.config import Settings
from osiris.core.operating_context import DOCTRINE
from osiris.engine.audit import audit_task
from osiris.server.definitions import TOOLS
from osiris.store.state import Store
from tests.server.transports import (
    ERAS,
    TRANSPORTS,
    client_for,
    http_server,
    osiris_env,
    run,
    stdio_params,
)


async def _listing(client: Client) -> dict[str, Any]:
    tools = (await client.list_tools()).tools
    resources = (await client.list_resources()).resources
    templates = (await client.list_resource_templates()).resource_templates
    prompts = (await client.list_prompts()).prompts
    return {
        "tools": [(t.name, t.title, t.description, json.dumps(t.input_schema, sort_keys=True),
                   t.annotations.read_only_hint, t.annotations.destructive_hint,
                   t.annotations.idempotent_hint) for t in tools],
        "resources": sorted(str(r.uri) for r in resources),
        "templates": sorted(t.uri_template for t in templates),
        "prompts": sorted(p.name for p in prompts),
        "instructions": client.instructions,
    }


def test_every_transport_and_era_lists_the_same_surface() -> None:
    env = osiris_env()
    listings = {}

    async def collect(url: str) -> None:
        for transport in TRANSPORTS:
            for mode in ERAS:
                async with client_for(transport, mode, url=url, env=env) as client:
                    listings[(transport, mode)] = await _listing(client)
                    if mode == "legacy":
                        assert client.protocol_version == "2025-11-25"
                    else:
                        assert client.protocol_version == "2026-07-28"

    with http_server(env) as (url, _):
        run(collect(url))
    first = listings[("inprocess", "auto")]
    for key, listing in listings.items():
        assert listing == first, key
    assert [t[0] for t in first["tools"]] == [f"osiris_{t.key}" for t in TOOLS]
    assert [t[1] for t in first["tools"]] == [f"osiris.{t.key}" for t in TOOLS]
    assert first["resources"] == ["osiris://context"]
    assert first["templates"] == ["osiris://ref/{+ref}", "osiris://task/{task_id}/manifest",
                                  "osiris://task/{task_id}/status"]
    assert first["prompts"] == ["osiris/task-resume"]
    assert first["instructions"] == DOCTRINE
    by_name = {t[0]: t for t in first["tools"]}
    assert by_name["osiris_recall"][4:] == (True, False, True)  # read-only, idempotent
    assert by_name["osiris_observe"][4:] == (False, False, False)
    for tool in first["tools"]:
        assert '"title"' not in tool[3]  # no generated schema noise


async def _agent_flow(client: Client, payload: str) -> dict[str, Any]:
    start = await client.call_tool("osiris_plan", {
        "mode": "start", "objective": "fix the failing login test",
        "steps": ["reproduce", "fix", "verify"], "active_step": 0})
    assert not start.is_error, start.content
    task = start.structured_content["task_id"]
    assert start.content[0].text.startswith(f"OSIRIS/1 task={task}")
    seal = start.structured_content["seal"]
    big = await client.call_tool("osiris_observe", {
        "task_id": task, "kind": "result", "tool": "Bash",
        "args": {"command": "pytest -q"}, "result": payload, "seal": f"SEAL=sha256:{seal}"})
    assert not big.is_error, big.content
    ref = big.structured_content["ref"]
    assert big.structured_content["mode"] in ("standard", "full")
    assert "FAILED tests/test_login.py" in big.structured_content["preview"]
    recalled = await client.call_tool("osiris_recall", {"ref": ref, "op": "grep",
                                                        "pattern": "AssertionError",
                                                        "context": 1, "task_id": task})
    assert not recalled.is_error
    assert "AssertionError: expected 200, got 401" in recalled.content[0].text
    verdict = await client.call_tool("osiris_precheck", {
        "task_id": task, "tool": "Bash", "args": {"command": "pytest -q"}})
    assert verdict.structured_content["verdict"] in ("allow", "suggest_alternative", "warn")
    checkpoint = await client.call_tool("osiris_checkpoint", {"task_id": task,
                                                              "mode": "compact"})
    assert not checkpoint.is_error
    assert checkpoint.structured_content["leaving"] >= 1
    manifest = await client.read_resource(f"osiris://task/{task}/manifest")
    assert json.loads(manifest.contents[0].text)["task_id"] == task
    raw = await client.read_resource(f"osiris://ref/{ref}")
    content = raw.contents[0]
    data = content.blob if hasattr(content, "blob") else content.text
    import base64

    assert base64.b64decode(data).decode() == payload
    prompt = await client.get_prompt("osiris/task-resume", {"task_id": task})
    assert "fix the failing login test" in prompt.messages[0].content.text
    return {"task": task, "ref": ref}


PAYLOAD = "\n".join([f"tests/test_mod{i}.py::test_case PASSED" for i in range(400)]
                    + ["FAILED tests/test_login.py::test_login - AssertionError: expected 200, "
                       "got 401", "E   AssertionError: expected 200, got 401",
                       "==== 1 failed, 400 passed in 9.1s ===="])


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("mode", ERAS)
def test_full_agent_flow(transport: str, mode: str, osiris_home: Path) -> None:
    env = osiris_env()
    if transport == "http":
        with http_server(env) as (url, _):
            done = run(_run_flow(transport, mode, url, env))
    else:
        done = run(_run_flow(transport, mode, None, env))
    store = Store(Settings(home=osiris_home))
    assert audit_task(store, done["task"]).lossless
    store.close()


async def _run_flow(transport: str, mode: str, url: str | None,
                    env: dict[str, str]) -> dict[str, Any]:
    async with client_for(transport, mode, url=url, env=env) as client:
        return await _agent_flow(client, PAYLOAD)


def test_two_stdio_servers_on_one_home_at_once(osiris_home: Path) -> None:
    env = osiris_env()

    async def both() -> list[dict[str, Any]]:
        async with Client(stdio_params(env)) as a, Client(stdio_params(env)) as b:
            async def flow(client: Client, n: int) -> dict[str, Any]:
                start = await client.call_tool("osiris_plan", {"mode": "start",
                                                               "objective": f"task {n}"})
                task = start.structured_content["task_id"]
                for i in range(8):
                    answer = await client.call_tool("osiris_observe", {
                        "task_id": task, "kind": "result", "tool": "Bash",
                        "args": {"i": i}, "result": f"server {n} output {i}\n" * 400})
                    assert not answer.is_error, answer.content
                return {"task": task}
            return list(await asyncio.gather(flow(a, 1), flow(b, 2)))

    results = run(both())
    store = Store(Settings(home=osiris_home))
    for result in results:
        report = audit_task(store, result["task"])
        assert report.lossless
        assert report.items_externalized == 8
    store.close()


def test_ctrl_c_ends_a_stdio_server_at_once_and_quietly(osiris_home: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "osiris"], env=osiris_env(),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}) + "\n")
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 1  # serving, stdin still open
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=30)  # stdin stays open: the client has not gone away
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    finally:
        _, err = proc.communicate()
    assert proc.returncode == -signal.SIGINT
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
