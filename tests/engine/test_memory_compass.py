"""Ref visibility across tasks, the memory registry's scopes, and the tool compass."""

from __future__ import annotations

import json

import pytest

from osiris.engine import Engine
from osiris.errors import NotFoundError
from osiris.harness.importers.traces import load_trace
from tests.conftest import TRACES

CLAUDE_18 = (TRACES / "claude-code__tielec-ai-workflow-agent" / "issue-18"
             / "04_implementation/execute/agent_log_raw.txt")


def test_a_ref_is_visible_only_to_tasks_that_created_or_received_it(engine: Engine) -> None:
    a = engine.plan("start", objective="task A")["task_id"]
    b = engine.plan("start", objective="task B")["task_id"]
    content = "shared file content\n" * 400
    first = engine.observe(a, "result", tool="Read", args={"file_path": "x.py"},
                           result=content)
    with pytest.raises(NotFoundError, match="not visible to task"):
        engine.recall(first["ref"], "head", task_id=b)
    # B reads the same bytes itself: it is told about them as news, never "you have this".
    second = engine.observe(b, "result", tool="Read", args={"file_path": "x.py"},
                            result=content)
    assert "duplicate" not in second
    assert second["preview"]
    assert second["ref"] == first["ref"]  # stored once, content-addressed
    assert engine.recall(first["ref"], "head", n=1, task_id=b)["text"]
    dup = engine.observe(b, "result", tool="Read", args={"file_path": "x.py"},
                         result=content)
    assert dup["duplicate"] is True  # only now, for B, a duplicate


def test_memory_is_typed_scoped_and_content_addressed(engine: Engine) -> None:
    t1 = engine.plan("start", objective="one", project_id="shop", agent_id="claude-code")
    t2 = engine.plan("start", objective="two", project_id="shop", agent_id="codex")
    t3 = engine.plan("start", objective="three", project_id="other", agent_id="claude-code")
    written = engine.plan("memory", task_id=t1["task_id"], memory=[
        {"kind": "fact", "key": "db", "value": "postgres 16", "scope": "project"},
        {"kind": "preference", "key": "style", "value": "small commits", "scope": "agent"},
        {"kind": "fact", "key": "scratch", "value": "task only"},
        {"kind": "fact", "key": "tz", "value": "UTC", "scope": "global"}])["written"]
    again = engine.plan("memory", task_id=t1["task_id"], memory=[
        {"kind": "fact", "key": "db", "value": "postgres 16", "scope": "project"}])["written"]
    assert again[0] == written[0]  # the same entry is the same id

    def keys(task: str, query: dict | None = None) -> list[tuple[str, str]]:
        entries = engine.plan("memory", task_id=task, memory=query)["entries"]
        return [(e["scope"], e["key"]) for e in entries]

    assert keys(t1["task_id"]) == [("task", "scratch"), ("project", "db"),
                                   ("agent", "style"), ("global", "tz")]
    assert keys(t2["task_id"]) == [("project", "db"), ("global", "tz")]  # other agent
    assert keys(t3["task_id"]) == [("agent", "style"), ("global", "tz")]  # other project
    assert keys(t1["task_id"], {"kind": "preference"}) == [("agent", "style")]
    assert keys(t1["task_id"], {"scope": "project"}) == [("project", "db")]
    engine.plan("update", task_id=t1["task_id"], decisions=["use feature flags"])
    decisions = engine.plan("memory", task_id=t1["task_id"],
                            memory={"kind": "decision"})["entries"]
    assert decisions[0]["value"] == "use feature flags"
    with pytest.raises(Exception, match="memory kind must be one of"):
        engine.plan("memory", task_id=t1["task_id"], memory=[{"kind": "secret", "key": "k",
                                                              "value": 1}])
    # A write wrapped in an object is not silently read as a lookup of everything.
    with pytest.raises(Exception, match=r"unknown memory lookup field\(s\) \['write'\]"):
        engine.plan("memory", task_id=t1["task_id"], memory={"write": [
            {"kind": "fact", "key": "k", "value": 1}]})


def test_compass_ranks_the_recorded_claude_code_tool_list(engine: Engine) -> None:
    tools = load_trace(CLAUDE_18).tools_declared
    assert "Grep" in tools and "Bash" in tools
    task = engine.plan("start", objective="fix the mock setup",
                       steps=["search the code for analyzeForRefactoring usages",
                              "edit the test file to fix the mock",
                              "run the unit tests"], active_step=0)["task_id"]
    engine.observe(task, "contract", result=json.dumps(tools))
    first = engine.plan("status", task_id=task)["compass"]
    assert first["recommended"][0]["tool"] == "Grep"
    second = engine.plan("update", task_id=task, active_step=1)["compass"]
    assert second["recommended"][0]["tool"] in ("Edit", "MultiEdit")
    third = engine.plan("update", task_id=task, active_step=2)["compass"]
    assert third["recommended"][0]["tool"] == "Bash"
    verdict = engine.precheck(task, "WebSearch", args={"query": "jest"})
    assert verdict["compass"][0]["tool"] == "Bash"


def test_compass_names_costly_tool_schemas(engine: Engine) -> None:
    heavy = {"name": "mega_tool", "description": "does everything",
             "inputSchema": {"type": "object",
                             "properties": {f"option_{i}": {"type": "string",
                                                            "description": "an option " * 5}
                                            for i in range(40)}}}
    light = {"name": "search_issues", "description": "search GitHub issues by text",
             "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}}
    task = engine.plan("start", objective="find related GitHub issues")["task_id"]
    engine.observe(task, "contract", result=json.dumps({"tools": [heavy, light]}))
    compass = engine.plan("status", task_id=task)["compass"]
    assert compass["recommended"][0]["tool"] == "search_issues"
    assert compass["costly"][0]["name"] == "mega_tool"
    assert compass["costly"][0]["tokens"] > 400
