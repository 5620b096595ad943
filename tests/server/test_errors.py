"""Bad input never crashes the server or corrupts state; errors say what to do next."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, MCPError

from osiris.config import Settings
from osiris.server import build_server
from osiris.store import journal
from osiris.store.state import Store
from tests.server.transports import osiris_env, run

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}}}


def test_stdio_survives_malformed_json_rpc(osiris_home: Path) -> None:
    lines = [json.dumps(INIT),
             json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
             "this is not json", "[1, 2, 3]", '{"jsonrpc": "2.0", "id": 7}',
             json.dumps({"jsonrpc": "2.0", "id": 8, "method": "no/such/method"}),
             json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                         "params": {"name": "osiris_plan",
                                    "arguments": {"mode": "start", "objective": "alive"}}})]
    proc = subprocess.Popen([sys.executable, "-m", "osiris"], env=osiris_env(),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("\n".join(lines) + "\n")
    proc.stdin.flush()
    replies = {}
    while 9 not in replies:  # the server answers in its own time; stdin stays open
        line = proc.stdout.readline()
        assert line, "the server closed stdout before answering"
        message = json.loads(line)  # stdout carries JSON-RPC only
        replies[message.get("id")] = message
    proc.communicate(timeout=60)  # closes stdin: the server ends with its client
    assert replies[8]["error"]["code"] == -32601
    assert replies[9]["result"]["structuredContent"]["mode"] == "start"
    assert replies[9]["result"].get("isError") in (None, False)


def test_domain_errors_are_is_error_results_that_say_what_to_do() -> None:
    server = build_server(Settings.from_env())

    async def flow() -> None:
        async with Client(server) as client:
            cases = [
                ("osiris_plan", {"mode": "status", "task_id": "t_0000"}, "start one with"),
                ("osiris_plan", {"mode": "start", "objective": 42}, "is not of type 'string'"),
                ("osiris_plan", {"mode": "explode"}, "is not one of"),
                ("osiris_plan", {"mode": "start", "objective": "x", "bogus": 1},
                 "unknown argument(s) ['bogus']"),
                ("osiris_observe", {"task_id": "t_1", "kind": "dropped"}, "does not exist"),
                ("osiris_recall", {"ref": "not-a-ref"}, "is not a ref"),
                ("osiris_recall", {"ref": "mem://sha256:" + "0" * 64}, "not in the ref store"),
                ("osiris_precheck", {"task_id": "t_1"}, "'tool' is a required property"),
                ("osiris_checkpoint", {"task_id": "t_1", "mode": "restore"},
                 "does not exist"),
                ("osiris_handoff", {"mode": "accept"}, "handoff_id is required"),
            ]
            for tool, args, expected in cases:
                result = await client.call_tool(tool, args)
                assert result.is_error, (tool, args)
                assert expected in result.content[0].text, (tool, result.content[0].text)
            unknown = await client.call_tool("osiris_nothing", {})
            assert unknown.is_error
            with pytest.raises(MCPError):
                await client.read_resource("osiris://ref/mem://sha256:" + "0" * 64)
            with pytest.raises(MCPError):
                await client.read_resource("osiris://task/t_missing/manifest")
            # Oversized and hostile arguments are refused cleanly; the server still works.
            start = await client.call_tool("osiris_plan", {"mode": "start",
                                                           "objective": "y" * 10_000})
            assert start.is_error and "4000" in start.content[0].text
            ok = await client.call_tool("osiris_plan", {"mode": "start", "objective": "ok"})
            task = ok.structured_content["task_id"]
            hostile = await client.call_tool("osiris_observe", {
                "task_id": task, "kind": "result", "tool": "x",
                "result": "a" * 100_000 + "!"})
            ref = hostile.structured_content["ref"]
            slow = await client.call_tool("osiris_recall", {"ref": ref, "op": "grep",
                                                            "pattern": "(a+)+$"})
            assert not slow.is_error
            backref = await client.call_tool("osiris_recall", {"ref": ref, "op": "grep",
                                                               "pattern": "(a)\\1"})
            assert backref.is_error and "linear time" in backref.content[0].text
    run(flow())
    store = Store(Settings.from_env())
    with store.read() as con:
        assert journal.verify_chain(con, store.home).ok  # nothing half-written
    store.close()
