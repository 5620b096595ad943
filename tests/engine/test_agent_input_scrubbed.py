"""Secrets in any agent-supplied string never reach the store or an answer (issue 16,
item 2): plan fields, memory, handoff contracts and results, tool names, call arguments,
precheck input and provider usage, through a real stdio MCP client and the real hook."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from osiris.engine import Engine
from osiris.store import owner_log
from tests.conftest import home_rows, run_cli
from tests.server.transports import home_of, observe_a_result, osiris_env, run, stdio_params

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


# Shapes the rules missed until version 2026.12.03-1 (issue 36, item 11): one such secret
# reached the refs, the ledger and DuckDB's write-ahead log, readable as plain bytes.
YAML_PASSWORD = "Hx7qPm29zLk4"
YAML_API_KEY = "9fK2mQ7xLp4Zr8Vt1Wn6Yb3"
DJANGO_KEY = "django-insecure-r8#k2@lx!q9wz7v%f0"
XML_PASSWORD = "Tr8kW2qZ9vLm"
DATABRICKS = "dapi7c1e9b0f4a2d8e6c3b5a7f9d1e3c5b7a"
MYSQL_PASSWORD = "S3cretPw9x"
SSHPASS_PASSWORD = "Vn4tQ8zLw2"
NEW_SHAPES = (YAML_PASSWORD, YAML_API_KEY, DJANGO_KEY, XML_PASSWORD, DATABRICKS,
              MYSQL_PASSWORD, SSHPASS_PASSWORD)
CANARY = "db-canary.internal"
"""Stored next to a secret, in the call's arguments: found in the raw bytes, it proves
that the byte scan below reads where those arguments are kept."""


def _raw_files(home: Path) -> dict[str, bytes]:
    """The bytes of every file under ``home`` by path (those in the home itself by name)."""
    raw = {}
    for path in home.rglob("*"):
        with contextlib.suppress(FileNotFoundError):  # a temporary file, renamed since
            if path.is_file():
                raw[str(path.relative_to(home))] = path.read_bytes()
    return raw


@pytest.mark.parametrize("write_behind", ["on", "off"])
def test_new_secret_shapes_reach_neither_refs_nor_ledger_nor_the_wal(write_behind: str) -> None:
    # Where a call's rows wait until they are checkpointed into osiris.duckdb: with
    # write-behind (the default) the owner's log, then the WAL; without it the WAL at once.
    # The canary says the raw scan read the place that holds them.
    env = osiris_env(OSIRIS_WRITE_BEHIND=write_behind)
    home = home_of(env)
    config = (f"database:\n  host: {CANARY}\n  password: {YAML_PASSWORD}\n"
              f"search:\n  api_key: {YAML_API_KEY}\n"
              f"SECRET_KEY = \"{DJANGO_KEY}\"\n"
              f"<server><password>{XML_PASSWORD}</password></server>\n"
              f"Token: {DATABRICKS}\n")
    command = (f"mysql -h {CANARY} -u app -p{MYSQL_PASSWORD} app < dump.sql && "
               f"sshpass -p {SSHPASS_PASSWORD} ssh deploy@10.0.0.5 cat config.yml")
    answers: list[str] = []

    async def flow() -> None:
        async with Client(stdio_params(env)) as client:
            _, observed, recalled = await observe_a_result(client, command,
                                                           config + "row\n" * 800)
            answers.extend(_text_of(r) for r in (observed, recalled))

    run(flow())
    for text in answers:
        assert not [s for s in NEW_SHAPES if s in text], text
    # The owner still runs and holds the database: nothing is checkpointed yet.
    raw = _raw_files(home)
    # With write-behind the owner's timer may or may not have moved the rows on yet.
    waiting = ["osiris.duckdb.wal", *(owner_log.LOG_NAMES if write_behind == "on" else ())]
    assert any(CANARY.encode() in raw.get(name, b"") for name in waiting)
    leaks = {name: [s for s in NEW_SHAPES if s.encode() in data] for name, data in raw.items()}
    assert not {name: found for name, found in leaks.items() if found}
    # Reading the tables directly makes the owner write its rows and step aside: then the
    # database file holds everything, checkpointed.
    stored = _every_stored_text(home)  # every table, the ledger's included, and the refs
    for name, data in _raw_files(home).items():
        assert not [s for s in NEW_SHAPES if s.encode() in data], name
    assert "[REDACTED:cli_password:" in stored and "[REDACTED:databricks_token:" in stored
    _assert_clean("the store", stored)
    assert not [s for s in NEW_SHAPES if s in stored]
