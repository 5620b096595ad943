"""What an install edits, shared by the server entry and the hooks: the files, their
backups and OSIRIS homes' install records (:mod:`osiris.clients.install`)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from osiris.clients import files
from osiris.clients.files import InstallRecord
from osiris.clients.jsonedit import JsonDocument
from osiris.errors import ConfigError

SERVER_ARGS = ["-m", "osiris"]


OWN_ENV = ("OSIRIS_HOME", "OSIRIS_ROOTS", "OSIRIS_HOOK_TOOL", "OSIRIS_SURFACE")


HOOK_CLIENTS = ("claude-code ", "codex ")
"""After ``… hook `` (:data:`~osiris.clients.launcher.OWN_COMMAND`): OSIRIS's hook
commands."""


Key = tuple[str | int, ...]


@dataclass(frozen=True)
class Target:
    """The files one client reads for one scope."""

    client: str
    scope: str
    server_file: Path
    hooks_file: Path | None = None


class RecordOp(NamedTuple):
    """An install record to store (or forget, None) in an OSIRIS home after the write."""

    home: Path
    record: InstallRecord | None
    suffix: str = ""
    """Appended to the server's name: the record's own name (``@hook-trust``)."""


@dataclass(frozen=True)
class FileEdit:
    """One configuration file: its text before and after, and the bookkeeping."""

    path: Path
    role: str  # "server" or "hooks"
    before: str | None
    after: str | None  # None: the file goes away (or never existed)
    record_ops: tuple[RecordOp, ...] = ()
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


def open_json(path: Path) -> tuple[str | None, JsonDocument | None]:
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
        raise not_a(path, "the top level", "object", doc.data)
    return text, doc


def not_a(path: Path, what: str, kind: str, value: Any) -> ConfigError:
    found = {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
             type(None): "null"}.get(type(value), "a number")
    return ConfigError(f"{path}: {what} is {found}, not {'an' if kind[0] in 'aeiou' else 'a'} "
                       f"{kind} as the client expects; fix the file by hand, then run the "
                       "command again. Nothing was changed.")


def with_entry_homes(homes: list[Path], entries: Iterable[Any],
                      more: Iterable[str] = ()) -> list[Path]:
    """``homes`` plus the OSIRIS homes the installed entries name (records live there)."""
    named = list(more)
    for entry in entries:
        env = entry.get("env") if isinstance(entry, dict) else None
        if isinstance(env, dict) and isinstance(env.get("OSIRIS_HOME"), str):
            named.append(env["OSIRIS_HOME"])
    return [*homes[:1], *(Path(home) for home in named if home), *homes[1:]]


def finish_install(path: Path, role: str, client: str, before: str | None,
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
    ops: list[RecordOp] = []
    if found and found[0] != record_home:
        ops.append(RecordOp(found[0], None))  # the record moves with --home
    ops.append(RecordOp(record_home, found[1].merged(fresh) if found else fresh))
    return FileEdit(path, role, before, after, tuple(ops), make_dirs=make_dirs)


def finish_removal(path: Path, role: str, before: str | None, doc: JsonDocument,
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
    return removal_edit(path, role, before, after, found, record)


def removal_edit(path: Path, role: str, before: str | None, after: str | None,
                  found: tuple[Path, InstallRecord] | None,
                  record: InstallRecord | None) -> FileEdit:
    ops = (RecordOp(found[0], None),) if found else ()
    dirs = tuple(Path(d) for d in record.created_dirs) if record and after is None else ()
    # A file the install created and that holds nothing else goes without a backup:
    # the backup would be the only crumb left behind.
    return FileEdit(path, role, before, after, ops, remove_dirs=dirs, backup=after is not None)
