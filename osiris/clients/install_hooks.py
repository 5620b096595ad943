"""OSIRIS's hook handlers in Claude Code's and Codex's settings, reconciled with what is
there (:mod:`osiris.clients.install`)."""

from __future__ import annotations

import contextlib
import shlex
from pathlib import Path
from typing import Any

from osiris.clients.install_files import (
    HOOK_CLIENTS,
    FileEdit,
    Key,
    finish_install,
    finish_removal,
    not_a,
    open_json,
    with_entry_homes,
)
from osiris.clients.jsonedit import JsonDocument, dumps_new
from osiris.clients.launcher import OWN_COMMAND


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


def hooks_edit(path: Path, name: str, wanted: dict[str, dict[str, Any] | None],
                homes: list[Path], record_home: Path | None, *,
                client: str = "claude-code") -> FileEdit:
    before, doc = open_json(path)
    data = doc.data if doc else {}
    hooks = data.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise not_a(path, "hooks", "object", hooks)
    for event in wanted:
        groups = hooks.get(event) if hooks else None
        if groups is not None and not isinstance(groups, list):
            raise not_a(path, f"hooks.{event}", "array", groups)
    homes = with_entry_homes(homes, [], _hook_homes(hooks or {}, name))
    adding = {event: [group] for event, group in wanted.items() if group is not None}
    if doc is None:
        if not adding:
            return FileEdit(path, "hooks", before, before)
        return finish_install(path, "hooks", client, before, dumps_new({"hooks": adding}),
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
        return finish_install(path, "hooks", client, before, doc.render(), homes,
                               name, record_home, created)
    if not touched:
        return FileEdit(path, "hooks", before, before)
    return finish_removal(path, "hooks", before, doc, homes, name,
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
