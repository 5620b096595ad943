"""LoopGuard in observe answers speaks of the call just observed (issue 16, item 12): a
first call is no duplicate of itself; a true repeat names the earlier event."""

from __future__ import annotations

import json
from typing import Any

from mcp import Client

from tests.conftest import home_rows
from tests.server.transports import home_of, osiris_env, run, stdio_params

READ = {"tool": "Read", "args": {"file_path": "src/app.py"}, "result": "print('hi')\n" * 300}


def test_first_observe_is_not_a_duplicate_and_a_repeat_names_the_first() -> None:
    env = osiris_env()

    async def flow() -> tuple[dict[str, Any], dict[str, Any], str]:
        async with Client(stdio_params(env)) as client:
            start = await client.call_tool("osiris_plan", {"mode": "start",
                                                           "objective": "read twice"})
            task = start.structured_content["task_id"]
            first = await client.call_tool("osiris_observe",
                                           {"task_id": task, "kind": "result", **READ})
            second = await client.call_tool("osiris_observe",
                                            {"task_id": task, "kind": "result", **READ})
            assert "loop" not in first.content[0].text
            return first.structured_content, second.structured_content, task

    first, second, task = run(flow())
    assert "loop" not in first, first["loop"]
    events = home_rows(home_of(env), "SELECT seq, body FROM events WHERE task_id = ? AND"
                       " kind = 'observe.result' ORDER BY seq", [task])
    assert "loop" not in json.loads(events[0][1])
    patterns = [p["pattern"] for p in second["loop"]["patterns"]]
    assert patterns == ["exact_duplicate"]
    assert second["loop"]["duplicate_of_event"] == events[0][0]
    assert f"(event {events[0][0]})" in second["loop"]["patterns"][0]["message"]
