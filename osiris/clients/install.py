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
import json
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from osiris.clients import codex_toml, files
from osiris.clients.files import InstallRecord
from osiris.clients.jsonedit import JsonDocument, dumps_new
from osiris.clients.launcher import OWN_COMMAND, launch_words
from osiris.config import Settings
from osiris.core.client_hooks import HOOK_FIELDS
from osiris.errors import ConfigError, InvalidInputError

CLIENTS = ("claude-code", "codex", "cursor")
SCOPES = ("user", "project")
HOOK_MODES = ("command", "mcp_tool", "none")
DEFAULT_NAME = "osiris"
SERVER_ARGS = ["-m", "osiris"]
OWN_ENV = ("OSIRIS_HOME", "OSIRIS_ROOTS", "OSIRIS_HOOK_TOOL")
# Hook event -> argument of `osiris hook CLIENT`, and the matcher OSIRIS's group uses.
# PostToolUse fires only when a tool succeeded; failures (which LoopGuard most needs to
# see) come as PostToolUseFailure, handled by the same post-tool-use command. SessionStart
# runs only after a compaction (its matcher is the session's source).
HOOK_EVENTS = {"PreToolUse": "pre-tool-use", "PostToolUse": "post-tool-use",
               "PostToolUseFailure": "post-tool-use", "SessionStart": "session-start"}
CLIENT_HOOK_EVENTS = {"claude-code": tuple(HOOK_EVENTS),
                      "codex": ("PreToolUse", "PostToolUse", "SessionStart")}
HOOK_MATCHERS = {"SessionStart": "compact"}
HOOK_CLIENTS = ("claude-code ", "codex ")
"""After ``… hook `` (:data:`~osiris.clients.launcher.OWN_COMMAND`): OSIRIS's hook
commands."""
HOOK_TIMEOUT_S = 10
TITLES = {"claude-code": "Claude Code", "codex": "Codex", "cursor": "Cursor"}
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
Key = tuple[str | int, ...]


@dataclass(frozen=True)
class Target:
    """The files one client reads for one scope."""

    client: str
    scope: str
    server_file: Path
    hooks_file: Path | None = None


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
                # field is interpolated from the hook input (client_hooks.HOOK_FIELDS).
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
class FileEdit:
    """One configuration file: its text before and after, and the bookkeeping."""

    path: Path
    role: str  # "server" or "hooks"
    before: str | None
    after: str | None  # None: the file goes away (or never existed)
    record_ops: tuple[tuple[Path, InstallRecord | None], ...] = ()
    """Install records to store (or forget, None) in these OSIRIS homes after writing."""
    make_dirs: tuple[Path, ...] = ()
    remove_dirs: tuple[Path, ...] = ()
    """Directories the install created, removed with the file if they end up empty."""
    backup: bool = True

    @property
    def changed(self) -> bool:
        """Whether the file's text changes."""
        return self.before != self.after

    @property
    def status(self) -> str:
        """created, updated, removed or unchanged."""
        if not self.changed:
            return "unchanged"
        if self.before is None:
            return "created"
        return "removed" if self.after is None else "updated"


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
    edits = [_server_edit(target, request.name, request.server_entry(), homes,
                          request.osiris_home, force=request.force)]
    if target.hooks_file is not None:
        edits.append(_hooks_edit(target.hooks_file, request.name, request.hook_groups(),
                                 homes, request.osiris_home, client=request.client))
    return Plan("install", target, request.name, tuple(edits))


def plan_uninstall(client: str, scope: str, project_dir: Path, settings: Settings, *,
                   name: str = DEFAULT_NAME, home: Path | None = None) -> Plan:
    """Plan ``osiris uninstall``: remove OSIRIS's entries and what its install created."""
    check_name(name)
    target = locate(client, scope, project_dir, settings)
    homes = [*([home] if home else []), settings.home]
    notes: list[str] = []
    edits = [_server_edit(target, name, None, homes, None, notes=notes)]
    if target.hooks_file is not None:
        edits.append(_hooks_edit(target.hooks_file, name,
                                 dict.fromkeys(CLIENT_HOOK_EVENTS[client]), homes, None,
                                 client=client))
    return Plan("uninstall", target, name, tuple(edits), tuple(notes))


def apply_plan(plan: Plan) -> dict[str, Any]:
    """Write the plan (backups first), update the install records; the JSON summary."""
    done: list[dict[str, Any]] = []
    for edit in plan.edits:
        if edit.changed and files.read_text(edit.path) != edit.before:
            raise ConfigError(f"{edit.path} changed while OSIRIS was planning its edit "
                              "(is the client running and writing it?); run the command "
                              "again. Nothing was changed.")
    for edit in plan.edits:
        backup = None
        if edit.changed:
            real = files.real_path(edit.path)
            if edit.before is not None and edit.backup:
                backup = files.backup(real)
            if edit.after is None:
                real.unlink()
                for directory in reversed(edit.remove_dirs):
                    with contextlib.suppress(OSError):  # not empty: the user's now
                        directory.rmdir()
            else:
                for directory in edit.make_dirs:
                    directory.mkdir(mode=0o700 if plan.target.scope == "user" else 0o777,
                                    exist_ok=True)
                files.write_atomic(real, edit.after, new_file_mode=0o600
                                   if plan.target.scope == "user" else 0o644)
            for home, record in edit.record_ops:
                files.save_record(home, edit.path, plan.name, record)
        done.append({"path": str(edit.path), "role": edit.role, "status": edit.status,
                     "backup": str(backup) if backup else None})
    return {"action": plan.action, "client": plan.target.client, "scope": plan.target.scope,
            "name": plan.name, "changed": plan.changed, "files": done,
            "notes": list(plan.notes), "message": plan.message()}


# -- the server entry ---------------------------------------------------------------


def is_own_server(entry: Any) -> bool:
    """Whether an MCP server entry is one ``osiris install`` wrote."""
    return isinstance(entry, dict) and entry.get("args") == SERVER_ARGS


def _same_server(entry: dict[str, Any], wanted: dict[str, Any]) -> bool:
    env = entry.get("env")
    own_env = {k: v for k, v in env.items() if k in OWN_ENV} if isinstance(env, dict) else None
    return own_env == wanted["env"] and all(
        entry.get(key) == value for key, value in wanted.items() if key != "env")


def _foreign(path: Path, name: str, entry: Any) -> InvalidInputError:
    shown = entry.get("command", entry.get("url")) if isinstance(entry, dict) else entry
    return InvalidInputError(
        f"{path} already has an MCP server named {name!r} that osiris install did not write "
        f"({shown!r}); pass --force to replace it (the backup keeps the old entry) "
        "or --name to install under another name. Nothing was changed.")


def _server_edit(target: Target, name: str, wanted: dict[str, Any] | None,
                 homes: list[Path], record_home: Path | None, *, force: bool = False,
                 notes: list[str] | None = None) -> FileEdit:
    if target.client == "codex":
        return _codex_edit(target, name, wanted, homes, record_home, force=force, notes=notes)
    path = target.server_file
    before, doc = _open_json(path)
    data = doc.data if doc else {}
    servers = data.get("mcpServers")
    if servers is not None and not isinstance(servers, dict):
        raise _not_a(path, "mcpServers", "object", servers)
    existing = servers.get(name) if servers else None
    homes = _with_entry_homes(homes, [existing])
    created: list[Key] = []
    if wanted is None:  # uninstall
        if existing is None:
            return FileEdit(path, "server", before, before)
        if not is_own_server(existing):
            if notes is not None:
                notes.append(f"{path}: the MCP server {name!r} was not written by osiris "
                             "install; left untouched")
            return FileEdit(path, "server", before, before)
        assert doc is not None  # existing came from it
        doc.delete(("mcpServers", name))
        return _finish_removal(path, "server", before, doc, homes, name,
                               emptied=[("mcpServers",)])
    if doc is None:
        after = dumps_new({"mcpServers": {name: wanted}})
        created = [("mcpServers",)]
    else:
        if servers is None:
            doc.set(("mcpServers",), {name: wanted})
            created = [("mcpServers",)]
        elif existing is None:
            doc.set(("mcpServers", name), wanted)
        elif is_own_server(existing):
            if not _same_server(existing, wanted):
                _update_server(doc, ("mcpServers", name), existing, wanted)
        elif force:
            doc.set(("mcpServers", name), wanted)
        else:
            raise _foreign(path, name, existing)
        doc.verify()
        after = doc.render()
    return _finish_install(path, "server", target.client, before, after, homes, name,
                           record_home, created)


def _update_server(doc: JsonDocument, key: Key, entry: dict[str, Any],
                   wanted: dict[str, Any]) -> None:
    """Set OSIRIS's values in its own entry, keeping anything the user added to it."""
    for item, value in wanted.items():
        if item != "env" and entry.get(item) != value:
            doc.set((*key, item), value)
    env = entry.get("env")
    if not isinstance(env, dict):
        doc.set((*key, "env"), wanted["env"])
        return
    for variable in OWN_ENV:
        if variable in wanted["env"]:
            if env.get(variable) != wanted["env"][variable]:
                doc.set((*key, "env", variable), wanted["env"][variable])
        elif variable in env:
            doc.delete((*key, "env", variable))


def _codex_edit(target: Target, name: str, wanted: dict[str, Any] | None,
                homes: list[Path], record_home: Path | None, *, force: bool,
                notes: list[str] | None) -> FileEdit:
    path = target.server_file
    before = files.read_text(path)
    data = codex_toml.parse(before, path)
    servers = data.get(codex_toml.TABLE)
    if servers is not None and not isinstance(servers, dict):
        raise _not_a(path, codex_toml.TABLE, "table", servers)
    existing = servers.get(name) if servers else None
    homes = _with_entry_homes(homes, [existing])
    if wanted is None:  # uninstall
        if existing is None or not is_own_server(existing):
            if existing is not None and notes is not None:
                notes.append(f"{path}: [mcp_servers.{name}] was not written by osiris "
                             "install; left untouched")
            return FileEdit(path, "server", before, before)
        assert before is not None
        found = files.find_record(homes, path, name)
        record = found[1] if found else None
        after: str | None = codex_toml.remove_table(before, path, name,
                                                    record.toml_separator if record else None)
        codex_toml.verify(after or "", codex_toml.with_entry(data, name, None), path, name)
        if record and record.created_file and not (after or "").strip():
            after = None
        return _removal_edit(path, "server", before, after, found, record)
    separator = None
    result = wanted
    if existing is None:
        after, separator = codex_toml.append_table(before, name, wanted)
    elif is_own_server(existing):
        after = before if _same_server(existing, wanted) else codex_toml.update_values(
            before or "", name, wanted, OWN_ENV)
        result = codex_toml.merged_entry(existing, wanted, OWN_ENV)
    elif force:
        after = codex_toml.replace_table(before or "", path, name, wanted)
        separator = ""  # the blank line before it was the user's: uninstall keeps it
    else:
        raise _foreign(path, name, existing)
    if after != before:
        codex_toml.verify(after or "", codex_toml.with_entry(data, name, result), path, name)
    return _finish_install(path, "server", target.client, before, after, homes, name,
                           record_home, [], toml_separator=separator)


# -- client hooks (Claude Code, Codex) -----------------------------------------------


def is_own_handler(handler: Any, name: str) -> bool:
    """Whether a hook handler is one ``osiris install`` wrote."""
    if not isinstance(handler, dict):
        return False
    if handler.get("type") == "command":
        command = str(handler.get("command", ""))
        return any(m.group(1) == "hook" and command[m.end():].startswith(HOOK_CLIENTS)
                   for m in OWN_COMMAND.finditer(command))
    return handler.get("type") == "mcp_tool" and handler.get("server") == name \
        and str(handler.get("tool", "")).startswith("osiris_")


def _hooks_edit(path: Path, name: str, wanted: dict[str, dict[str, Any] | None],
                homes: list[Path], record_home: Path | None, *,
                client: str = "claude-code") -> FileEdit:
    before, doc = _open_json(path)
    data = doc.data if doc else {}
    hooks = data.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise _not_a(path, "hooks", "object", hooks)
    for event in wanted:
        groups = hooks.get(event) if hooks else None
        if groups is not None and not isinstance(groups, list):
            raise _not_a(path, f"hooks.{event}", "array", groups)
    homes = _with_entry_homes(homes, [], _hook_homes(hooks or {}, name))
    adding = {event: [group] for event, group in wanted.items() if group is not None}
    if doc is None:
        if not adding:
            return FileEdit(path, "hooks", before, before)
        return _finish_install(path, "hooks", client, before, dumps_new({"hooks": adding}),
                               homes, name, record_home,
                               [("hooks",), *(("hooks", event) for event in adding)])
    created: list[Key] = []
    touched: list[Key] = []  # event lists OSIRIS's handlers were removed from
    if hooks is None:
        if adding:
            doc.set(("hooks",), adding)
            created = [("hooks",), *(("hooks", event) for event in adding)]
    else:
        for event, group in wanted.items():
            if event not in hooks:
                if group is not None:
                    doc.set(("hooks", event), [group])
                    created.append(("hooks", event))
            elif _reconcile(doc, ("hooks", event), group, name) and group is None:
                touched.append(("hooks", event))
    doc.verify()
    if adding:
        return _finish_install(path, "hooks", client, before, doc.render(), homes,
                               name, record_home, created)
    if not touched:
        return FileEdit(path, "hooks", before, before)
    return _finish_removal(path, "hooks", before, doc, homes, name,
                           emptied=[*touched, ("hooks",)])


def _reconcile(doc: JsonDocument, key: Key, wanted: dict[str, Any] | None, name: str) -> bool:
    """Make OSIRIS's handlers in the event's list exactly ``wanted``; True if it changed."""
    groups: list[Any] = doc.get(key)
    own_groups, stray = [], []
    for index, group in enumerate(groups):
        handlers = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(handlers, list):
            continue
        mine = [i for i, handler in enumerate(handlers) if is_own_handler(handler, name)]
        if mine and len(mine) == len(handlers):
            own_groups.append(index)
        else:
            stray += [(index, i) for i in mine]  # ours, inside a group of the user's
    if wanted is not None and len(own_groups) == 1 and not stray \
            and groups[own_groups[0]] == wanted:
        return False
    if not own_groups and not stray and wanted is None:
        return False
    for index, i in reversed(stray):
        doc.delete((*key, index, "hooks", i))
    drop = own_groups
    if wanted is not None:
        if own_groups:
            doc.set((*key, own_groups[0]), wanted)
            drop = own_groups[1:]
        else:
            doc.append(key, wanted)
    for index in reversed(drop):
        doc.delete((*key, index))
    return True


def _hook_homes(hooks: dict[str, Any], name: str) -> list[str]:
    """OSIRIS_HOME values named by OSIRIS's hook commands (where its records are)."""
    out = []
    for groups in hooks.values():
        for group in groups if isinstance(groups, list) else ():
            for handler in group.get("hooks", ()) if isinstance(group, dict) else ():
                if is_own_handler(handler, name) and handler.get("type") == "command":
                    with contextlib.suppress(ValueError):
                        out += [word.partition("=")[2] for word
                                in shlex.split(str(handler["command"]))
                                if word.startswith("OSIRIS_HOME=")]
    return out


# -- shared ---------------------------------------------------------------------------


def _open_json(path: Path) -> tuple[str | None, JsonDocument | None]:
    """The file's text and document; (None, None) when absent, (text, None) when blank."""
    text = files.read_text(path)
    if text is None or not text.strip():
        return text, None
    try:
        doc = JsonDocument(text, str(path))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                          f"{exc.msg}); fix the file or move it aside, then run the command "
                          "again. Nothing was changed.") from None
    if not isinstance(doc.data, dict):
        raise _not_a(path, "the top level", "object", doc.data)
    return text, doc


def _not_a(path: Path, what: str, kind: str, value: Any) -> ConfigError:
    found = {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
             type(None): "null"}.get(type(value), "a number")
    return ConfigError(f"{path}: {what} is {found}, not {'an' if kind[0] in 'aeiou' else 'a'} "
                       f"{kind} as the client expects; fix the file by hand, then run the "
                       "command again. Nothing was changed.")


def _with_entry_homes(homes: list[Path], entries: Iterable[Any],
                      more: Iterable[str] = ()) -> list[Path]:
    """``homes`` plus the OSIRIS homes the installed entries name (records live there)."""
    named = list(more)
    for entry in entries:
        env = entry.get("env") if isinstance(entry, dict) else None
        if isinstance(env, dict) and isinstance(env.get("OSIRIS_HOME"), str):
            named.append(env["OSIRIS_HOME"])
    return [*homes[:1], *(Path(home) for home in named if home), *homes[1:]]


def _finish_install(path: Path, role: str, client: str, before: str | None,
                    after: str | None, homes: list[Path], name: str,
                    record_home: Path | None, created: list[Key], *,
                    toml_separator: str | None = None) -> FileEdit:
    if after == before or record_home is None:
        return FileEdit(path, role, before, after)
    make_dirs = tuple(files.missing_dirs(files.real_path(path))) if before is None else ()
    fresh = InstallRecord(client=client, created_file=before is None,
                          created_dirs=tuple(str(d) for d in make_dirs),
                          created_keys=tuple(tuple(str(k) for k in key) for key in created),
                          toml_separator=toml_separator)
    found = files.find_record(homes, path, name)
    ops: list[tuple[Path, InstallRecord | None]] = []
    if found and found[0] != record_home:
        ops.append((found[0], None))  # the record moves with --home
    ops.append((record_home, found[1].merged(fresh) if found else fresh))
    return FileEdit(path, role, before, after, tuple(ops), make_dirs=make_dirs)


def _finish_removal(path: Path, role: str, before: str | None, doc: JsonDocument,
                    homes: list[Path], name: str, *, emptied: list[Key]) -> FileEdit:
    """Drop the containers the install created once they are empty (the innermost first).

    Without a record (installed elsewhere, or by hand) the containers this removal
    emptied go too: an empty ``hooks.PreToolUse`` means nothing to the client.
    """
    found = files.find_record(homes, path, name)
    record = found[1] if found else None
    created = set(record.created_keys) if record else {tuple(map(str, k)) for k in emptied}
    for key in sorted(emptied, key=len, reverse=True):
        with contextlib.suppress(KeyError, IndexError):
            if doc.get(key) in ({}, []) and tuple(map(str, key)) in created:
                doc.delete(key)
    doc.verify()
    after: str | None = doc.render()
    if record and record.created_file and doc.data == {}:
        after = None
    return _removal_edit(path, role, before, after, found, record)


def _removal_edit(path: Path, role: str, before: str | None, after: str | None,
                  found: tuple[Path, InstallRecord] | None,
                  record: InstallRecord | None) -> FileEdit:
    ops = ((found[0], None),) if found else ()
    dirs = tuple(Path(d) for d in record.created_dirs) if record and after is None else ()
    # A file the install created and that holds nothing else goes without a backup:
    # the backup would be the only crumb left behind.
    return FileEdit(path, role, before, after, ops, remove_dirs=dirs, backup=after is not None)


def _check_choice(what: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise InvalidInputError(f"{what} {value!r} is not one of {', '.join(choices)}")



__all__ = ["CLIENTS", "HOOK_MODES", "SCOPES", "FileEdit", "InstallRequest", "Plan",
           "Target", "apply_plan", "locate", "plan_install", "plan_uninstall"]
