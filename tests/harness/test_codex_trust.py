"""Codex runs only the hooks its user trusted (issue 39, item 1), in the real Codex 0.169.

No ``--dangerously-bypass-hook-trust`` anywhere here: a plain ``osiris install codex``
(no terminal, no ``--yes``) installs the hooks untrusted and its notes say that Codex
will not run them and the command that trusts them, and a large shell output then
reaches the model whole; ``osiris install codex --yes`` records Codex's own trust and
the same output reaches the model as OSIRIS's preview; ``osiris health`` says which;
``osiris uninstall codex`` gives back the user's ``config.toml`` byte for byte.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from osiris.harness.real_clients.model_script import (
    FinalText,
    ScriptedTurns,
    ToolCall,
    tool_results,
)
from osiris.harness.real_clients.model_server import ModelServer
from osiris.harness.real_clients.run import CODEX, Workspace, client_env, run_client
from tests.harness.real_clients import TOOLS, require_client

pytestmark = pytest.mark.slow  # real Codex sessions

LARGE = "seq 1 4000"
PREVIEWED = "stored as mem://sha256:"


def _osiris(workspace: Workspace, *args: str) -> tuple[dict[str, Any], str]:
    """``python -m osiris ARGS`` as the scratch user (no terminal): its JSON and stderr
    (``health`` exits 1 for a home with no store yet: only its JSON matters here)."""
    env = client_env(CODEX, workspace, "http://127.0.0.1:9", TOOLS,
                     {"OSIRIS_HOME": str(workspace.osiris_home)})
    done = subprocess.run([sys.executable, "-m", "osiris", *args], cwd=workspace.project,
                          env=env, capture_output=True, text=True, timeout=120, check=False,
                          stdin=subprocess.DEVNULL)
    assert done.returncode in ((0, 1) if args[0] == "health" else (0,)), done.stderr
    return json.loads(done.stdout), done.stderr


def _large_output_seen(workspace: Workspace) -> str:
    """What the model got back for one large shell output in a real Codex session."""
    turns = ScriptedTurns([ToolCall("exec_command", {"cmd": LARGE}), FinalText("Done.")])
    with ModelServer(turns) as server:
        run = run_client(CODEX, server, workspace, "go", tools=TOOLS, timeout_s=240,
                         extra_args=("-m", "gpt-5-codex"))
    assert run.returncode == 0, run.describe()
    assert "bypass-hook-trust" not in " ".join(run.argv)
    return tool_results(run.prompts[-1])[-1]


def test_codex_runs_osiris_hooks_only_once_the_user_trusted_them(tmp_path: Path) -> None:
    require_client(CODEX)
    codex = str(TOOLS.client(CODEX))
    workspace = Workspace(tmp_path / "codex").reset(CODEX)
    config = workspace.codex_home / "config.toml"
    original = config.read_bytes()

    plain, stderr = _osiris(workspace, "install", "codex", "--user", "--codex", codex)
    assert plain["hook_trust"]["status"] == "untrusted"
    assert [hook["status"] for hook in plain["hook_trust"]["hooks"]] == ["untrusted"] * 3
    note = " ".join(plain["notes"])
    assert "will not run them" in note and "osiris install codex --yes" in note
    assert "osiris install codex --yes" in stderr  # said to the person, too
    assert b"hooks.state" not in config.read_bytes()
    seen = _large_output_seen(workspace)
    assert PREVIEWED not in seen and "\n4000" in seen
    health, _ = _osiris(workspace, "health", "--codex", codex)
    assert health["codex_hooks"]["user"]["status"] == "untrusted"
    assert health["codex_hooks"]["user"]["what_to_do"] == "osiris install codex --yes"

    trusted, _ = _osiris(workspace, "install", "codex", "--user", "--yes", "--codex", codex)
    assert trusted["hook_trust"]["status"] == "trusted"
    assert trusted["notes"] == []
    keys = [hook["key"] for hook in trusted["hook_trust"]["hooks"]]
    assert all(key.startswith(str(workspace.codex_home / "hooks.json") + ":") for key in keys)
    assert PREVIEWED in _large_output_seen(workspace)
    health, _ = _osiris(workspace, "health", "--codex", codex)
    assert health["codex_hooks"]["user"]["status"] == "trusted"

    # The hooks change (another OSIRIS home): Codex calls them modified, the install
    # without --yes says so and health says "changed"; --yes trusts the new ones.
    other = str(workspace.root / "other-home")
    changed, _ = _osiris(workspace, "install", "codex", "--user", "--home", other,
                         "--codex", codex)
    assert changed["hook_trust"]["status"] == "changed"
    assert "changed since you last trusted them" in " ".join(changed["notes"])
    health, _ = _osiris(workspace, "health", "--codex", codex)
    assert health["codex_hooks"]["user"]["status"] == "changed"
    again, _ = _osiris(workspace, "install", "codex", "--user", "--home", other, "--yes",
                       "--codex", codex)
    assert again["hook_trust"]["status"] == "trusted"
    hooks_file = workspace.codex_home / "hooks.json"

    removed, _ = _osiris(workspace, "uninstall", "codex", "--user")
    assert removed["changed"]
    # Everything install wrote is gone, the trust included; what is left is what was
    # there (the harness points the provider at each run's server: its port differs).
    left = config.read_text("utf-8")
    assert "hooks" not in left and "osiris" not in left
    assert not hooks_file.exists()
    base = re.compile(r"127\.0\.0\.1:\d+")
    assert base.sub("PORT", left) == base.sub("PORT", original.decode())


def test_a_trust_the_user_recorded_comes_back_on_uninstall(tmp_path: Path) -> None:
    """The user had trusted one of the handlers before (another hash, a setting of their
    own in the table): --yes sets the hash Codex computes now, uninstall puts theirs back
    and removes only the tables OSIRIS added."""
    require_client(CODEX)
    codex = str(TOOLS.client(CODEX))
    workspace = Workspace(tmp_path / "codex").reset(CODEX)
    config = workspace.codex_home / "config.toml"
    plain, _ = _osiris(workspace, "install", "codex", "--user", "--codex", codex)
    first = plain["hook_trust"]["hooks"][0]["key"]
    with config.open("a", encoding="utf-8") as out:
        out.write(f'\n[hooks.state."{first}"]\nenabled = true\ntrusted_hash = "sha256:old"\n')
    trusted, _ = _osiris(workspace, "install", "codex", "--user", "--yes", "--codex", codex)
    assert trusted["hook_trust"]["status"] == "trusted"
    state = tomllib.loads(config.read_text("utf-8"))["hooks"]["state"]
    assert state[first] == {"enabled": True,
                            "trusted_hash": trusted["hook_trust"]["hooks"][0]["hash"]}
    assert len(state) == 3
    _osiris(workspace, "uninstall", "codex", "--user")
    left = tomllib.loads(config.read_text("utf-8"))
    assert left["hooks"] == {"state": {first: {"enabled": True, "trusted_hash": "sha256:old"}}}
    assert "osiris" not in left.get("mcp_servers", {})


def test_without_codex_the_install_says_what_to_run_once_it_is_there(tmp_path: Path) -> None:
    """No codex on PATH (or one that cannot start): the hooks are installed, untrusted,
    and the notes say so and how to trust them later."""
    workspace = Workspace(tmp_path / "codex").reset(CODEX)
    missing, stderr = _osiris(workspace, "install", "codex", "--user", "--yes")
    assert missing["hook_trust"]["status"] == "unknown"
    assert "codex was not found on PATH" in missing["notes"][0]
    assert "osiris install codex --yes" in stderr
    broken, _ = _osiris(workspace, "install", "codex", "--user", "--yes",
                        "--codex", str(tmp_path / "no-such-codex"))
    assert broken["hook_trust"]["status"] == "unknown"
    assert "could not start" in broken["notes"][0]
    assert "hooks.state" not in (workspace.codex_home / "config.toml").read_text("utf-8")


@pytest.mark.parametrize("answer", ["y", "n"])
def test_at_a_terminal_the_install_shows_the_hooks_and_asks(tmp_path: Path, answer: str) -> None:
    """On a terminal (no --yes) the person sees each hook and is asked; only a yes
    records Codex's trust."""
    require_client(CODEX)
    workspace = Workspace(tmp_path / "codex").reset(CODEX)
    env = client_env(CODEX, workspace, "http://127.0.0.1:9", TOOLS,
                     {"OSIRIS_HOME": str(workspace.osiris_home)})
    primary, secondary = os.openpty()  # stdin and stderr a terminal, stdout JSON
    with subprocess.Popen([sys.executable, "-m", "osiris", "install", "codex", "--user",
                           "--codex", str(TOOLS.client(CODEX))], cwd=workspace.project,
                          env=env, stdin=secondary, stderr=secondary,
                          stdout=subprocess.PIPE, text=True) as process:
        os.close(secondary)
        shown = b""
        while b"[y/N]" not in shown:
            chunk = os.read(primary, 4096)
            assert chunk, shown
            shown += chunk
        os.write(primary, f"{answer}\n".encode())
        out, _ = process.communicate(timeout=120)
    os.close(primary)
    assert process.returncode == 0
    text = shown.decode()
    assert "Codex runs a hook only once you trust it" in text
    assert text.count(" hook codex ") == 3 and "sha256:" in text
    status = json.loads(out)["hook_trust"]["status"]
    assert status == ("trusted" if answer == "y" else "untrusted")
