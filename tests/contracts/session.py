"""One session that reaches every tool, mode and journal event kind, through the real
entry points: an MCP client on the server (the hook tool listed), ``osiris hook`` and
``osiris run`` as processes. The contract tests check what it records."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import duckdb
from mcp import Client

from osiris.clients.adapters import ClaudeCode
from osiris.clients.launcher import launch_argv
from osiris.config import Settings
from osiris.engine import Engine
from osiris.server import build_server
from tests.conftest import home_rows, run_cli
from tests.server.test_operating_context import SIDECAR
from tests.server.transports import run

OPERATING_CONTEXT = SIDECAR.replace("{enforce}", "warn")


@dataclass
class Answer:
    """One tool call as the client saw it."""

    tool: str
    args: dict[str, Any]
    structured: Any
    is_error: bool


@dataclass
class Recorded:
    """What the session left: every answer and every journal event (kind, body)."""

    answers: list[Answer] = field(default_factory=list)
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    views: dict[str, Any] = field(default_factory=dict)
    """The engine's other answers, by ``Engine`` method (resources and Python API)."""
    hooked: list[Any] = field(default_factory=list)
    """Observe answers of a client hook through the Python API (``hook``, ``replaced``,
    ``replaced_read``), checked against ``osiris_observe``'s record."""


def _project(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    body = "".join(f"def handler_{i}(event):\n    return event + {i}  # {i:05d}\n\n"
                   for i in range(2500))
    (root / "big.py").write_text(body, encoding="utf-8")
    (root / "small.py").write_text("x = 1\n", encoding="utf-8")
    (root / "medium.py").write_text(MEDIUM, encoding="utf-8")
    (root / ".osiris").mkdir(exist_ok=True)
    (root / ".osiris" / "invariants.toml").write_text("[routing]\nread_shape = true\n",
                                                     encoding="utf-8")
    return root


MEDIUM = "".join(f"def step_{i}(state):\n" + "".join(
    f"    state['value_{i}_{j}'] = compute(state, {i}, {j})  # step {i} part {j}\n"
    for j in range(9)) + "\n" for i in range(40))
"""A mid-size file: a whole Read of it is shown as its first lines and an outline."""

EDITED = "".join(f"def scale_{i}(x):\n    return x * {i}\n\n" for i in range(60))
"""A file below the mid-size range: read whole, edited, read again."""


def _log(lines: int = 3000) -> str:
    return "".join(f"2026-12-03 INFO worker {i % 7} handled request {i} in {i % 13} ms\n"
                   for i in range(lines)) + "ERROR: database timeout after 30 s\n"


def _jsonl(lines: int = 2000) -> str:
    return "".join(json.dumps({"level": "error" if i % 9 == 0 else "info", "n": i,
                               "error": {"type": "Timeout" if i % 2 else "Refused"}}) + "\n"
                   for i in range(lines))


async def _mcp_session(settings: Settings, project: Path, out: Recorded) -> str:
    async with Client(build_server(settings)) as client:
        async def call(name: str, /, **args: Any) -> Any:
            result = await client.call_tool(f"osiris_{name}", args)
            out.answers.append(Answer(name, args, result.structured_content,
                                      bool(result.is_error)))
            assert not result.is_error, (name, args, result.content)
            return result.structured_content

        await call("plan", mode="context")
        await call("plan", mode="context", section="recall-discipline")
        await call("plan", mode="context", section="nope")
        start = await call("plan", mode="start", objective="fix the flaky worker",
                           steps=["reproduce", "fix", "test"], agent_id="claude-code",
                           project_id="acme-app", constraints=["never touch prod"],
                           budget={"tokens": 400_000})
        task = start["task_id"]
        seal = start["seal"]
        await call("plan", mode="update", task_id=task, decisions=["retry with backoff"],
                   constraints=["keep the API"], active_step=1)
        await call("plan", mode="status", task_id=task)
        await call("plan", mode="update", task_id=task, budget={"tokens": 500_000},
                   flags={"tests_passed": False})
        await call("plan", mode="memory", task_id=task, memory=[
            {"kind": "lesson", "key": "worker", "value": "needs a timeout"},
            {"kind": "lesson", "key": "retry", "value": {"text": "retry with backoff"},
             "scope": "project"}])
        await call("plan", mode="memory", task_id=task, memory={"kind": "lesson"})

        await call("precheck", task_id=task, tool="Bash", args={"command": "pytest -q"})
        await call("precheck", task_id=task, tool="Read", path=str(project / "small.py"))
        await call("precheck", task_id=task, tool="Bash", args={"command": "rm -rf /"})

        await call("observe", task_id=task, kind="head", result="You are a coding agent.",
                   seal=seal)
        await call("observe", task_id=task, kind="contract",
                   result=json.dumps([{"name": "Bash"}, {"name": "Read"}]))
        await call("observe", task_id=task, kind="action", tool="Bash",
                   args={"command": "pytest -q"})
        small = await call("observe", task_id=task, kind="result", tool="Bash",
                           args={"command": "ls"}, result="a.py\nb.py\n")
        log = await call("observe", task_id=task, kind="result", tool="Bash",
                         args={"command": "cat worker.log"}, result=_log(),
                         usage={"prompt_tokens": 12_000, "completion_tokens": 300})
        await call("observe", task_id=task, kind="result", tool="Bash",
                   args={"command": "cat worker.log"}, result=_log())
        records = await call("observe", task_id=task, kind="result", tool="Bash",
                             args={"command": "cat events.jsonl"}, result=_jsonl())
        for _ in range(3):
            await call("observe", task_id=task, kind="error", tool="Bash",
                       args={"command": "pytest -q"}, result="E   AssertionError: 1 != 2\n"
                       "FAILED tests/test_worker.py::test_retry")
        await call("precheck", task_id=task, tool="Bash", args={"command": "pytest -q"})
        big_file = await call("observe", task_id=task, kind="file",
                              path=str(project / "big.py"))
        await call("observe", task_id=task, kind="file", path=str(project / "big.py"))
        await call("observe", task_id=task, kind="file", path=str(project / "small.py"))
        await call("precheck", task_id=task, tool="Read", path=str(project / "big.py"))
        await call("precheck", task_id=task, tool="Bash", args={"command": "git push -f"},
                   format="claude-code")
        await call("precheck", task_id="t_000000000000000000000000", tool="Bash",
                   args={"command": "ls"}, format="claude-code")  # fails open, no error
        await call("observe", task_id=task, kind="dropped", result=log["ref"])
        await call("observe", task_id=task, kind="dropped", result=log["ref"])
        del small

        ref = log["ref"]
        await call("recall", ref=ref, op="grep", pattern="ERROR", context=1)
        await call("recall", ref=ref, op="range", start=10, end=20)
        await call("recall", ref=ref, op="head", n=5)
        await call("recall", ref=ref, op="tail", n=5, task_id=task)
        await call("recall", ref=ref, op="grep", pattern="worker", max_tokens=200)
        await call("recall", ref=records["ref"], op="aggregate", fields=["level"])
        await call("recall", ref=records["ref"], op="jsonl", where={"level": "error"},
                   fields=["n", "error.type"])
        await call("recall", ref=records["ref"], op="jsonl", max_tokens=100,
                   where=[{"field": "n", "op": "ge", "value": 10}], fields=["n"])
        await call("recall", ref=big_file["ref"], op="outline")

        snap = await call("checkpoint", task_id=task, mode="snapshot")
        await call("checkpoint", task_id=task, mode="report")
        await call("checkpoint", task_id=task, mode="trim")
        await call("checkpoint", task_id=task, mode="compact")
        cleared = await call("checkpoint", task_id=task, mode="clear")
        await call("checkpoint", task_id=task, mode="restore",
                   checkpoint_id=cleared["checkpoint_id"])
        await call("checkpoint", task_id=task, mode="resume",
                   checkpoint_id=snap["checkpoint_id"])

        made = await call("handoff", mode="create", task_id=task, contract={
            "objective": "write the retry test", "input_refs": [ref],
            "constraints": ["only tests/"], "steps": ["write", "run"],
            "checks": {"required_fields": ["summary"], "commands_passed": ["pytest"],
                       "paths_allowed": ["tests/**"]},
            "budget": {"tokens": 50_000}, "deadline": 3600})
        await call("handoff", mode="status", handoff_id=made["handoff_id"])
        child = (await call("handoff", mode="accept", handoff_id=made["handoff_id"]))["task_id"]
        await call("handoff", mode="complete", handoff_id=made["handoff_id"], task_id=child,
                   result={"summary": "added test_retry"})  # fails: pytest never ran
        await call("observe", task_id=child, kind="result", tool="Bash",
                   args={"command": "pytest -q"}, result="1 passed")
        await call("handoff", mode="complete", handoff_id=made["handoff_id"], task_id=child,
                   result={"summary": "added test_retry"})
        await call("handoff", mode="status", handoff_id=made["handoff_id"])

        await call("plan", mode="resume", task_id=task)
        for name, wrong in (("plan", {"mode": "status", "task_id": "t_nope"}),
                            ("precheck", {"task_id": task, "tool": 3}),
                            ("observe", {"task_id": task, "kind": "dropped"}),
                            ("recall", {"ref": "mem://sha256:" + "0" * 64}),
                            ("checkpoint", {"task_id": task, "mode": "restore"}),
                            ("handoff", {"mode": "status", "handoff_id": "h_nope"})):
            result = await client.call_tool(f"osiris_{name}", wrong)
            out.answers.append(Answer(name, wrong, result.structured_content, True))
            assert result.is_error, (name, result.content)
        for view in ("manifest", "status"):
            read = await client.read_resource(f"osiris://task/{task}/{view}")
            out.views[f"{view}_view"] = json.loads(read.contents[0].text)
        await call("plan", mode="start", objective="second task", project_id="@auto",
                   agent_id="claude-code")

        session = {"session_id": "s-contract", "cwd": str(project),
                   "tool_use_id": "t1"}
        big = {"file_path": str(project / "big.py")}
        await call("hook", event="pre-tool-use", hook_event_name="PreToolUse",
                   tool_name="Read", tool_input=big, **session)
        await call("hook", event="post-tool-use", hook_event_name="PostToolUse",
                   tool_name="Read", tool_input={**big, "offset": 1, "limit": 2000},
                   tool_response={"type": "text", "file": {
                       "filePath": big["file_path"], "content": "def handler_0(event):\n"}},
                   **session)
        await call("hook", event="pre-tool-use", hook_event_name="PreToolUse",
                   tool_name="Read", tool_input={**big, "offset": 1, "limit": 2000},
                   **{**session, "tool_use_id": "t2"})
        await call("hook", event="pre-tool-use", hook_event_name="PreToolUse",
                   tool_name="Bash", tool_input={"command": "pytest -q"},
                   **{**session, "tool_use_id": "t3"})
        medium = {"file_path": str(project / "medium.py")}
        await call("hook", event="post-tool-use", hook_event_name="PostToolUse",
                   tool_name="Read", tool_input=medium,
                   tool_response={"type": "text", "file": {
                       "filePath": medium["file_path"], "content": MEDIUM,
                       "numLines": MEDIUM.count("\n"), "startLine": 1,
                       "totalLines": MEDIUM.count("\n")}},
                   **{**session, "tool_use_id": "t4"})
        # A file read whole, edited, read whole again: shown as its changed lines.
        edited = project / "edited.py"
        for use_id, text in (("t5", EDITED), ("t6", EDITED.replace("x * 30", "x * 300"))):
            edited.write_text(text, encoding="utf-8")
            await call("hook", event="post-tool-use", hook_event_name="PostToolUse",
                       tool_name="Read", tool_input={"file_path": str(edited)},
                       tool_response={"type": "text", "file": {
                           "filePath": str(edited), "content": text,
                           "numLines": text.count("\n"), "startLine": 1,
                           "totalLines": text.count("\n")}},
                       **{**session, "tool_use_id": use_id})
        return task


async def _without_context(settings: Settings, task: str, out: Recorded) -> None:
    """A second server, its operating context off: a resume and the bare doctrine."""
    async with Client(build_server(replace(settings, operating_context_enabled=False))
                      ) as client:
        for args in ({"mode": "resume", "task_id": task}, {"mode": "context"}):
            result = await client.call_tool("osiris_plan", args)
            out.answers.append(Answer("plan", args, result.structured_content,
                                      bool(result.is_error)))


def _rewrite_behind_osiris_back(home: Path, task: str) -> None:
    """A pinned decision rewritten in the store: the next resume restores it."""
    con = duckdb.connect(str(home / "osiris.duckdb"))
    try:
        state = json.loads(con.execute("SELECT state FROM tasks WHERE task_id = ?",
                                       [task]).fetchone()[0])
        state["decisions"][0]["text"] = "rewrite everything"
        con.execute("UPDATE tasks SET state = ? WHERE task_id = ?", [json.dumps(state), task])
    finally:
        con.close()


def record_session(home: Path, project_root: Path, **env: str) -> Recorded:
    """Run the whole session in ``home`` and return what it recorded."""
    project = _project(project_root)
    home.mkdir(parents=True, exist_ok=True)
    (home / "operating-context.toml").write_text(OPERATING_CONTEXT, encoding="utf-8")
    variables = {"OSIRIS_HOME": str(home), "OSIRIS_ROOTS": str(project),
                 "OSIRIS_HOOK_TOOL": "on", "OSIRIS_PRUNE_THRESHOLD_TOKENS": "2000",
                 "OSIRIS_STORE_OWNER": "off", **env}
    saved = {k: os.environ.get(k) for k in variables}
    os.environ.update(variables)
    out = Recorded()
    try:
        settings = Settings.from_env()
        task = run(_mcp_session(settings, project, out))
        _rewrite_behind_osiris_back(home, task)
        run(_without_context(settings, task, out))
        with Engine(settings) as engine:  # the Python API's own answers
            out.views["resume_view"] = engine.resume_view(task)
            out.views["operating_context"] = engine.operating_context()
            out.views["compacted"] = engine.compacted("session:s-api",
                                                      client=ClaudeCode.traits)
            out.views["route_output"] = engine.route_output(
                "session:s-api", _log(), tool="Bash", args={"command": "make test"},
                failed=True, client="claude-code")
            medium = str(project / "medium.py")
            for use_id in ("a1", "a2"):  # shaped, then a re-read of the unchanged file
                out.hooked.append(engine.observe(
                    "session:s-api", "result", tool="Read", args={"file_path": medium},
                    result=MEDIUM, client=ClaudeCode.traits, cwd=str(project),
                    tool_use_id=use_id, session={"prompt_tokens": 30_000}))
            out.hooked.append(engine.observe(
                "session:s-api", "result", tool="Bash", args={"command": "make test"},
                result=_log(), client=ClaudeCode.traits, cwd=str(project),
                shell={"exit_code": 1, "complete": True}, session={"prompt_tokens": 30_000}))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    hook_env = {**variables}
    done = run_cli("hook", "claude-code", "session-start", env=hook_env, stdin=json.dumps({
        "session_id": "s-contract", "cwd": str(project), "hook_event_name": "SessionStart",
        "source": "compact"}))
    assert done.returncode == 0, done.stderr
    command = "for i in $(seq 1 4000); do echo \"line $i of the log\"; done"
    ran = subprocess.run(launch_argv(sys.executable, "run", "--session", "s-contract",
                                     "--client", "claude-code", "--", command),
                         capture_output=True, timeout=120, check=False,
                         env={**os.environ, **hook_env})
    assert ran.returncode == 0, ran.stderr
    out.events = [(str(kind), json.loads(body)) for kind, body in home_rows(
        home, "SELECT kind, body FROM events ORDER BY seq")]
    return out
