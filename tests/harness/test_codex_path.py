"""The rest of Codex's path with OSIRIS installed as a user installs it (``--yes``: Codex
trusts its hooks; no bypass flag), checked in the real Codex 0.169 (issue 39, item 3).

* another MCP server's large output reaches the model as OSIRIS's preview and ref, and
  the model gets any part back through OSIRIS's own MCP tool inside Codex;
* ``apply_patch`` and ``write_stdin`` give the model what the bare client gives, and
  the patch is journaled (Codex runs no hook for ``write_stdin``: OSIRIS never sees it);
* after Codex compacts its history, the next prompt carries OSIRIS's manifest and the
  refs it still holds (Codex runs SessionStart with ``source: "compact"``).
"""

from __future__ import annotations

import json
import re
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import tomlkit

from osiris.harness.real_clients.configs import BARE, OSIRIS, install
from osiris.harness.real_clients.model_script import (
    Action,
    FinalText,
    ModelRequest,
    ToolCall,
    is_agent_turn,
    tool_results,
)
from osiris.harness.real_clients.model_server import ModelServer
from osiris.harness.real_clients.run import CODEX, ClientRun, Workspace, run_client
from tests.conftest import SHOWN_REF, home_rows
from tests.harness.real_clients import TOOLS, require_client

pytestmark = pytest.mark.slow  # real Codex sessions

FOREIGN = Path(__file__).parent / "data" / "foreign_mcp.py"
MODEL = ("-m", "gpt-5.5")  # a model whose catalog entry offers apply_patch
REF = re.compile(SHOWN_REF)
PATCH = "*** Begin Patch\n*** Add File: notes.txt\n+hello\n*** End Patch\n"
_VOLATILE = re.compile(r"Chunk ID: \w+|Wall time: [\d.]+ seconds|session ID \d+")


class _Steps:
    """One action per agent turn, counted across the whole run (a compaction resets the
    history a stateless script would count), each chosen from the last result."""

    def __init__(self, steps: list[Any]) -> None:
        self.steps = steps
        self.turn = 0
        self.lock = threading.Lock()

    def reply(self, request: ModelRequest) -> Action:
        if not is_agent_turn(request):
            return FinalText("OK")  # a compaction's summary
        with self.lock:
            step, self.turn = self.turn, self.turn + 1
        if step >= len(self.steps):
            return FinalText("Done.")
        results = tool_results(request)
        action = self.steps[step]
        return action(results[-1] if results else "") if callable(action) else action


def _session(tmp_path: Path, configuration: str, steps: list[Any], *,
             compact_at: int | None = None) -> tuple[Workspace, ClientRun]:
    workspace = Workspace(tmp_path / configuration).reset(CODEX)
    install(configuration, CODEX, workspace, TOOLS)
    config = workspace.codex_home / "config.toml"
    document = tomlkit.parse(config.read_text("utf-8"))
    servers = document.setdefault("mcp_servers", tomlkit.table(is_super_table=True))
    servers["foreign"] = {"command": sys.executable, "args": [str(FOREIGN)]}
    if compact_at is not None:
        document["model_auto_compact_token_limit"] = compact_at
    config.write_text(tomlkit.dumps(document), "utf-8")
    with ModelServer(_Steps(steps)) as server:
        run = run_client(CODEX, server, workspace, "go", tools=TOOLS, timeout_s=240,
                         extra_args=MODEL)
    assert run.returncode == 0, run.describe()
    assert "bypass-hook-trust" not in " ".join(run.argv)
    return workspace, run


def _recall(last: str) -> Action:
    found = REF.search(last)
    if found is None:  # bare: nothing to recall
        return ToolCall("exec_command", {"cmd": "true"})
    return ToolCall("mcp__osiris.osiris_recall",
                    {"ref": found.group(0), "op": "grep", "pattern": "module_2345 "})


def _write_stdin(last: str) -> Action:
    found = re.search(r"session ID (\d+)", last)
    assert found, last
    return ToolCall("write_stdin", {"session_id": int(found.group(1)), "chars": "hello\n",
                                    "yield_time_ms": 2000})


def test_foreign_mcp_output_apply_patch_and_write_stdin(tmp_path: Path) -> None:
    require_client(CODEX)
    steps = [ToolCall("exec_command", {"cmd": "sleep 2"}),  # the MCP servers are up
             ToolCall("mcp__foreign.big_log", {"lines": 3000}),
             _recall,
             ToolCall("exec_command", {"cmd": "read x; echo got $x; sleep 1", "tty": True,
                                       "yield_time_ms": 500}),
             _write_stdin,
             ToolCall("apply_patch", PATCH)]
    runs = {c: _session(tmp_path, c, steps) for c in (BARE, OSIRIS)}
    seen = {c: [_VOLATILE.sub("…", r) for r in tool_results(run.prompts[-1])]
            for c, (_, run) in runs.items()}
    bare, osiris = seen[BARE], seen[OSIRIS]
    # The foreign server's 3,000 lines: Codex shows ~12k characters of it bare; with
    # OSIRIS a preview and the ref, and one osiris_recall inside Codex gets any line.
    assert "line 2345" not in bare[1] and REF.search(bare[1]) is None
    assert "stored as mem://sha256:" in osiris[1] and len(osiris[1]) < len(bare[1]) / 4
    assert "2345:line 2345: compiling module_2345 ok" in osiris[2]
    # The interactive command, its stdin and the patch: as bare, byte for byte.
    assert osiris[3:] == bare[3:]
    assert "got hello" in osiris[4] and "A notes.txt" in osiris[5]
    for configuration, (workspace, _) in runs.items():
        assert (workspace.project / "notes.txt").read_text("utf-8") == "hello\n", configuration
    home = runs[OSIRIS][0].osiris_home
    tools = sorted(t for (t,) in home_rows(home, "SELECT tool FROM calls"))
    assert tools == ["Bash", "Bash", "apply_patch", "mcp__foreign__big_log"]
    (paths,) = home_rows(home, "SELECT targets FROM calls WHERE tool = 'apply_patch'")
    assert "notes.txt" in str(paths[0])


def test_after_codex_compacts_the_manifest_and_live_refs_come_back(tmp_path: Path) -> None:
    """One large output (stored), then outputs under OSIRIS's threshold until Codex's
    own auto-compaction: the prompt after it names the stored ref again."""
    require_client(CODEX)
    steps = [ToolCall("exec_command", {"cmd": "seq 1 4000"}),
             *(ToolCall("exec_command", {"cmd": f"seq {i} {i + 350}"}) for i in range(10))]
    _, run = _session(tmp_path, OSIRIS, steps, compact_at=13_000)
    texts = [json.dumps(prompt.body) for prompt in run.prompts]
    stored = REF.search(tool_results(run.prompts[1])[-1])
    assert stored, tool_results(run.prompts[1])[-1][-400:]
    after = [i for i, text in enumerate(texts) if "OSIRIS after compaction" in text]
    assert after, "no compaction context in any prompt"
    first = texts[after[0]]
    assert stored.group(0) in first
    assert "OSIRIS after compaction" not in texts[1]
