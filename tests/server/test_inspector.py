"""The MCP Inspector CLI (a real third-party client) against OSIRIS, stdio and HTTP.

It needs Node 22, installed from npm by ``.ci/install-node-tools`` (run by ``nox -s
tests`` when npm is present, and always by ``.ci/run``). Without it the tests skip,
unless TEST_REQUIRE_NODE_TOOLS=1 (CI), where they fail.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from osiris.server.definitions import OUTPUT_SCHEMAS
from tests.conftest import REPO, home_rows
from tests.server.transports import http_server, osiris_env

pytestmark = pytest.mark.slow  # the MCP Inspector (Node)


def _inspector() -> Path:
    found = os.environ.get("TEST_MCP_INSPECTOR") or shutil.which("mcp-inspector")
    default = REPO / ".tools" / "node" / "node_modules" / ".bin" / "mcp-inspector"
    if not found and default.exists():
        found = str(default)
    if not found:
        message = "MCP Inspector not installed: run .ci/install-node-tools"
        if os.environ.get("TEST_REQUIRE_NODE_TOOLS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return Path(found)


def _server_env(env: dict[str, str]) -> list[str]:
    """``-e KEY=VALUE`` options: the Inspector starts a stdio server with only a small
    default environment (PATH, HOME, …), so OSIRIS_HOME and the rest must be passed on
    explicitly or the server writes to ``~/.osiris``."""
    names = sorted(k for k in env if k.startswith("OSIRIS_") or k == "PYTHONPATH")
    return [option for k in names for option in ("-e", f"{k}={env[k]}")]


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    inspector = _inspector()
    env = {**env, "PATH": f"{inspector.parent}{os.pathsep}{Path(sys.executable).parent}"
                          f"{os.pathsep}{env.get('PATH', '')}"}
    return subprocess.run([str(inspector), "--cli", *_server_env(env), *args], env=env,
                          capture_output=True, text=True, timeout=180, check=False)


def test_inspector_over_stdio(osiris_home: Path) -> None:
    env = osiris_env()
    server = [sys.executable, "-m", "osiris"]
    listed = _run([*server, "--method", "tools/list", "--strict"], env)
    assert listed.returncode == 0, listed.stderr
    tools = json.loads(listed.stdout)["tools"]
    names = [t["name"] for t in tools]
    assert names == ["osiris_plan", "osiris_precheck", "osiris_observe", "osiris_recall",
                     "osiris_checkpoint", "osiris_handoff"]
    # Each tool publishes its answers' schema, and the Inspector's portability check finds
    # no error in any schema (its warnings are the fields that take any JSON on purpose).
    assert [t["outputSchema"] for t in tools] == [OUTPUT_SCHEMAS[n[7:]] for n in names]
    assert "\n0 errors," in listed.stderr, listed.stderr
    called = _run([*server, "--method", "tools/call", "--tool-name", "osiris_plan",
                   "--tool-arg", "mode=start", "--tool-arg", "objective=inspector"], env)
    assert called.returncode == 0, called.stderr
    result = json.loads(called.stdout)
    assert result["structuredContent"]["manifest"].startswith("OSIRIS/1 task=")
    # The server the Inspector spawned wrote to the test's home, not the user's.
    task_id = result["structuredContent"]["task_id"]
    assert home_rows(osiris_home, "SELECT objective FROM tasks WHERE task_id = ?",
                     [task_id]) == [("inspector",)]
    # The Inspector checks every structured answer against the tool's outputSchema (a
    # mismatch is an error, exit 1): an externalized result and its recall pass.
    log = "".join(f"line {i}: worker ok\n" for i in range(3000)) + "ERROR: timeout\n"
    observed = _run([*server, "--method", "tools/call", "--tool-name", "osiris_observe",
                     "--tool-arg", f"task_id={task_id}", "--tool-arg", "kind=result",
                     "--tool-arg", "tool=Bash", "--tool-arg", f"result={log}"], env)
    assert observed.returncode == 0, observed.stderr
    ref = json.loads(observed.stdout)["structuredContent"]["ref"]
    recalled = _run([*server, "--method", "tools/call", "--tool-name", "osiris_recall",
                     "--tool-arg", f"ref={ref}", "--tool-arg", "op=grep",
                     "--tool-arg", "pattern=ERROR"], env)
    assert recalled.returncode == 0, recalled.stderr
    assert "ERROR: timeout" in json.loads(recalled.stdout)["structuredContent"]["text"]
    failed = _run([*server, "--method", "tools/call", "--tool-name", "osiris_plan",
                   "--tool-arg", "mode=status", "--tool-arg", "task_id=t_nope"], env)
    assert failed.returncode == 5  # the Inspector's exit code for a tool error


def test_inspector_over_http(osiris_home: Path) -> None:
    env = osiris_env()
    with http_server(env) as (url, _):
        listed = _run([url, "--transport", "http", "--method", "tools/list"], env)
        assert listed.returncode == 0, listed.stderr
        assert len(json.loads(listed.stdout)["tools"]) == 6
        called = _run([url, "--transport", "http", "--method", "tools/call", "--tool-name",
                       "osiris_plan", "--tool-arg", "mode=context"], env)
        assert called.returncode == 0, called.stderr
        assert "doctrine" in json.loads(called.stdout)["structuredContent"]
