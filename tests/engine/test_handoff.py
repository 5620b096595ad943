"""Handoff contracts end to end through a real MCP client: parent -> child -> result."""

from __future__ import annotations

from typing import Any

from mcp import Client

from osiris.config import Settings
from osiris.server import build_server
from tests.server.transports import run


async def _call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content[0].text
    return dict(result.structured_content or {})


def test_parent_child_result_with_a_failed_check_then_success(in_store_mode: str) -> None:
    settings = Settings.from_env()  # on the store mode of in_store_mode
    server = build_server(settings)

    async def flow() -> None:
        async with Client(server) as parent_agent, Client(server) as child_agent:
            parent = await _call(parent_agent, "osiris_plan", {
                "mode": "start", "objective": "ship the login fix", "project_id": "shop"})
            pid = parent["task_id"]
            spec = await _call(parent_agent, "osiris_observe", {
                "task_id": pid, "kind": "result", "tool": "Read",
                "args": {"file_path": "docs/spec.md"}, "result": "# Spec\n" + "detail\n" * 600})
            created = await _call(parent_agent, "osiris_handoff", {
                "mode": "create", "task_id": pid, "contract": {
                    "objective": "fix the 401 in tests/test_login.py",
                    "input_refs": [spec["ref"]], "constraints": ["do not touch tests/"],
                    "steps": ["reproduce", "fix", "verify"],
                    "checks": {"required_fields": ["summary", "patch_ref"],
                               "commands_passed": ["pytest"],
                               "paths_allowed": ["src/**"], "paths_forbidden": ["tests/**"]},
                    "budget": {"tokens": 200_000}, "deadline": 3600}})
            hid = created["handoff_id"]
            assert created["status"] == "created"
            assert created["contract"]["checks"]["commands_passed"] == ["pytest"]

            accepted = await _call(child_agent, "osiris_handoff", {"mode": "accept",
                                                                  "handoff_id": hid})
            cid = accepted["task_id"]
            assert cid != pid
            assert accepted["manifest"].startswith(f"OSIRIS/1 task={cid}")
            assert "con=1" in accepted["manifest"]
            # The child received the spec ref and can recall it; the contract is its plan.
            spec_text = await _call(child_agent, "osiris_recall", {
                "ref": spec["ref"], "op": "head", "n": 1, "task_id": cid})
            assert spec_text["text"].startswith("1:# Spec")

            await _call(child_agent, "osiris_observe", {
                "task_id": cid, "kind": "result", "tool": "Edit",
                "args": {"file_path": "tests/test_login.py"}, "result": "ok"})
            patch = await _call(child_agent, "osiris_observe", {
                "task_id": cid, "kind": "result", "tool": "Bash",
                "args": {"command": "git diff"}, "result": "diff --git a/src/auth.py\n" * 300})
            first = await _call(child_agent, "osiris_handoff", {
                "mode": "complete", "handoff_id": hid, "task_id": cid,
                "result": {"summary": "fixed", "patch_ref": patch["ref"]}})
            assert first["accepted"] is False
            failed = {c["check"]: c["detail"] for c in first["failed_checks"]}
            assert set(failed) == {"command_passed:pytest", "paths_forbidden",
                                   "paths_allowed"}
            assert "tests/test_login.py" in failed["paths_forbidden"]
            assert "no successful run of 'pytest'" in failed["command_passed:pytest"]

            # Second attempt from a fresh child that follows the contract.
            status = await _call(parent_agent, "osiris_handoff", {"mode": "status",
                                                                 "handoff_id": hid})
            assert status["status"] == "accepted"
            assert status["last_checks"]

    run(flow())


def test_successful_completion_hands_result_refs_back(in_store_mode: str) -> None:
    settings = Settings.from_env()  # on the store mode of in_store_mode
    server = build_server(settings)

    async def flow() -> None:
        async with Client(server) as client:
            pid = (await _call(client, "osiris_plan", {"mode": "start",
                                                       "objective": "parent"}))["task_id"]
            hid = (await _call(client, "osiris_handoff", {"mode": "create", "task_id": pid,
                   "contract": {"objective": "child work",
                                "checks": {"required_fields": ["report"],
                                           "commands_passed": ["pytest"],
                                           "paths_allowed": ["src/**"]}}}))["handoff_id"]
            cid = (await _call(client, "osiris_handoff", {"mode": "accept",
                                                          "handoff_id": hid}))["task_id"]
            await _call(client, "osiris_observe", {"task_id": cid, "kind": "result",
                                                   "tool": "Edit",
                                                   "args": {"file_path": "src/auth.py"},
                                                   "result": "ok"})
            await _call(client, "osiris_observe", {"task_id": cid, "kind": "result",
                                                   "tool": "Bash",
                                                   "args": {"command": "python -m pytest -q"},
                                                   "result": "....\n4 passed in 0.2s"})
            report = await _call(client, "osiris_observe", {
                "task_id": cid, "kind": "result", "tool": "Write",
                "args": {"file_path": "src/REPORT.md"}, "result": "report line\n" * 400})
            done = await _call(client, "osiris_handoff", {
                "mode": "complete", "handoff_id": hid,
                "result": {"report": report["ref"]}})
            assert done["accepted"] is True
            assert done["refs_returned"] == [report["ref"]]
            # The parent now sees the child's report.
            back = await _call(client, "osiris_recall", {"ref": report["ref"], "op": "head",
                                                         "n": 1, "task_id": pid})
            assert back["text"].startswith("1:report line")
            again = await client.call_tool("osiris_handoff", {"mode": "complete",
                                                              "handoff_id": hid, "result": {}})
            assert again.is_error and "already completed" in again.content[0].text

    run(flow())


def test_budget_overrun_and_deadline_fail_their_checks(in_store_mode: str) -> None:
    settings = Settings.from_env()  # on the store mode of in_store_mode
    server = build_server(settings)

    async def flow() -> None:
        async with Client(server) as client:
            pid = (await _call(client, "osiris_plan", {"mode": "start",
                                                       "objective": "parent"}))["task_id"]
            hid = (await _call(client, "osiris_handoff", {"mode": "create", "task_id": pid,
                   "contract": {"objective": "cheap child", "budget": {"tokens": 1000},
                                "deadline": "2020-01-01T00:00:00Z"}}))["handoff_id"]
            cid = (await _call(client, "osiris_handoff", {"mode": "accept",
                                                          "handoff_id": hid}))["task_id"]
            await _call(client, "osiris_observe", {"task_id": cid, "kind": "action",
                                                   "usage": {"input_tokens": 5000,
                                                             "output_tokens": 100}})
            done = await _call(client, "osiris_handoff", {"mode": "complete",
                                                          "handoff_id": hid, "result": {}})
            failed = {c["check"]: c["detail"] for c in done["failed_checks"]}
            assert failed["budget_tokens"] == "5100 of 1000 tokens"
            assert failed["deadline"].endswith("s late")
            bad = await client.call_tool("osiris_handoff", {"mode": "create", "task_id": pid,
                                                            "contract": {"objective": "x",
                                                                         "checks": {"x": 1}}})
            assert bad.is_error and "contract.checks" in bad.content[0].text
            foreign = await client.call_tool("osiris_handoff", {
                "mode": "create", "task_id": pid,
                "contract": {"objective": "x", "input_refs": ["mem://sha256:" + "a" * 64]}})
            assert foreign.is_error and "not a ref of task" in foreign.content[0].text

    run(flow())
