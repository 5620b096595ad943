"""OSIRIS's server entry in a client's file: ``mcpServers.NAME`` in JSON, ``[mcp_servers.NAME]``
in Codex's TOML (:mod:`osiris.clients.install`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from osiris.clients import codex_toml, files
from osiris.clients.install_files import (
    OWN_ENV,
    SERVER_ARGS,
    FileEdit,
    Key,
    Target,
    finish_install,
    finish_removal,
    not_a,
    open_json,
    removal_edit,
    with_entry_homes,
)
from osiris.clients.jsonedit import JsonDocument, dumps_new
from osiris.errors import InvalidInputError


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


def server_edit(target: Target, name: str, wanted: dict[str, Any] | None,
                 homes: list[Path], record_home: Path | None, *, force: bool = False,
                 notes: list[str] | None = None) -> FileEdit:
    if target.client == "codex":
        return _codex_edit(target, name, wanted, homes, record_home, force=force, notes=notes)
    path = target.server_file
    before, doc = open_json(path)
    data = doc.data if doc else {}
    servers = data.get("mcpServers")
    if servers is not None and not isinstance(servers, dict):
        raise not_a(path, "mcpServers", "object", servers)
    existing = servers.get(name) if servers else None
    homes = with_entry_homes(homes, [existing])
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
        return finish_removal(path, "server", before, doc, homes, name,
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
    return finish_install(path, "server", target.client, before, after, homes, name,
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
        raise not_a(path, codex_toml.TABLE, "table", servers)
    existing = servers.get(name) if servers else None
    homes = with_entry_homes(homes, [existing])
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
        return removal_edit(path, "server", before, after, found, record)
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
    return finish_install(path, "server", target.client, before, after, homes, name,
                           record_home, [], toml_separator=separator)
