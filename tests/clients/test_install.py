"""`osiris install` / `osiris uninstall` through the real command, on real config files.

Every test runs the CLI as a process with HOME pointing at a temporary user directory
and the working directory in a temporary project, so the files touched are exactly
the ones a user's Claude Code, Codex or Cursor would read.
"""

from __future__ import annotations

import copy
import json
import os
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from osiris.clients.launcher import launch_argv, launch_words

HOOK_MARK = " hook claude-code "  # after the launcher's words (clients.launcher)
CASES = [(client, scope) for client in ("claude-code", "codex", "cursor")
         for scope in ("user", "project")]


@dataclass(frozen=True)
class World:
    """A user's home, a project, and the OSIRIS home of the test."""

    user: Path
    project: Path
    osiris_home: Path

    def run(self, *args: str, env: dict[str, str] | None = None,
            cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        full = {k: v for k, v in os.environ.items()
                if k not in ("CODEX_HOME", "CLAUDE_CONFIG_DIR")}
        full["HOME"] = str(self.user)
        full.update(env or {})
        return subprocess.run([sys.executable, "-m", "osiris", *args], capture_output=True,
                              text=True, env=full, cwd=cwd or self.project, timeout=60,
                              check=False)

    def ok(self, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
        result = self.run(*args, env=env)
        assert result.returncode == 0, result.stderr
        doc: dict[str, Any] = json.loads(result.stdout)
        return doc

    def server_file(self, client: str, scope: str) -> Path:
        base = self.user if scope == "user" else self.project
        return {"claude-code": base / (".claude.json" if scope == "user" else ".mcp.json"),
                "codex": base / ".codex" / "config.toml",
                "cursor": base / ".cursor" / "mcp.json"}[client]

    def hooks_file(self, scope: str) -> Path:
        return (self.user if scope == "user" else self.project) / ".claude" / "settings.json"

    def backups(self) -> list[Path]:
        return sorted(p for base in (self.user, self.project) for p in base.rglob("*")
                      if ".osiris-backup" in p.name)


@pytest.fixture
def world(tmp_path: Path, osiris_home: Path) -> World:
    user, project = tmp_path / "user", tmp_path / "project"
    user.mkdir()
    project.mkdir()
    return World(user, project, osiris_home)


def dumps(data: Any) -> str:
    """How Claude Code and Cursor write their JSON (JSON.stringify(x, null, 2))."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


CLAUDE_SETTINGS: dict[str, Any] = {
    "$schema": "https://json.schemastore.org/claude-code-settings.json",
    "permissions": {"allow": ["Bash(npm run lint)", "Read(~/.zshrc)"],
                    "deny": ["Read(./.env)", "Read(./secrets/**)"]},
    "env": {"CLAUDE_CODE_ENABLE_TELEMETRY": "0", "BASH_DEFAULT_TIMEOUT_MS": "60000"},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/check.sh"}]}],
        "PostToolUse": [{"matcher": "Edit|MultiEdit|Write", "hooks": [
            {"type": "command", "command": "npx prettier --write \"$CLAUDE_FILE_PATH\"",
             "timeout": 30}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send 'Claude is done'"}]}],
    },
    "model": "opus",
    "statusLine": {"type": "command", "command": "~/.claude/statusline.sh"},
}
CLAUDE_STATE: dict[str, Any] = {  # ~/.claude.json: Claude Code's state, user servers at top
    "numStartups": 187,
    "installMethod": "native",
    "autoUpdates": True,
    "tipsHistory": {"new-user-warmup": 7, "memory-command": 12},
    "userID": "3b1f0c9e5d",
    "projects": {"/home/ada/src/engine": {
        "allowedTools": [], "history": [{"display": "fix the failing test — ünïcode"}],
        "mcpServers": {}, "hasTrustDialogAccepted": True, "lastCost": 0.4213}},
    "mcpServers": {"github": {"type": "stdio", "command": "npx",
                              "args": ["-y", "@modelcontextprotocol/server-github"],
                              "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_x"}}},
    "hasCompletedOnboarding": True,
}
PROJECT_MCP: dict[str, Any] = {"mcpServers": {
    "postgres": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-postgres"],
                 "env": {"DATABASE_URL": "${DATABASE_URL}"}},
    "docs": {"type": "http", "url": "https://docs.example.com/mcp"}}}
# Cursor's file as a person writes it: arrays on one line, four-space indent.
CURSOR_MCP = """{
    "mcpServers": {
        "browser": { "command": "npx", "args": ["-y", "@browsermcp/mcp@latest"] },
        "linear": {
            "url": "https://mcp.linear.app/sse"
        }
    }
}
"""
CODEX_CONFIG = """# Codex configuration, kept by hand.
model = "gpt-5-codex"   # the default model
model_reasoning_effort = "high"
approval_policy = "on-request"

[profiles.fast]
model = "gpt-5-mini"
approval_policy = "never"

[mcp_servers.context7]
command = "npx"
args = ["-y", "@upstash/context7-mcp"]
startup_timeout_sec = 20

[mcp_servers.context7.env]
DEBUG = "1"

# Sandbox for workspace-write
[sandbox_workspace_write]
network_access = false
"""


def seed(world: World, client: str, scope: str) -> dict[Path, str]:
    """Write realistic existing configuration; the original text of each file."""
    files: dict[Path, str] = {}
    if client == "claude-code":
        files[world.server_file(client, scope)] = dumps(CLAUDE_STATE if scope == "user"
                                                        else PROJECT_MCP)
        files[world.hooks_file(scope)] = dumps(CLAUDE_SETTINGS)
    elif client == "codex":
        files[world.server_file(client, scope)] = CODEX_CONFIG
    else:
        files[world.server_file(client, scope)] = CURSOR_MCP
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return files


def parse(path: Path) -> Any:
    text = path.read_text("utf-8")
    return tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)


def without_osiris(data: Any, name: str = "osiris") -> Any:
    """The parsed configuration minus OSIRIS's entries."""
    data = copy.deepcopy(data)
    for table in ("mcpServers", "mcp_servers"):
        if isinstance(data.get(table), dict):
            data[table].pop(name, None)
    for event, groups in list(data.get("hooks", {}).items()):
        kept = [g for g in groups
                if not all(HOOK_MARK in h.get("command", "") or h.get("type") == "mcp_tool"
                           for h in g["hooks"])]
        if groups and not kept:  # a list only OSIRIS's groups filled
            del data["hooks"][event]
        else:
            data["hooks"][event] = kept
    return data


def entry(world: World, client: str, scope: str, name: str = "osiris") -> dict[str, Any]:
    data = parse(world.server_file(client, scope))
    found: dict[str, Any] = data["mcp_servers" if client == "codex" else "mcpServers"][name]
    return found


def own_handlers(path: Path, event: str) -> list[dict[str, Any]]:
    return [h for g in json.loads(path.read_text("utf-8"))["hooks"].get(event, [])
            for h in g["hooks"] if HOOK_MARK in h.get("command", "")
            or h.get("type") == "mcp_tool"]


# -- fresh installs ---------------------------------------------------------------------


@pytest.mark.parametrize(("client", "scope"), CASES)
def test_fresh_install_writes_the_entries_and_uninstall_leaves_nothing(
        world: World, client: str, scope: str) -> None:
    report = world.ok("install", client, f"--{scope}")
    assert report["changed"] is True
    assert {f["status"] for f in report["files"]} == {"created"}
    server = entry(world, client, scope)
    assert server["command"] == sys.executable
    assert server["args"] == ["-m", "osiris"]
    assert server["env"]["OSIRIS_HOME"] == str(world.osiris_home)
    if scope == "project":  # the project is what file inspection may read
        assert server["env"]["OSIRIS_ROOTS"] == str(world.project.resolve())
    else:
        assert "OSIRIS_ROOTS" not in server["env"]
    assert server.get("type") == ("stdio" if client == "claude-code" else None)
    # Claude Code's tool hooks call the server's osiris_hook, which it then lists.
    assert server["env"].get("OSIRIS_HOOK_TOOL") == ("on" if client == "claude-code" else None)
    # …and the agent, whose calls the hooks route, sees only osiris_recall.
    assert server["env"].get("OSIRIS_SURFACE") == (
        "hooks" if client in ("claude-code", "codex") else None)
    touched = [world.server_file(client, scope)]
    if client == "claude-code":
        hooks_file = world.hooks_file(scope)
        touched.append(hooks_file)
        fields = ("hook_event_name", "session_id", "cwd", "tool_name", "tool_input",
                  "tool_use_id", "tool_response", "error", "agent_id", "transcript_path")
        for event, arg in (("PreToolUse", "pre-tool-use"), ("PostToolUse", "post-tool-use"),
                           ("PostToolUseFailure", "post-tool-use")):
            groups = json.loads(hooks_file.read_text("utf-8"))["hooks"][event]
            assert groups == [{"matcher": "*", "hooks": [
                {"type": "mcp_tool", "server": "osiris", "tool": "osiris_hook", "timeout": 10,
                 "input": {"event": arg, **{f: "${" + f + "}" for f in fields}}}]}]
        (start,) = json.loads(hooks_file.read_text("utf-8"))["hooks"]["SessionStart"]
        assert start == {"matcher": "compact", "hooks": [
            {"type": "command", "timeout": 10,
             "command": f"OSIRIS_HOME={shlex.quote(str(world.osiris_home))}"
                        + (f" OSIRIS_ROOTS={shlex.quote(str(world.project.resolve()))}"
                           if scope == "project" else "")
                        + " OSIRIS_SURFACE=hooks"
                        + " " + " ".join(launch_words(sys.executable))
                        + " hook claude-code session-start"}]}
    if os.name == "posix" and scope == "user":
        assert all(path.stat().st_mode & 0o777 == 0o600 for path in touched)

    again = world.ok("install", client, f"--{scope}")
    assert again["changed"] is False and "already installed" in again["message"]

    gone = world.ok("uninstall", client, f"--{scope}")
    assert {f["status"] for f in gone["files"]} == {"removed"}
    assert not any(path.exists() for path in touched)
    for directory in (".codex", ".cursor", ".claude"):
        assert not (world.user / directory).exists()
        assert not (world.project / directory).exists()
    assert world.backups() == []
    assert not (world.osiris_home / "clients").exists()


# -- existing configuration -------------------------------------------------------------


@pytest.mark.parametrize(("client", "scope"), CASES)
def test_round_trip_keeps_existing_configuration_byte_for_byte(
        world: World, client: str, scope: str) -> None:
    originals = seed(world, client, scope)

    report = world.ok("install", client, f"--{scope}")
    # Codex's hooks live in a file of their own (hooks.json), which the seed lacks.
    assert {f["status"] for f in report["files"] if f["role"] != "install record"} == (
        {"updated", "created"} if client == "codex" else {"updated"})
    for path, text in originals.items():
        before = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
        after = parse(path)
        assert after != before
        assert without_osiris(after) == before
        # Only lines were added: everything of the user's is still there, in order.
        old_lines = text.splitlines()
        new_lines = iter(path.read_text("utf-8").splitlines())
        assert all(any(line == new for new in new_lines) for line in old_lines
                   if line.strip() not in ("}", "]", "},", "],")), path
    backups = world.backups()
    assert sorted(b.read_text("utf-8") for b in backups) == sorted(originals.values())
    assert sorted(b.parent / b.name.removesuffix(".osiris-backup") for b in backups) \
        == sorted(originals)  # one backup per file
    records = world.osiris_home / "clients" / "installs.json"
    assert {"path": str(records), "role": "install record", "status": "created",
            "backup": None} in report["files"]
    if client == "claude-code":
        hooks = json.loads(world.hooks_file(scope).read_text("utf-8"))["hooks"]
        # OSIRIS's group comes after the user's own, which still run first.
        assert hooks["PreToolUse"][0] == CLAUDE_SETTINGS["hooks"]["PreToolUse"][0]
        assert len(own_handlers(world.hooks_file(scope), "PreToolUse")) == 1

    snapshot = {path: path.read_bytes() for path in originals}
    again = world.ok("install", client, f"--{scope}")
    assert again["changed"] is False
    assert {path: path.read_bytes() for path in originals} == snapshot
    assert len(world.backups()) == len(backups)  # no new backup for no change

    gone = world.ok("uninstall", client, f"--{scope}")
    assert {f["status"] for f in gone["files"] if f["role"] != "install record"} == (
        {"updated", "removed"} if client == "codex" else {"updated"})
    for path, text in originals.items():
        assert path.read_text("utf-8") == text
        assert path.read_bytes() == text.encode("utf-8")
    # Every file is as it was before the install: its backup and OSIRIS's record went too,
    # and so did the home the install made for the record.
    assert world.backups() == [] and not any(f["backup"] for f in gone["files"])
    assert {"path": str(records), "role": "install record", "status": "removed",
            "backup": None} in gone["files"]
    assert not world.osiris_home.exists()
    assert not (world.user / ".codex" / "hooks.json").exists()
    assert not (world.project / ".codex" / "hooks.json").exists()

    nothing = world.ok("uninstall", client, f"--{scope}")
    assert nothing["changed"] is False and "not installed" in nothing["message"]


def test_install_adds_only_the_entry_lines_to_a_hand_written_file(world: World) -> None:
    seed(world, "cursor", "project")
    result = world.run("install", "cursor", "--project", "--dry-run")
    assert result.returncode == 0, result.stderr
    removed = [line for line in result.stdout.splitlines()
               if line.startswith("-") and not line.startswith("---")]
    added = [line for line in result.stdout.splitlines()
             if line.startswith("+") and not line.startswith("+++")]
    # Nothing of the user's changes: the comma after the last server and the entry are
    # added (the last server's closing brace becomes the entry's).
    assert removed == []
    assert added[0] == "+        },"
    assert added[1] == '+        "osiris": {'
    assert added[2] == '+            "command": ' + json.dumps(sys.executable) + ","


def test_dry_run_prints_the_diff_and_writes_nothing(world: World) -> None:
    originals = seed(world, "claude-code", "user")
    result = world.run("install", "claude-code", "--user", "--dry-run")
    assert result.returncode == 0, result.stderr
    for path in originals:
        assert f"--- {path}\n+++ {path}\n" in result.stdout
        assert path.read_text("utf-8") == originals[path]
    assert '+    "osiris": {' in result.stdout
    assert "pre-tool-use" in result.stdout and "post-tool-use" in result.stdout
    assert "dry run" in result.stderr
    assert world.backups() == []
    assert not (world.osiris_home / "clients").exists()

    fresh = world.run("install", "codex", "--project", "--dry-run")
    assert fresh.stdout.startswith(f"--- /dev/null\n+++ {world.project / '.codex/config.toml'}")
    assert not (world.project / ".codex").exists()

    world.ok("install", "claude-code", "--user")
    undo = world.run("uninstall", "claude-code", "--user", "--dry-run")
    assert '-    "osiris": {' in undo.stdout
    assert entry(world, "claude-code", "user")["args"] == ["-m", "osiris"]
    nothing = world.run("install", "claude-code", "--user", "--dry-run")
    assert nothing.stdout == "" and "already installed" in nothing.stderr


def test_existing_containers_are_kept_and_created_ones_removed(world: World) -> None:
    # The user's settings have no hooks yet, but an (empty) list for one event.
    settings = world.hooks_file("project")
    settings.parent.mkdir()
    original = dumps({"permissions": {"allow": []}, "hooks": {"PostToolUse": []}})
    settings.write_text(original, encoding="utf-8")
    world.ok("install", "claude-code", "--project")
    data = json.loads(settings.read_text("utf-8"))
    # new keys go last
    assert list(data["hooks"]) == ["PostToolUse", "PreToolUse", "PostToolUseFailure",
                                   "SessionStart"]
    world.ok("uninstall", "claude-code", "--project")
    assert settings.read_text("utf-8") == original  # PostToolUse: [] was the user's
    assert not (world.project / ".mcp.json").exists()


def test_user_hooks_added_after_install_survive_uninstall(world: World) -> None:
    world.ok("install", "claude-code", "--project")
    settings = world.hooks_file("project")
    data = json.loads(settings.read_text("utf-8"))
    mine = {"type": "command", "command": "echo mine"}
    data["hooks"]["PreToolUse"].append({"matcher": "Bash", "hooks": [mine]})
    # ...and one of OSIRIS's handlers copied into a group of the user's.
    data["hooks"]["PostToolUse"].append({"matcher": "Edit", "hooks": [
        mine, data["hooks"]["PostToolUse"][0]["hooks"][0]]})
    settings.write_text(dumps(data), encoding="utf-8")
    world.ok("uninstall", "claude-code", "--project")
    assert json.loads(settings.read_text("utf-8")) == {"hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [mine]}],
        "PostToolUse": [{"matcher": "Edit", "hooks": [mine]}]}}


# -- options ------------------------------------------------------------------------------


def test_reinstall_with_other_options_updates_in_place(world: World, tmp_path: Path) -> None:
    originals = seed(world, "claude-code", "user") | seed(world, "codex", "user")
    world.ok("install", "claude-code")
    world.ok("install", "codex")
    # The user tunes OSIRIS's entries; a re-install must keep that.
    state = json.loads(world.server_file("claude-code", "user").read_text("utf-8"))
    state["mcpServers"]["osiris"]["env"]["OSIRIS_LOG_LEVEL"] = "DEBUG"
    world.server_file("claude-code", "user").write_text(dumps(state), encoding="utf-8")
    codex = world.server_file("codex", "user")
    codex.write_text(codex.read_text("utf-8").replace(
        'args = ["-m", "osiris"]', 'args = ["-m", "osiris"]\nstartup_timeout_sec = 30'),
        encoding="utf-8")

    other_home, roots = tmp_path / "other home", tmp_path / "src"
    roots.mkdir()
    for client in ("claude-code", "codex"):
        report = world.ok("install", client, "--home", str(other_home), "--roots", str(roots))
        assert report["changed"] is True
        server = entry(world, client, "user")
        assert server["env"]["OSIRIS_HOME"] == str(other_home)
        assert server["env"]["OSIRIS_ROOTS"] == str(roots.resolve())
    assert entry(world, "claude-code", "user")["env"]["OSIRIS_LOG_LEVEL"] == "DEBUG"
    assert entry(world, "codex", "user")["startup_timeout_sec"] == 30
    command = own_handlers(world.hooks_file("user"), "SessionStart")[0]["command"]
    assert shlex.split(command)[:2] == [f"OSIRIS_HOME={other_home}",
                                        f"OSIRIS_ROOTS={roots.resolve()}"]
    # The install record moved to the new home with the entries.
    assert (other_home / "clients" / "installs.json").is_file()
    assert not (world.osiris_home / "clients").exists()

    world.ok("uninstall", "claude-code")
    world.ok("uninstall", "codex")
    for path, text in originals.items():
        assert path.read_text("utf-8") == text
    assert not (other_home / "clients").exists()


def test_hooks_mcp_tool_and_none(world: World) -> None:
    originals = seed(world, "claude-code", "project")
    settings = world.hooks_file("project")
    world.ok("install", "claude-code", "--project", "--hooks", "mcp_tool", "--name", "osi")
    for event in ("PreToolUse", "PostToolUse", "PostToolUseFailure"):
        (handler,) = own_handlers(settings, event)
        assert (handler["type"], handler["server"], handler["tool"]) == (
            "mcp_tool", "osi", "osiris_hook")
    assert own_handlers(settings, "SessionStart")[0]["type"] == "command"
    server = parse(world.server_file("claude-code", "project"))["mcpServers"]["osi"]
    assert server["env"]["OSIRIS_HOOK_TOOL"] == "on"

    switched = world.ok("install", "claude-code", "--project", "--hooks", "command",
                        "--name", "osi")
    # The server no longer lists osiris_hook; the hooks are commands again.
    assert [f["status"] for f in switched["files"]] == ["updated", "updated", "updated"]
    assert "OSIRIS_HOOK_TOOL" not in parse(
        world.server_file("claude-code", "project"))["mcpServers"]["osi"]["env"]
    assert own_handlers(settings, "PreToolUse")[0]["type"] == "command"

    world.ok("install", "claude-code", "--project", "--hooks", "none", "--name", "osi")
    assert settings.read_text("utf-8") == originals[settings]
    world.ok("uninstall", "claude-code", "--project", "--name", "osi")
    for path, text in originals.items():
        assert path.read_text("utf-8") == text


def test_hooks_none_on_a_fresh_project_writes_only_the_server(world: World) -> None:
    world.ok("install", "claude-code", "--project", "--hooks", "none")
    assert world.server_file("claude-code", "project").is_file()
    # Without hooks the agent calls OSIRIS itself: every tool, the whole doctrine.
    server = json.loads(world.server_file("claude-code", "project").read_text("utf-8"))
    assert "OSIRIS_SURFACE" not in server["mcpServers"]["osiris"]["env"]
    assert not (world.project / ".claude").exists()


def test_hook_command_quotes_paths_with_spaces(world: World, tmp_path: Path) -> None:
    home = tmp_path / "O'Brien's home"
    project = tmp_path / "my project"
    project.mkdir()
    world.ok("install", "claude-code", "--project-dir", str(project), "--home", str(home),
             "--hooks", "command")
    settings = project / ".claude" / "settings.json"
    command = own_handlers(settings, "PostToolUse")[0]["command"]
    assert shlex.split(command) == [f"OSIRIS_HOME={home}", f"OSIRIS_ROOTS={project.resolve()}",
                                    "OSIRIS_SURFACE=hooks",
                                    *launch_argv(sys.executable, "hook", "claude-code",
                                                 "post-tool-use")]
    assert (project / ".mcp.json").is_file()
    assert not (world.project / ".mcp.json").exists()


def test_client_config_dir_variables_are_followed(world: World, tmp_path: Path) -> None:
    codex_home, claude_dir = tmp_path / "codex-home", tmp_path / "claude-dir"
    env = {"CODEX_HOME": str(codex_home), "CLAUDE_CONFIG_DIR": str(claude_dir)}
    world.ok("install", "codex", env=env)
    world.ok("install", "claude-code", env=env)
    assert (codex_home / "config.toml").is_file()
    assert (claude_dir / ".claude.json").is_file()
    assert (claude_dir / "settings.json").is_file()
    assert not any(world.user.iterdir())
    world.ok("uninstall", "codex", env=env)
    world.ok("uninstall", "claude-code", env=env)
    assert not codex_home.exists() and not claude_dir.exists()


def test_a_symlinked_settings_file_stays_a_link(world: World, tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles" / "claude-settings.json"
    dotfiles.parent.mkdir()
    original = dumps(CLAUDE_SETTINGS)
    dotfiles.write_text(original, encoding="utf-8")
    link = world.hooks_file("user")
    link.parent.mkdir()
    link.symlink_to(dotfiles)
    world.ok("install", "claude-code")
    assert link.is_symlink() and own_handlers(dotfiles, "PreToolUse")
    world.ok("uninstall", "claude-code")
    assert link.is_symlink() and dotfiles.read_text("utf-8") == original


def test_codex_file_without_final_newline_and_crlf(world: World) -> None:
    config = world.server_file("codex", "project")
    config.parent.mkdir()
    for original in ('model = "o3"', 'model = "o3"\r\n\r\n[tui]\r\nnotifications = true\r\n'):
        config.write_bytes(original.encode())
        world.ok("install", "codex", "--project")
        text = config.read_bytes().decode()
        assert tomllib.loads(text)["mcp_servers"]["osiris"]["args"] == ["-m", "osiris"]
        if "\r\n" in original:
            assert "\n" not in text.replace("\r\n", "")
        world.ok("uninstall", "codex", "--project")
        assert config.read_bytes() == original.encode()


def test_uninstall_without_the_record_still_removes_the_entries(world: World) -> None:
    world.ok("install", "claude-code", "--project")
    (world.osiris_home / "clients" / "installs.json").unlink()
    world.ok("uninstall", "claude-code", "--project")
    # Without the record the files stay (they might be the user's), emptied.
    assert json.loads((world.project / ".mcp.json").read_text("utf-8")) == {}
    assert json.loads(world.hooks_file("project").read_text("utf-8")) == {}


# -- refusals -----------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "text", "expected"), [
    ("settings.json", '{\n  "hooks": {},\n}\n', "line 3, column 1"),
    ("settings.json", dumps({"hooks": {"PreToolUse": {"matcher": "*"}}}),
     "hooks.PreToolUse is an object, not an array"),
    ("settings.json", dumps({"hooks": []}), "hooks is an array, not an object"),
    ("settings.json", "[]\n", "the top level is an array"),
    (".mcp.json", dumps({"mcpServers": ["osiris"]}), "mcpServers is an array, not an object"),
])
def test_malformed_claude_files_are_refused_and_untouched(
        world: World, name: str, text: str, expected: str) -> None:
    project_mcp = world.project / ".mcp.json"
    settings = world.hooks_file("project")
    settings.parent.mkdir()
    good = dumps(PROJECT_MCP) if name != ".mcp.json" else dumps(CLAUDE_SETTINGS)
    (project_mcp if name == ".mcp.json" else settings).write_text(text, encoding="utf-8")
    (settings if name == ".mcp.json" else project_mcp).write_text(good, encoding="utf-8")
    result = world.run("install", "claude-code", "--project")
    assert result.returncode == 1
    assert expected in result.stderr and name in result.stderr
    assert "Nothing was changed" in result.stderr
    assert result.stdout == ""
    # Neither file changed: the good one is not written when the other cannot be.
    assert (project_mcp if name == ".mcp.json" else settings).read_text("utf-8") == text
    assert (settings if name == ".mcp.json" else project_mcp).read_text("utf-8") == good
    assert world.backups() == []


def test_malformed_toml_is_refused(world: World) -> None:
    config = world.server_file("codex", "user")
    config.parent.mkdir()
    config.write_text('model = "o3"\n[mcp_servers.x\ncommand = "y"\n', encoding="utf-8")
    result = world.run("install", "codex")
    assert result.returncode == 1
    assert str(config) in result.stderr and "line 2" in result.stderr
    assert config.read_text("utf-8") == 'model = "o3"\n[mcp_servers.x\ncommand = "y"\n'


def test_inline_mcp_servers_table_is_refused_not_rewritten(world: World) -> None:
    config = world.server_file("codex", "project")
    config.parent.mkdir()
    original = 'mcp_servers = { docs = { command = "npx" } }\n'
    config.write_text(original, encoding="utf-8")
    result = world.run("install", "codex", "--project")
    assert result.returncode == 1
    assert "by hand" in result.stderr and config.read_text("utf-8") == original


@pytest.mark.parametrize("client", ["cursor", "codex", "claude-code"])
def test_a_foreign_entry_under_the_name_needs_force(world: World, client: str) -> None:
    path = world.server_file(client, "project")
    path.parent.mkdir(exist_ok=True)
    foreign = {"command": "npx", "args": ["-y", "osiris-mcp"]}
    original = ('[mcp_servers.osiris]\ncommand = "npx"\nargs = ["-y", "osiris-mcp"]\n'
                if client == "codex" else dumps({"mcpServers": {"osiris": foreign}}))
    path.write_text(original, encoding="utf-8")

    refused = world.run("install", client, "--project")
    assert refused.returncode == 1
    assert "--force" in refused.stderr and "'npx'" in refused.stderr
    assert path.read_text("utf-8") == original
    assert not (world.project / ".claude").exists()  # no hooks without the server

    left = world.ok("uninstall", client, "--project")
    assert left["changed"] is False and "not written by osiris install" in left["notes"][0]
    assert path.read_text("utf-8") == original

    forced = world.ok("install", client, "--project", "--force")
    assert entry(world, client, "project")["args"] == ["-m", "osiris"]
    backup = Path(forced["files"][0]["backup"])
    assert backup.read_text("utf-8") == original
    world.ok("uninstall", client, "--project")
    assert "osiris" not in parse(path).get("mcpServers", parse(path).get("mcp_servers", {}))


def test_bad_options_are_clear_errors(world: World) -> None:
    cases = [
        (["install", "codex", "--hooks", "mcp_tool"], "--hooks mcp_tool applies to "
         "claude-code only"),
        (["install", "cursor", "--hooks", "none"], "--hooks applies to claude-code and "
         "codex only"),
        (["install", "cursor", "--name", "os iris"], "--name 'os iris' is invalid"),
        (["install", "cursor", "--python", "/no/such/python"], "is not a file"),
        (["install", "cursor", "--project", "--roots", "/no/such/dir"], "not an existing"),
        (["install", "cursor", "--user", "--project-dir", "."], "goes with --project"),
    ]
    for args, expected in cases:
        result = world.run(*args)
        assert result.returncode == 1, args
        assert expected in result.stderr, (args, result.stderr)
    usage = world.run("install", "windsurf")
    assert usage.returncode == 2 and "invalid choice" in usage.stderr
    assert not any(world.project.iterdir()) and not any(world.user.iterdir())


def test_roots_default_to_the_current_osiris_roots(world: World, tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    world.ok("install", "cursor", env={"OSIRIS_ROOTS": str(src)})
    assert entry(world, "cursor", "user")["env"] == {"OSIRIS_HOME": str(world.osiris_home),
                                                     "OSIRIS_ROOTS": str(src.resolve())}
    world.ok("install", "cursor", "--home", "~/osiris-data", env={"OSIRIS_ROOTS": str(src)})
    assert entry(world, "cursor", "user")["env"]["OSIRIS_HOME"] == str(
        world.user / "osiris-data")
