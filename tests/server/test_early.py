"""Early answers of a stdio server (osiris/server/early.py), through a real stdio client:
the handshake and the first tools/list come from the last start's answers, then the SDK
takes over the session without the client noticing."""

from __future__ import annotations

import importlib.metadata
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from osiris.config import Settings
from osiris.server.start_cache import (
    BUILT_VERSIONS,
    CACHE_NAME,
    VERIFIED_SDK,
    answers_for,
    built_answers,
    sdk_versions,
)
from tests.server.streams import RawStdio
from tests.server.transports import osiris_env, run

MARK = "served from the start cache"


async def _session(env: dict[str, str]) -> dict[str, Any]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "osiris"], env=env)
    async with Client(params, mode="legacy") as client:
        first = await client.list_tools()
        plan = await client.call_tool("osiris_plan", {"mode": "start",
                                                      "objective": "early answers"})
        after = await client.list_tools()
    return {"first": [t.description for t in first.tools],
            "names": [t.name for t in first.tools], "plan_ok": not plan.is_error,
            "after": [t.description for t in after.tools]}


def _doctor(home: Path) -> None:
    """Mark the cached tool list, so that an answer from the cache can be told apart."""
    path = home / CACHE_NAME
    doc = json.loads(path.read_text("utf-8"))
    for result in doc["tools"].values():
        result["tools"][0]["description"] = MARK
    path.write_text(json.dumps(doc), "utf-8")


def test_the_second_start_answers_tools_list_from_the_first(osiris_home: Path) -> None:
    env = osiris_env()
    cold = run(_session(env))
    assert cold["plan_ok"] and cold["first"] == cold["after"]
    assert (osiris_home / CACHE_NAME).stat().st_mode & 0o777 == 0o600
    _doctor(osiris_home)

    warm = run(_session(env))
    assert warm["first"][0] == MARK  # the handshake and the list came from the cache
    assert warm["plan_ok"]  # the SDK took the session over: a tool call works
    assert warm["after"] == cold["first"]  # and answers the list itself afterwards
    # and re-recorded it for the version negotiated
    kept = json.loads((osiris_home / CACHE_NAME).read_text("utf-8"))["tools"]["2025-11-25"]
    assert MARK not in json.dumps(kept)


def test_changed_settings_or_a_broken_cache_are_never_served(osiris_home: Path) -> None:
    run(_session(osiris_env()))
    _doctor(osiris_home)
    dotted = run(_session(osiris_env(OSIRIS_TOOL_NAMES="dotted")))
    assert dotted["names"][0] == "osiris.plan" and MARK not in dotted["first"]
    (osiris_home / CACHE_NAME).write_text("{not json", "utf-8")
    again = run(_session(osiris_env()))
    assert again["plan_ok"] and MARK not in again["first"]


def test_messages_after_an_early_handshake_reach_the_sdk_in_order(osiris_home: Path) -> None:
    run(_session(osiris_env()))  # the cache now holds this version's answers
    lines = [json.dumps(_initialize("2025-11-25")).encode(), INITIALIZED, TOOLS_LIST,
             b'{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {',  # broken
             json.dumps({"jsonrpc": "2.0", "id": 4, "method": "ping"}).encode()]
    answers, _ = _exchange(osiris_env(), lines, 4)
    assert [a.get("id") for a in answers] == [1, 2, 3, 4]  # once each, in order
    assert answers[0]["result"]["serverInfo"]["name"] == "osiris"
    assert answers[1]["result"]["tools"]
    assert answers[2]["error"]["code"] == -32700  # the SDK's transport judged the rest
    assert answers[3]["result"] == {}


INITIALIZED = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
TOOLS_LIST = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).encode()


def _initialize(version: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {},
                       "clientInfo": {"name": "raw", "version": "1"}}}


def _exchange(env: dict[str, str], lines: list[bytes],
              requests: int) -> tuple[list[dict[str, Any]], str]:
    """Send ``lines`` to a stdio server and read ``requests`` answers before closing its
    stdin, as a client does (mcp 2.3 cancels requests still in flight when stdin ends);
    every answer, including any written after the close, and stderr."""
    raw = RawStdio(env)
    for line in lines:
        raw.send(line)
    answers = [raw.reply() for _ in range(requests)]
    rest, stderr = raw.close()
    return answers + [json.loads(line) for line in rest], stderr.decode()


def _raw(env: dict[str, str], version: str) -> tuple[list[dict[str, Any]], str]:
    """A raw handshake at ``version`` and a tools/list: the answers, and stderr."""
    return _exchange(env, [json.dumps(_initialize(version)).encode(), INITIALIZED,
                           TOOLS_LIST], 2)


VARIANTS = ({}, {"OSIRIS_TOOL_NAMES": "dotted", "OSIRIS_HOOK_TOOL": "on"},
            {"OSIRIS_DISPATCH_ONLY": "on", "OSIRIS_HOOK_TOOL": "on"},
            {"OSIRIS_SURFACE": "hooks", "OSIRIS_HOOK_TOOL": "on"})


@pytest.mark.slow
def test_built_answers_are_the_sdks_own_for_every_variant(osiris_home: Path) -> None:
    """What a first start answers without the SDK has the same JSON values as what the
    SDK answers, for every list of tools and every protocol version answered so; under
    an SDK release other than VERIFIED_SDK nothing is built (to verify a new release,
    install it, set VERIFIED_SDK to it and run this test)."""
    installed = {name: importlib.metadata.version(name.replace("_", "-"))
                 for name in VERIFIED_SDK}
    assert sdk_versions() == installed
    if installed == VERIFIED_SDK:  # another release: nothing is built (checked below)
        for variant in VARIANTS:
            env = osiris_env(OSIRIS_EARLY_ANSWERS="off", **variant)
            initialize, tools = answers_for(Settings.from_env(env))
            for version in BUILT_VERSIONS:
                answers, _ = _raw(env, version)
                assert [a.get("id") for a in answers] == [1, 2], answers
                assert answers[0]["result"] == initialize[version]
                assert answers[0]["result"]["protocolVersion"] == version
                assert answers[1]["result"] == tools[version]
    built = built_answers(Settings.from_env(osiris_env()))
    assert (built is not None) == (installed == VERIFIED_SDK)


def test_a_first_start_in_a_new_home_answers_early(osiris_home: Path) -> None:
    env = osiris_env(OSIRIS_LOG_LEVEL="INFO")
    assert not (osiris_home / CACHE_NAME).exists()
    answers, stderr = _raw(env, "2025-11-25")
    assert [a.get("id") for a in answers] == [1, 2]
    if sdk_versions() == VERIFIED_SDK:
        assert "answered early: initialize" in stderr
        assert "answered early: tools/list" in stderr
        # confirmed by the SDK's own answers, then kept for the next start
        assert json.loads((osiris_home / CACHE_NAME).read_text("utf-8"))["tools"]
