"""Ownership over HTTP with two bearer tokens: a handoff belongs to its parent's token in
every mode, exactly as tasks and refs do (issue 16, item 1)."""

from __future__ import annotations

from typing import Any

from tests.server.transports import http_client, http_server, osiris_env, run

ALICE = {"Authorization": "Bearer alice-secret-token-0001"}
BOB = {"Authorization": "Bearer bob-secret-token-0002"}
TOKENS = "alice=alice-secret-token-0001,bob=bob-secret-token-0002"


async def _call(url: str, headers: dict[str, str], tool: str, args: dict[str, Any]) -> Any:
    async with http_client(url, headers=headers) as client:
        return await client.call_tool(tool, args)


def test_a_handoff_is_invisible_and_unusable_to_another_token(in_store_mode: str) -> None:
    with http_server(osiris_env(OSIRIS_HTTP_TOKEN=TOKENS)) as (url, _):

        async def flow() -> None:
            start = await _call(url, ALICE, "osiris_plan",
                                {"mode": "start", "objective": "alice's task"})
            parent = start.structured_content["task_id"]
            observed = await _call(url, ALICE, "osiris_observe", {
                "task_id": parent, "kind": "result", "tool": "cat",
                "result": "alice's private data\n" * 400})
            ref = observed.structured_content["ref"]
            created = await _call(url, ALICE, "osiris_handoff", {
                "mode": "create", "task_id": parent,
                "contract": {"objective": "summarise", "input_refs": [ref]}})
            assert not created.is_error, created.content[0].text
            handoff = created.structured_content["handoff_id"]

            # Bob, holding the id, gets the same answer in every mode: it does not exist.
            for mode, extra in (("status", {}), ("accept", {}),
                                ("complete", {"result": {"summary": "x"}})):
                answer = await _call(url, BOB, "osiris_handoff",
                                     {"mode": mode, "handoff_id": handoff, **extra})
                assert answer.is_error, (mode, answer.content[0].text)
                assert "does not exist" in answer.content[0].text, mode
            # Nothing happened on bob's behalf: no child, bob cannot read the input ref.
            recall = await _call(url, BOB, "osiris_recall", {"ref": ref, "op": "head"})
            assert recall.is_error

            status = await _call(url, ALICE, "osiris_handoff",
                                 {"mode": "status", "handoff_id": handoff})
            assert not status.is_error
            assert status.structured_content["status"] == "created"
            assert status.structured_content["task_id"] is None

            # Alice's own child agent accepts; the child is alice's, and bob still cannot
            # see or complete it.
            accepted = await _call(url, ALICE, "osiris_handoff",
                                   {"mode": "accept", "handoff_id": handoff})
            assert not accepted.is_error, accepted.content[0].text
            child = accepted.structured_content["task_id"]
            for mode, extra in (("status", {}), ("accept", {}),
                                ("complete", {"task_id": child, "result": {"summary": "x"}})):
                answer = await _call(url, BOB, "osiris_handoff",
                                     {"mode": mode, "handoff_id": handoff, **extra})
                assert answer.is_error and "does not exist" in answer.content[0].text, mode
            stolen = await _call(url, BOB, "osiris_plan", {"mode": "status", "task_id": child})
            assert stolen.is_error
            mine = await _call(url, ALICE, "osiris_plan", {"mode": "status", "task_id": child})
            assert not mine.is_error
            done = await _call(url, ALICE, "osiris_handoff", {
                "mode": "complete", "handoff_id": handoff, "task_id": child,
                "result": {"summary": "done"}})
            assert not done.is_error, done.content[0].text
            assert done.structured_content["accepted"] is True

        run(flow())
