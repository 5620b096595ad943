"""A handoff's parent and child both pass their own non-loss audit (issue 16, item 11):
every ledger row of a task is backed by a journal event of that task, whatever the mode."""

from __future__ import annotations

import json
from typing import Any

from mcp import Client

from tests.conftest import run_cli
from tests.server.transports import run, stdio_params


def test_parent_and_child_audit_lossless_through_every_handoff_mode() -> None:
    async def flow() -> dict[str, Any]:
        async with Client(stdio_params()) as client:
            async def call(tool: str, args: dict[str, Any]) -> dict[str, Any]:
                answer = await client.call_tool(tool, args)
                assert not answer.is_error, answer.content[0].text
                return dict(answer.structured_content or {})

            parent = (await call("osiris_plan", {"mode": "start", "objective": "parent"}))
            task = parent["task_id"]
            ref = (await call("osiris_observe", {"task_id": task, "kind": "result",
                                                 "tool": "cat", "result": "data\n" * 600}))["ref"]
            handoff = (await call("osiris_handoff", {
                "mode": "create", "task_id": task,
                "contract": {"objective": "child work", "input_refs": [ref]}}))["handoff_id"]
            await call("osiris_handoff", {"mode": "status", "handoff_id": handoff})
            child = (await call("osiris_handoff", {"mode": "accept",
                                                   "handoff_id": handoff}))["task_id"]
            again = await call("osiris_handoff", {"mode": "accept", "handoff_id": handoff})
            assert again["task_id"] == child
            await call("osiris_handoff", {"mode": "status", "handoff_id": handoff})
            await call("osiris_plan", {"mode": "memory", "task_id": child,
                                       "memory": {"kind": "lesson"}})
            await call("osiris_handoff", {"mode": "complete", "handoff_id": handoff,
                                          "task_id": child, "result": {"summary": ref}})
            await call("osiris_handoff", {"mode": "status", "handoff_id": handoff})
            return {"parent": task, "child": child}

    tasks = run(flow())
    for role, task in tasks.items():
        audit = run_cli("audit", "--task", task)
        report = json.loads(audit.stdout)
        assert audit.returncode == 0, (role, report["integrity_violations"])
        assert report["lossless"] is True, role
