"""``osiris install`` / ``osiris uninstall``: OSIRIS's entries in a client's own files.

| client | scope | server entry | hooks |
|---|---|---|---|
| claude-code | user | ``~/.claude.json`` | ``~/.claude/settings.json`` |
| claude-code | project | ``.mcp.json`` | ``.claude/settings.json`` |
| codex | user | ``~/.codex/config.toml`` | ``~/.codex/hooks.json`` |
| codex | project | ``.codex/config.toml`` | ``.codex/hooks.json`` |
| cursor | user | ``~/.cursor/mcp.json`` | — |
| cursor | project | ``.cursor/mcp.json`` | — |

The entry is ``mcpServers.NAME`` in the JSON files, ``[mcp_servers.NAME]`` in Codex's
TOML. (``CLAUDE_CONFIG_DIR`` and ``CODEX_HOME`` move the user-scope files as the clients do.)

What is OSIRIS's, precisely: the server entry under NAME whose ``args`` are
``["-m", "osiris"]`` (anything else under NAME belongs to the user and is only
replaced with ``--force``); hook handlers whose command runs
``-m osiris hook claude-code`` (or ``codex``), or ``mcp_tool`` handlers calling an
``osiris_`` tool of server NAME. Install adds or updates only those, uninstall removes
only those plus the containers and files the install created (see
:mod:`osiris.clients.files` for the record), so an install followed by an uninstall
gives back the original bytes.

Everything is planned first (parsed, edited in memory, verified) and written only when
every file of the client could be planned: a malformed settings file or a foreign
entry stops the command before any byte changes.
"""

from __future__ import annotations

import contextlib
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from osiris.clients import codex_toml, codex_trust, files
from osiris.clients.hook_input import HOOK_FIELDS
from osiris.clients.install_files import SERVER_ARGS, FileEdit, Target, with_entry_homes
from osiris.clients.install_hooks import hooks_edit
from osiris.clients.install_server import server_edit
from osiris.clients.launcher import launch_words
from osiris.config import Settings
from osiris.errors import ConfigError, InvalidInputError

CLIENTS = ("claude-code", "codex", "cursor")
SCOPES = ("user", "project")
HOOK_MODES = ("command", "mcp_tool", "none")
DEFAULT_NAME = "osiris"
# Hook event -> argument of `osiris hook CLIENT`, and the matcher OSIRIS's group uses.
# PostToolUse fires only when a tool succeeded; failures (which LoopGuard most needs to
# see) come as PostToolUseFailure, handled by the same post-tool-use command. SessionStart
# runs only after a compaction (its matcher is the session's source).
HOOK_EVENTS = {"PreToolUse": "pre-tool-use", "PostToolUse": "post-tool-use",
               "PostToolUseFailure": "post-tool-use", "SessionStart": "session-start"}
CLIENT_HOOK_EVENTS = {"claude-code": tuple(HOOK_EVENTS),
                      "codex": ("PreToolUse", "PostToolUse", "SessionStart")}
HOOK_MATCHERS = {"SessionStart": "compact"}
HOOK_TIMEOUT_S = 10
TITLES = {"claude-code": "Claude Code", "codex": "Codex", "cursor": "Cursor"}
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def locate(client: str, scope: str, project_dir: Path, settings: Settings) -> Target:
    """Where ``client`` keeps its configuration for ``scope``."""
    _check_choice("client", client, CLIENTS)
    _check_choice("scope", scope, SCOPES)
    if scope == "project":
        server = {"claude-code": project_dir / ".mcp.json",
                  "codex": project_dir / ".codex" / "config.toml",
                  "cursor": project_dir / ".cursor" / "mcp.json"}[client]
        hooks = {"claude-code": project_dir / ".claude" / "settings.json",
                 "codex": project_dir / ".codex" / "hooks.json"}.get(client)
    else:
        home = settings.user_home
        if home is None:
            raise ConfigError("cannot tell your home directory (HOME is not set): set HOME, "
                              "or install into a project with --project")
        claude = settings.claude_config_dir
        server = {"claude-code": (claude or home) / ".claude.json",
                  "codex": (settings.codex_home or home / ".codex") / "config.toml",
                  "cursor": home / ".cursor" / "mcp.json"}[client]
        hooks = {"claude-code": (claude or home / ".claude") / "settings.json",
                 "codex": (settings.codex_home or home / ".codex") / "hooks.json"}.get(client)
    return Target(client, scope, server, hooks)


@dataclass(frozen=True)
class InstallRequest:
    """What ``osiris install`` should write."""

    client: str
    scope: str
    project_dir: Path
    python: str
    """The interpreter that runs ``-m osiris`` (absolute)."""
    osiris_home: Path
    roots: tuple[Path, ...] = ()
    name: str = DEFAULT_NAME
    hooks: str = "command"
    """``command`` hooks, ``mcp_tool`` for Claude Code's PreToolUse, or ``none``."""
    force: bool = False
    """Replace an entry under ``name`` that ``osiris install`` did not write."""

    def env(self) -> dict[str, str]:
        """The variables the server and the hooks need (hooks do not get the server's)."""
        env = {"OSIRIS_HOME": str(self.osiris_home)}
        if self.roots:
            env["OSIRIS_ROOTS"] = ";".join(str(root) for root in self.roots)
        if self.client in ("claude-code", "codex") and self.hooks != "none":
            # The hooks start, observe and precheck every call: the agent needs only
            # osiris_recall, and pays for every other tool name and note in every request
            # (Codex lists every tool of every server in each request, with its schema:
            # what OSIRIS adds there is in osiris/harness/data/client_heads.json).
            env["OSIRIS_SURFACE"] = "hooks"
        return env

    @property
    def mcp_tool_hooks(self) -> bool:
        """Claude Code's tool hooks as ``mcp_tool`` calls to the server's ``osiris_hook``."""
        return self.hooks == "mcp_tool" and self.client == "claude-code"

    def server_entry(self) -> dict[str, Any]:
        """The MCP server entry, in the client's dialect."""
        entry: dict[str, Any] = {"type": "stdio"} if self.client == "claude-code" else {}
        env = self.env()
        if self.mcp_tool_hooks:
            env["OSIRIS_HOOK_TOOL"] = "on"

        entry.update(command=self.python, args=list(SERVER_ARGS), env=env)
        return entry

    def hook_command(self, event_arg: str) -> str:
        """``OSIRIS_HOME=… '/path/python' -S -P …/launch.py hook CLIENT EVENT`` (or
        ``-m osiris hook …``: :mod:`osiris.clients.launcher`), shell-quoted."""
        words = [f"{key}={shlex.quote(value)}" for key, value in self.env().items()]
        words += [*launch_words(self.python), "hook", self.client, event_arg]
        return " ".join(words)

    def hook_groups(self) -> dict[str, dict[str, Any] | None]:
        """The matcher group OSIRIS wants under each hook event (None: no hook)."""
        groups: dict[str, dict[str, Any] | None] = {}
        for event in CLIENT_HOOK_EVENTS.get(self.client, ()):
            arg = HOOK_EVENTS[event]
            handler: dict[str, Any] | None
            if self.hooks == "none":
                handler = None
            elif self.mcp_tool_hooks and event != "SessionStart":
                # Claude Code calls the running server: no process per tool call. Each
                # field is interpolated from the hook input (hook_input.HOOK_FIELDS).
                handler = {"type": "mcp_tool", "server": self.name, "tool": "osiris_hook",
                           "input": {"event": arg, **{f: f"${{{f}}}" for f in HOOK_FIELDS}},
                           "timeout": HOOK_TIMEOUT_S}
            else:  # SessionStart has no MCP client yet: a command
                handler = {"type": "command", "command": self.hook_command(arg),
                           "timeout": HOOK_TIMEOUT_S}
            groups[event] = None if handler is None else {
                "matcher": HOOK_MATCHERS.get(event, "*"), "hooks": [handler]}
        return groups

    def check(self) -> None:
        """Refuse option values no client could use."""
        _check_choice("client", self.client, CLIENTS)
        _check_choice("scope", self.scope, SCOPES)
        _check_choice("hooks", self.hooks, HOOK_MODES)
        check_name(self.name)
        if not Path(self.python).is_absolute():
            raise InvalidInputError(f"--python {self.python!r} must be an absolute path")


def check_name(name: str) -> None:
    """Server names are what clients put in tool names: letters, digits, ``_`` and ``-``."""
    if not _NAME.fullmatch(name):
        raise InvalidInputError(f"--name {name!r} is invalid: use 1 to 64 letters, digits, "
                                "'_' or '-'")


@dataclass(frozen=True)
class Plan:
    """Everything one install or uninstall would change, computed before any write."""

    action: str  # "install" or "uninstall"
    target: Target
    name: str
    edits: tuple[FileEdit, ...]
    notes: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        """Whether any file changes."""
        return any(edit.changed for edit in self.edits)

    def diff(self) -> str:
        """Unified diffs of every file that changes."""
        return "".join(files.unified_diff(edit.path, edit.before, edit.after)
                       for edit in self.edits if edit.changed)

    def message(self) -> str:
        """One sentence for the person at the terminal."""
        title, where = TITLES[self.target.client], f"{self.target.scope} scope"
        if self.action == "install":
            if not self.changed:
                return f"OSIRIS is already installed for {title} ({where}); nothing changed"
            return (f"installed OSIRIS as MCP server {self.name!r} for {title} ({where}); "
                    f"restart {title} to load it. Undo with: osiris uninstall "
                    f"{self.target.client} --{self.target.scope}")
        if not self.changed:
            return f"OSIRIS ({self.name!r}) is not installed for {title} ({where}); " \
                   "nothing to remove"
        return f"removed OSIRIS ({self.name!r}) from {title} ({where}); restart {title}"


def plan_install(request: InstallRequest, settings: Settings) -> Plan:
    """Plan ``osiris install``: parse, edit in memory and verify every file of the client."""
    request.check()
    target = locate(request.client, request.scope, request.project_dir, settings)
    homes = [request.osiris_home, settings.home]
    edits = [server_edit(target, request.name, request.server_entry(), homes,
                          request.osiris_home, force=request.force)]
    if target.hooks_file is not None:
        edits.append(hooks_edit(target.hooks_file, request.name, request.hook_groups(),
                                 homes, request.osiris_home, client=request.client))
    return Plan("install", target, request.name, tuple(edits))


def plan_uninstall(client: str, scope: str, project_dir: Path, settings: Settings, *,
                   name: str = DEFAULT_NAME, home: Path | None = None) -> Plan:
    """Plan ``osiris uninstall``: remove OSIRIS's entries and what its install created."""
    check_name(name)
    target = locate(client, scope, project_dir, settings)
    homes = [*([home] if home else []), settings.home]
    notes: list[str] = []
    edits = [server_edit(target, name, None, homes, None, notes=notes)]
    if target.hooks_file is not None:
        edits.append(hooks_edit(target.hooks_file, name,
                                 dict.fromkeys(CLIENT_HOOK_EVENTS[client]), homes, None,
                                 client=client))
    if client == "codex":  # the trust record lives in the home the entry names
        entries = [codex_toml.parse(files.read_text(path), path).get(codex_toml.TABLE, {})
                   for path in {target.server_file, codex_trust.user_config(settings)}]
        homes = with_entry_homes(homes, [e.get(name) for e in entries if isinstance(e, dict)])
        edits = _without_trust(edits, codex_trust.user_config(settings), homes, name, notes)
    return Plan("uninstall", target, name, tuple(edits), tuple(notes))


def _without_trust(edits: list[FileEdit], config: Path, homes: list[Path], name: str,
                   notes: list[str]) -> list[FileEdit]:
    """The uninstall's edits, with the Codex hook trust the install recorded taken back
    (in the server's edit when the trust lives in the same ``config.toml``)."""
    for index, edit in enumerate(edits):
        if files.real_path(edit.path) == files.real_path(config):
            after, ops = codex_trust.untrust(edit.after, config, homes, name, notes)
            if not ops:
                return edits
            edits[index] = replace(edit, after=after, record_ops=(*edit.record_ops, *ops),
                                   backup=after is not None)
            return edits
    before = files.read_text(config)
    after, ops = codex_trust.untrust(before, config, homes, name, notes)
    return [*edits, FileEdit(config, "hook-trust", before, after, ops)] if ops else edits


def settle_codex_trust(request: InstallRequest, settings: Settings, *, codex: str | None,
                       consent: Callable[[list[codex_trust.HookTrust]], bool]
                       ) -> tuple[dict[str, Any], list[str]]:
    """After an install wrote Codex's hooks: ask Codex whether it will run them, and
    record its trust when ``consent`` says yes. The JSON part and the notes."""
    target = locate(request.client, request.scope, request.project_dir, settings)
    assert target.hooks_file is not None
    project = request.scope == "project"
    expected = len(CLIENT_HOOK_EVENTS["codex"])
    if codex is None:
        return {"status": "unknown", "hooks": []}, [
            "codex was not found on PATH, so OSIRIS could not ask it about its hooks. "
            + codex_trust.untrusted_note(expected, project=project)
            + " once codex is installed (or pass --codex PATH)"]
    try:
        hooks = codex_trust.list_hooks(codex, target.hooks_file, request.project_dir)
    except codex_trust.CodexUnavailable as exc:
        return {"status": "unknown", "hooks": []}, [
            f"could not ask Codex about OSIRIS's hooks: {exc}. "
            + codex_trust.untrusted_note(expected, project=project)]
    if len(hooks) < expected:
        why = ("Codex does not load a project's .codex/ until you trust the project (Codex "
               "asks the first time you open it there); then run: "
               f"{codex_trust.TRUST_COMMAND} --project" if project else
               "are hooks switched off ([features] hooks = false) in its configuration?")
        return {"status": "not-loaded", "hooks": [h.as_dict() for h in hooks]}, [
            f"Codex lists {len(hooks)} of OSIRIS's {expected} hooks, so it will not run "
            f"them: {why}"]
    pending = [hook for hook in hooks if hook.status not in ("trusted", "managed")]
    if pending and consent(pending):
        config = codex_trust.user_config(settings)
        homes = [request.osiris_home, settings.home]
        edit = codex_trust.trust_edit(config, pending, homes, request.osiris_home,
                                      request.name)
        write_edit(edit, "user", request.name)
        hooks = codex_trust.list_hooks(codex, target.hooks_file, request.project_dir)
    status = codex_trust.overall(hooks, expected)
    doc = {"status": status, "config": str(codex_trust.user_config(settings)),
           "hooks": [hook.as_dict() for hook in hooks]}
    if status == "trusted":
        return doc, []
    if not pending:  # listed and trusted before, yet not now: say what Codex says
        return doc, [f"Codex reports OSIRIS's hooks as {status}"]
    changed = " (changed since you last trusted them)" if status == "changed" else ""
    return doc, [codex_trust.untrusted_note(len(pending), project=project) + changed]


def apply_plan(plan: Plan) -> dict[str, Any]:
    """Write the plan (backups first), update the install records; the JSON summary."""
    done: list[dict[str, Any]] = []
    for edit in plan.edits:
        if edit.changed and files.read_text(edit.path) != edit.before:
            raise ConfigError(f"{edit.path} changed while OSIRIS was planning its edit "
                              "(is the client running and writing it?); run the command "
                              "again. Nothing was changed.")
    records: dict[Path, bool] = {}
    for edit in plan.edits:
        for op in edit.record_ops if edit.changed else ():
            records.setdefault(files.records_path(op.home), files.records_path(op.home).exists())
        backup = write_edit(edit, plan.target.scope, plan.name)
        done.append({"path": str(edit.path), "role": edit.role, "status": edit.status,
                     "backup": str(backup) if backup else None})
    for path, existed in records.items():  # OSIRIS's own file is written too: say so
        status = ("updated" if existed else "created") if path.exists() else \
            ("removed" if existed else None)
        if status:
            done.append({"path": str(path), "role": "install record", "status": status,
                         "backup": None})
    return {"action": plan.action, "client": plan.target.client, "scope": plan.target.scope,
            "name": plan.name, "changed": plan.changed, "files": done,
            "notes": list(plan.notes), "message": plan.message()}


def write_edit(edit: FileEdit, scope: str, name: str) -> Path | None:
    """Write one planned file (its backup first) and its records (under ``name`` and
    each record's suffix); the backup's path."""
    if not edit.changed:
        return None
    backup = None
    real = files.real_path(edit.path)
    if edit.before is not None and edit.backup:
        backup = files.backup(real, edit.after)
    if edit.after is None:
        real.unlink()
        for directory in reversed(edit.remove_dirs):
            with contextlib.suppress(OSError):  # not empty: the user's now
                directory.rmdir()
    else:
        for directory in edit.make_dirs:
            directory.mkdir(mode=0o700 if scope == "user" else 0o777, exist_ok=True)
        files.write_atomic(real, edit.after, new_file_mode=0o600
                           if scope == "user" else 0o644)
    for op in edit.record_ops:
        files.save_record(op.home, edit.path, (name or "") + op.suffix, op.record)
    return backup


def _check_choice(what: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise InvalidInputError(f"{what} {value!r} is not one of {', '.join(choices)}")


__all__ = ["CLIENTS", "HOOK_MODES", "SCOPES", "FileEdit", "InstallRequest", "Plan",
           "Target", "apply_plan", "locate", "plan_install", "plan_uninstall"]
