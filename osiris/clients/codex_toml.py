"""OSIRIS's ``[mcp_servers.NAME]`` table in the Codex CLI's ``config.toml``, edited as text.

A Codex configuration carries comments, profiles and hand-kept layout. tomlkit keeps
those when values change, but when it *adds* a table it may place it inside another
table's trailing comments and drop the blank line before the next header. So a new
table is appended at the end of the file as one block (after a blank line), uninstall
cuts exactly that block (and the blank line) out again, and only the update of an
existing table's values goes through tomlkit. Each result is parsed with ``tomllib``
and compared with the intended data before anything is written.
"""

from __future__ import annotations

import copy
import re
import tomllib
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.items import InlineTable, Table

from osiris.errors import ConfigError

TABLE = "mcp_servers"
_HEADER = re.compile(r"^[ \t]*\[")
_ARRAY_HEADER = re.compile(r"^[ \t]*\[\[")
_CONTENT = re.compile(r"^[ \t]*[^ \t\r\n#]")


def parse(text: str | None, path: Path) -> dict[str, Any]:
    """The parsed file ({} when absent); a clear error naming the place when invalid."""
    if text is None:
        return {}
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc}); fix the file or move it "
                          "aside, then run the command again. Nothing was changed.") from None


def render_table(name: str, entry: dict[str, Any], newline: str = "\n",
                 table: str = TABLE) -> str:
    """``[mcp_servers.NAME]`` (or ``[TABLE."NAME"]``) with its values, tables inline."""
    lines = [f"[{table}.{_key(name)}]"]
    for key, value in entry.items():
        if isinstance(value, dict):
            lines.append(f"{key} = {_inline(value)}")
        else:
            lines.append(f"{key} = {tomlkit.item(value).as_string()}")
    return newline.join(lines) + newline


def append_table(text: str | None, name: str, entry: dict[str, Any], table: str = TABLE
                 ) -> tuple[str, str]:
    """The text with the table appended, and the separator put before it."""
    text = text or ""
    newline = _newline(text)
    if not text:
        separator = ""
    elif text.endswith("\n"):
        separator = newline  # one blank line between the last table and ours
    else:
        separator = newline * 2
    return text + separator + render_table(name, entry, newline, table), separator


def replace_table(text: str, path: Path, name: str, entry: dict[str, Any]) -> str:
    """The text with the table's block replaced by a freshly rendered one."""
    span = _table_span(text, name)
    if span is None:
        raise _not_a_block(path, name)
    start, end = span
    return text[:start] + render_table(name, entry, _newline(text)) + text[end:]


def update_values(text: str, name: str, entry: dict[str, Any], own_env: tuple[str, ...]
                  ) -> str:
    """Set the entry's values in the existing table, keeping everything else in it."""
    doc = tomlkit.parse(text)
    table: Any = doc[TABLE][name]
    for key, value in entry.items():
        if key == "env":
            continue
        if table.get(key) != value:
            table[key] = value
    wanted: dict[str, str] = entry.get("env", {})
    env = table.get("env")
    if isinstance(env, Table):  # an [mcp_servers.NAME.env] table: edit its keys
        for key in own_env:
            if key in wanted and env.get(key) != wanted[key]:
                env[key] = wanted[key]
            elif key not in wanted and key in env:
                del env[key]
    else:  # inline (or absent): rebuild it, other variables kept in their order
        old: dict[str, Any] = env.unwrap() if isinstance(env, InlineTable) else {}
        merged = {k: (wanted[k] if k in own_env else v) for k, v in old.items()
                  if k not in own_env or k in wanted}
        merged.update({k: v for k, v in wanted.items() if k not in merged})
        # Parsed from our own rendering, so that it is spaced like the tables we write.
        table["env"] = tomlkit.parse(f"env = {_inline(merged)}\n")["env"]
    return tomlkit.dumps(doc)


def merged_entry(existing: dict[str, Any], entry: dict[str, Any], own_env: tuple[str, ...]
                 ) -> dict[str, Any]:
    """What :func:`update_values` makes of ``existing`` (to verify its result against)."""
    out = {**copy.deepcopy(existing), **{k: v for k, v in entry.items() if k != "env"}}
    found = existing.get("env")
    old_env: dict[str, Any] = found if isinstance(found, dict) else {}
    wanted: dict[str, str] = entry.get("env", {})
    env = {k: (wanted[k] if k in own_env else v) for k, v in old_env.items()
           if k not in own_env or k in wanted}
    env.update({k: v for k, v in wanted.items() if k not in env})
    out["env"] = env
    return out


def remove_table(text: str, path: Path, name: str, separator: str | None,
                 table: str = TABLE) -> str:
    """The text without the table's block and without the separator install put before it."""
    span = _table_span(text, name, table)
    if span is None:  # defined with dotted keys or inline: let tomlkit remove it
        doc = tomlkit.parse(text)
        parent: Any = doc
        for part in table.split("."):
            parent = parent[part]
        del parent[name]
        if isinstance(parent, InlineTable) and not parent and "." not in table:
            del doc[table]
        return tomlkit.dumps(doc)
    start, end = span
    head, tail = text[:start], text[end:]
    newline = _newline(text)
    blank = newline * 2
    if separator is None:  # no record: take back a blank line, never a line's own end
        separator = newline if head.endswith(blank) or head == newline else ""
    if separator == newline and not (head.endswith(blank) or head == newline):
        separator = ""
    if separator and head.endswith(separator):
        head = head[:-len(separator)]
    return head + tail


def verify(new_text: str, expected: dict[str, Any], path: Path, name: str) -> None:
    """Refuse (nothing written) unless the new text parses to exactly ``expected``."""
    try:
        got = tomllib.loads(new_text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"adding [{TABLE}.{name}] to {path} would make it invalid TOML ({exc}); "
            f"{_hand_hint(name)} Nothing was changed.") from None
    if _normal(got) != _normal(expected):
        raise ConfigError(f"could not edit [{TABLE}.{name}] in {path} without touching "
                          f"other settings; {_hand_hint(name)} Nothing was changed.")


def with_entry(data: dict[str, Any], name: str, entry: dict[str, Any] | None
               ) -> dict[str, Any]:
    """A copy of ``data`` with the entry set (or removed when ``entry`` is None)."""
    out = copy.deepcopy(data)
    servers = out.setdefault(TABLE, {})
    if entry is None:
        servers.pop(name, None)
    else:
        servers[name] = copy.deepcopy(entry)
    return out


def _inline(values: dict[str, Any]) -> str:
    """``{ KEY = "value", … }``, keys quoted where TOML needs it."""
    pairs = ", ".join(f"{_key(k)} = {tomlkit.item(v).as_string()}" for k, v in values.items())
    return f"{{ {pairs} }}" if pairs else "{}"


def _key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else tomlkit.item(key).as_string()


def _normal(data: dict[str, Any]) -> dict[str, Any]:
    # An [mcp_servers] that holds nothing is the same configuration as none at all.
    if data.get(TABLE) == {}:
        data = {k: v for k, v in data.items() if k != TABLE}
    return data


def _hand_hint(name: str) -> str:
    return (f"add or remove the [{TABLE}.{name}] table by hand (`osiris install "
            "codex --dry-run` shows it), or "
            "move the file aside and run the command again.")


def _not_a_block(path: Path, name: str) -> ConfigError:
    return ConfigError(f"{path} defines {TABLE}.{name} without a [{TABLE}.{name}] header "
                       f"(dotted keys or an inline table), which OSIRIS does not rewrite; "
                       f"{_hand_hint(name)}")


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _header_path(line: str) -> tuple[str, ...] | None:
    """The key path of a ``[table]`` header line, None for anything else."""
    if not _HEADER.match(line) or _ARRAY_HEADER.match(line):
        return None
    try:
        parsed: Any = tomllib.loads(line.strip())
    except tomllib.TOMLDecodeError:
        return None  # a line of a multi-line array, say
    keys: list[str] = []
    while isinstance(parsed, dict) and len(parsed) == 1:
        key, parsed = next(iter(parsed.items()))
        keys.append(key)
    return tuple(keys) if parsed == {} else None


def _table_span(text: str, name: str, table: str = TABLE) -> tuple[int, int] | None:
    """Offsets of the ``[mcp_servers.NAME]`` block: its header, its sub-tables, its
    keys, up to the last line with content (comments before the next header stay with
    that header)."""
    own = (*table.split("."), name)
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    start_line = end_line = None
    for index, line in enumerate(lines):
        is_header = _HEADER.match(line) is not None
        keys = _header_path(line) if is_header else None
        if start_line is None:
            if keys == own:
                start_line = end_line = index + 1
            continue
        if is_header and not (keys is not None and keys[:len(own)] == own):
            break
        if _CONTENT.match(line):
            end_line = index + 1
    if start_line is None or end_line is None:
        return None
    return offsets[start_line - 1], offsets[end_line]
