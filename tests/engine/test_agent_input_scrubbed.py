"""Secrets in any agent-supplied string never reach the store or an answer (issue 16,
item 2): plan fields, memory, handoff contracts and results, tool names, call arguments,
precheck input and provider usage, through a real stdio MCP client and the real hook."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcp import Client

from osiris.engine import Engine
from tests.conftest import home_rows, run_cli
from tests.server.transports import home_of, osiris_env, run, stdio_params

# Fake secrets of three kinds the rules know (none of them is real).
AWS = "AKIABWUGEITBT76ZKX4G"
GITHUB = "ghp_" + "R8m2Kx9Qv4Lw7Zp1Tn6Yb3Hs5Jd0Fc8Ge2Ua"
DB_PASSWORD = "Zq8GIXUTioEbUSjI"
DB_URL = f"postgres://app:{DB_PASSWORD}@db.internal:5432/app"
SECRETS = (AWS, GITHUB, DB_PASSWORD)


def _text_of(result: Any) -> str:
    parts = [getattr(c, "text", "") for c in result.content]
    return "\n".join(parts) + json.dumps(result.structured_content or {}, default=str)


def _assert_clean(where: str, text: str) -> None:
    leaked = [s for s in SECRETS if s in text]
    assert not leaked, f"{where} returned {leaked}"


def _drive(env: dict[str, str]) -> list[tuple[str, str]]:
    """Every write path with a secret in it; returns (what, text) of every answer."""
    seen: list[tuple[str, str]] = []

    async def flow() -> None:
        async with Client(stdio_params(env)) as client:
            async def call(tool: str, args: dict[str, Any]) -> dict[str, Any]:
                answer = await client.call_tool(tool, args)
                seen.append((f"{tool} {args.get('mode') or args.get('kind', '')}",
                             _text_of(answer)))
                assert not answer.is_error, answer.content[0].text
                return dict(answer.structured_content or {})

            start = await call("osiris_plan", {
                "mode": "start", "objective": f"rotate the key {AWS} on the server",
                "steps": [f"log in with {GITHUB}", "rotate"],
                "constraints": [f"never print {DB_URL}"],
                "decisions": [f"use {AWS} until Friday"], "agent_id": f"agent-{GITHUB}"})
            task = start["task_id"]
            await call("osiris_plan", {"mode": "update", "task_id": task,
                                       "constraints": [f"db is {DB_URL}"],
                                       "decisions": [f"token {GITHUB} is revoked"]})
            await call("osiris_plan", {"mode": "memory", "task_id": task, "memory": [
                {"kind": "fact", "key": f"key-{AWS}", "value": {"url": DB_URL}}]})
            await call("osiris_plan", {"mode": "memory", "task_id": task,
                                       "memory": {"kind": "fact"}})
            await call("osiris_precheck", {
                "task_id": task, "tool": f"mcp__vault__{GITHUB}",
                "args": {"command": f"psql {DB_URL}", "token": GITHUB},
                "path": f"/srv/{AWS}/config"})
            await call("osiris_observe", {
                "task_id": task, "kind": "action", "tool": f"deploy-{AWS}",
                "args": {"env": {"AWS_ACCESS_KEY_ID": AWS}, "file_path": f"/etc/{GITHUB}"}})
            observed = await call("osiris_observe", {
                "task_id": task, "kind": "result", "tool": "Bash",
                "args": {"command": f"curl -u app:{DB_PASSWORD} https://x"},
                "result": f"connected to {DB_URL}\n" + "row\n" * 800,
                "usage": {"input_tokens": 1200, "output_tokens": 30,
                          "note": f"key {AWS}"}})
            await call("osiris_observe", {"task_id": task, "kind": "error", "tool": "Bash",
                                          "args": {"command": f"export TOKEN={GITHUB}"},
                                          "result": f"denied for {AWS}"})
            await call("osiris_recall", {"ref": observed["ref"], "op": "grep",
                                         "pattern": "connected", "task_id": task})
            handoff = await call("osiris_handoff", {
                "mode": "create", "task_id": task,
                "contract": {"objective": f"check {DB_URL}",
                             "constraints": [f"do not use {AWS}"],
                             "checks": {"required_fields": ["summary"]}}})
            child = await call("osiris_handoff", {"mode": "accept",
                                                  "handoff_id": handoff["handoff_id"]})
            await call("osiris_handoff", {"mode": "complete",
                                          "handoff_id": handoff["handoff_id"],
                                          "task_id": child["task_id"],
                                          "result": {"summary": f"found {GITHUB}"}})
            await call("osiris_handoff", {"mode": "status",
                                          "handoff_id": handoff["handoff_id"]})
            for mode in ("resume", "status"):
                await call("osiris_plan", {"mode": mode, "task_id": task})
            for mode in ("snapshot", "report", "compact"):
                await call("osiris_checkpoint", {"task_id": task, "mode": mode})
            for uri in (f"osiris://task/{task}/manifest", f"osiris://task/{task}/status"):
                resource = await client.read_resource(uri)
                seen.append((uri, json.dumps([c.model_dump() for c in resource.contents])))
            prompt = await client.get_prompt("osiris/task-resume", {"task_id": task})
            seen.append(("prompt", json.dumps(prompt.model_dump(), default=str)))

    run(flow())
    return seen


def _hook(env: dict[str, str], event: str, payload: dict[str, Any]) -> str:
    done = run_cli("hook", "claude-code", event, env=env, stdin=json.dumps(payload))
    assert done.returncode == 0, done.stderr
    return done.stdout


def _every_stored_text(home: Path) -> str:
    tables = [t for (t,) in home_rows(home, "SELECT table_name FROM information_schema.tables"
                                      " WHERE table_schema = 'main'")]
    dump = []
    for table in tables:
        rows = home_rows(home, f'SELECT * FROM "{table}"')
        dump.append(f"{table}: {json.dumps(rows, default=str, ensure_ascii=False)}")
    blobs = [p.read_bytes().decode("utf-8", "replace")
             for p in (home / "refs").rglob("*") if p.is_file()]
    return "\n".join(dump + blobs)


def test_secrets_in_agent_input_are_scrubbed_everywhere() -> None:
    env = osiris_env()
    answers = _drive(env)
    hook_in = {"session_id": "s-secret", "cwd": "/work", "hook_event_name": "PreToolUse",
               "tool_name": "Bash", "tool_use_id": "toolu_1",
               "tool_input": {"command": f"aws s3 ls --key {AWS} {DB_URL}"}}
    pre_text = _hook(env, "pre-tool-use", hook_in)
    pre_answer = json.loads(pre_text) if pre_text.strip() else {}
    # A shell command is never rewritten: the raw command never comes back.
    assert "updatedInput" not in pre_answer.get("hookSpecificOutput", {})
    answers.append(("hook pre", json.dumps(pre_answer)))
    post = {**hook_in, "hook_event_name": "PostToolUse",
            "tool_response": {"stdout": f"token {GITHUB}\n", "stderr": "", "exit_code": 0}}
    answers.append(("hook post", _hook(env, "post-tool-use", post)))
    # A large output with the secret at its end: the preview that replaces it is built
    # from the scrubbed text.
    large = "".join(f"line {i}\n" for i in range(3000)) + f"Error: bad token {GITHUB}\n"
    post_large = {**post, "tool_response": {"stdout": large, "stderr": "",
                                            "interrupted": False, "isImage": False}}
    replaced = json.loads(_hook(env, "post-tool-use", post_large))
    shown = replaced["hookSpecificOutput"]["updatedToolOutput"]["stdout"]
    assert "Error: bad token [REDACTED:" in shown
    answers.append(("hook post, replaced", json.dumps(replaced)))
    for where, text in answers:
        _assert_clean(where, text)
    stored = _every_stored_text(home_of(env))
    assert "[REDACTED:" in stored
    _assert_clean("the store", stored)
    health = run_cli("health", env=env)
    _assert_clean("osiris health", health.stdout)


def test_every_public_engine_method_scrubs_its_input() -> None:
    public = [name for name in vars(Engine) if not name.startswith("_")
              and callable(getattr(Engine, name)) and name != "close"]
    assert {"plan", "precheck", "observe", "recall", "checkpoint", "handoff"} <= set(public)
    unguarded = [name for name in public
                 if not getattr(getattr(Engine, name), "scrubs_agent_input", False)]
    assert not unguarded, f"Engine methods that skip the agent-input scrub: {unguarded}"
