"""Routing: which client tool calls OSIRIS puts itself in the path of, and how.

A client that owns its history (Claude Code, Codex) lets OSIRIS change a call only
through its hooks: a PreToolUse answer may rewrite the call's input, a PostToolUse
answer may replace another MCP server's output. This module decides, purely, from the
call and the ``[routing]`` settings of ``.osiris/invariants.toml``:

* **large reads** — a ``Read`` without ``offset``/``limit`` of a text file over
  ``read_threshold_tokens`` becomes a ``Read`` of its first ``read_window_lines``
  lines; the hook adds the file's line count, outline and ref as context;
* **commands** — a shell call is rewritten to run through ``osiris run``, which shows
  a small output verbatim and a large one as a preview plus its ref — except calls run in
  the background, interactive programs, calls already wrapped, commands that change the
  calling shell's directory past a leading ``cd DIR &&``, and the user's ``exempt``
  globs;
* **MCP outputs** — another MCP server's output over ``mcp_threshold_tokens`` is
  replaced by its preview and ref;
* **compaction** — after the client compacts, the manifest and the live refs are put
  back in front of the model.

Every feature can be switched off on its own (``read = false`` …). Nothing here reads a
file or runs a command: the engine does, and fails open.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from dataclasses import dataclass, field, fields
from pathlib import PurePosixPath
from typing import Any

READ_TOOLS = frozenset({"Read"})
SHELL_TOOLS = frozenset({"Bash", "shell", "exec_command", "local_shell", "shell_command"})
# What a Read shows that OSIRIS must not touch: images, PDFs and notebooks are rendered by
# the client itself, not returned as numbered lines.
UNTOUCHED_SUFFIXES = frozenset({
    ".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".ico", ".tif", ".tiff", ".svgz",
    ".pdf", ".ipynb"})
# Programs that talk to a terminal or never end on their own: the client's own tool
# handles them (a TUI behind a pipe hangs or prints nothing).
INTERACTIVE = frozenset({
    "vi", "vim", "nvim", "nano", "emacs", "less", "more", "most", "man", "top", "htop",
    "watch", "ssh", "telnet", "ftp", "sftp", "tmux", "screen", "fzf", "python -i",
    "ipython", "irb", "psql", "mysql", "sqlite3", "mongo", "redis-cli", "node --inspect"})
_INTERACTIVE_FLAGS = re.compile(
    r"(^|\s)(git\s+(rebase|add|commit|checkout|reset|stash)\b[^|;&]*\s-(i|p|-interactive"
    r"|-patch)\b|tail\s+(-[a-zA-Z]*f|--follow)\b|docker\s+(run|exec)\b[^|;&]*\s-[a-z]*t)")
# A lone `&` (not `&&`, `>&`, `&>`, `|&`): a command sent to the background.
_BACKGROUND = re.compile(r"(?<![&>|<])&(?![&>])")
# `cd` (or pushd/popd) that would change the calling shell's directory.
_CHDIR = re.compile(r"(^|[;&|(\n`{]|\$\()\s*(cd|pushd|popd)(\s|$|;)")
_LEADING_CD = re.compile(r"^\s*(cd\s+(?:'[^']*'|\"[^\"$`\\]*\"|[^\s;&|<>()$`'\"\\]+))\s*&&\s*")
WRAP_MARK = " -m osiris run "
"""The shortest form of the ``osiris run`` prefix (a stand-in where only the decision is
wanted)."""
OSIRIS_COMMAND = re.compile(r"(?: -m osiris|launch\.py'?) (hook|run) ")
"""What every command OSIRIS writes contains: ``PYTHON -m osiris run|hook …`` or
``PYTHON -S -P …/osiris/launch.py run|hook …`` (:mod:`osiris.clients.launcher`); a
command with ``run`` here is wrapped already."""


class RoutingError(ValueError):
    """A ``[routing]`` table that cannot be used (the message names the key)."""


@dataclass(frozen=True)
class RoutingConfig:
    """The ``[routing]`` table of ``.osiris/invariants.toml`` (every key optional)."""

    read: bool = True
    """Rewrite large ``Read`` calls to a window plus outline and ref."""
    read_threshold_tokens: int = 25_000
    """A file above this many tokens (counted) is windowed. Chosen from the real-client
    benchmark: windowing files from 6,000 or 12,000 tokens up made the Claude Code
    sessions re-send more (the agent needed the rest of the file, and a smaller prompt
    put off the compaction the bare client went through); 25,000 is the size above which
    Claude Code's own ``Read`` stops being whole."""
    read_window_lines: int = 250
    """How many lines of a windowed file the ``Read`` still shows (from line 1)."""
    shell: bool = False
    """Run shell calls through ``osiris run``. Off by default: the rewritten command no
    longer matches the user's permission rules (Claude Code's ``Bash(git push:*)``
    deny/ask/allow rules, Codex's approval policy, which OSIRIS's ``allow`` skipped) and
    runs in a fresh shell without the client's snapshot of aliases and functions."""
    shell_preview_tokens: int = 1_500
    """``osiris run`` prints an output of at most this many tokens verbatim."""
    exempt: tuple[str, ...] = ()
    """Globs of commands never wrapped (``fnmatch``, against the command after a leading
    ``cd DIR &&``), e.g. ``"npm run dev*"``."""
    mcp_outputs: bool = True
    """Replace another MCP server's large output with its preview and ref (Claude Code)."""
    mcp_threshold_tokens: int = 4_000
    compaction: bool = True
    """After a compaction, put the manifest and live refs back in front of the model."""
    rereads: bool = True
    """Answer a repeated ``Read`` of an unchanged file, still in the prompt, with a pointer
    to the earlier result instead of a second copy (Claude Code)."""
    outline_tokens: int = 700
    """The most a windowed read's outline may take."""
    preview_tokens: int = 500
    """The size of a preview that replaces an output."""


_BOOLS = {f.name for f in fields(RoutingConfig) if f.type in ("bool", bool)}
_INTS = {f.name for f in fields(RoutingConfig) if f.type in ("int", int)}


def parse_routing(raw: object) -> RoutingConfig:
    """``[routing]`` as a config; RoutingError naming the bad key."""
    if raw is None:
        return RoutingConfig()
    if not isinstance(raw, dict):
        raise RoutingError("[routing] must be a table")
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if key in _BOOLS:
            if not isinstance(value, bool):
                raise RoutingError(f"[routing] {key} must be true or false")
        elif key in _INTS:
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise RoutingError(f"[routing] {key} must be a positive integer")
        elif key == "exempt":
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise RoutingError("[routing] exempt must be an array of non-empty strings "
                                   '(command globs, e.g. "npm run dev*")')
            values[key] = tuple(value)
            continue
        else:
            raise RoutingError(f"[routing] has unknown key {key!r}; allowed: "
                               + ", ".join(sorted((*_BOOLS, *_INTS, "exempt"))))
        values[key] = value
    return RoutingConfig(**values)


# -- large reads ------------------------------------------------------------------------

@dataclass(frozen=True)
class ReadCandidate:
    """A ``Read`` OSIRIS may window, before the file is looked at."""

    path: str


def read_candidate(tool: str, tool_input: dict[str, Any], config: RoutingConfig,
                   ) -> ReadCandidate | None:
    """The file of a ``Read`` that may be windowed: no offset/limit, not an image/PDF/
    notebook; None when the call passes untouched."""
    if not config.read or tool not in READ_TOOLS:
        return None
    path = tool_input.get("file_path")
    if not isinstance(path, str) or not path or "\x00" in path:
        return None
    if any(tool_input.get(k) is not None for k in ("offset", "limit", "pages")):
        return None
    if PurePosixPath(path).suffix.lower() in UNTOUCHED_SUFFIXES:
        return None
    return ReadCandidate(path)


def may_exceed(size_bytes: int, config: RoutingConfig) -> bool:
    """Whether a file of ``size_bytes`` can be over the threshold (tokens are at most one
    per byte; below, the file is not even read)."""
    return size_bytes > config.read_threshold_tokens


def windowed_input(tool_input: dict[str, Any], config: RoutingConfig) -> dict[str, Any]:
    """The rewritten ``Read`` input: the same file, its first lines."""
    return {**tool_input, "offset": 1, "limit": config.read_window_lines}


def read_context(path: str, *, lines: int, tokens: int, ref: str, window: int,
                 outline: list[str], outline_cut: bool) -> str:
    """The context the hook adds to a windowed ``Read`` (reaches the model verbatim)."""
    shown = min(window, lines)
    parts = [f"OSIRIS shortened this Read: {path} has {lines:,} lines ({tokens:,} tokens); "
             f"lines 1-{shown} are shown. The whole file is stored as {ref}. For other "
             f"lines use Read with offset/limit, or osiris_recall(ref=\"{ref}\", "
             "op=\"grep\"|\"range\"|\"outline\")."]
    if outline:
        parts.append("Outline (line: symbol):\n" + "\n".join(outline)
                     + ("\n… (every few symbols shown; osiris_recall op=\"outline\" for all)"
                        if outline_cut else ""))
    return "\n".join(parts)


# -- commands ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Wrap:
    """The verdict on one shell call: the new command, or why it passes untouched."""

    command: str | None
    reason: str
    exempt_by: str | None = field(default=None)


def _program(segment: str) -> str:
    try:
        words = shlex.split(segment, comments=False)
    except ValueError:
        words = segment.split()
    words = [w for w in words if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w)]
    while words and words[0] in ("sudo", "env", "time", "nohup", "exec", "command"):
        words = words[1:]
    if not words:
        return ""
    head = words[0].rsplit("/", 1)[-1]
    return f"{head} {words[1]}" if len(words) > 1 else head


def interactive(command: str) -> bool:
    """A program that needs a terminal (an editor, a pager, a REPL, ``git … -i``)."""
    if _INTERACTIVE_FLAGS.search(command):
        return True
    for segment in re.split(r"&&|\|\||[;|\n]", command):
        program = _program(segment.strip())
        if not program:
            continue
        first = program.split(" ", 1)[0]
        if program in INTERACTIVE or first in INTERACTIVE:
            return True
        if first in ("python", "python3", "node", "bash", "sh", "zsh") and program == first:
            return True  # a bare interpreter reads a REPL from stdin
    return False


def wrap_command(command: object, tool_input: dict[str, Any],  # noqa: PLR0911 - one
                 config: RoutingConfig, runner: str) -> Wrap:          # reason per return
    """``runner -- 'COMMAND'`` (behind a leading ``cd DIR &&``), or why not.

    ``runner`` is the shell-quoted ``osiris run`` prefix (it contains
    :data:`WRAP_MARK`). The command is passed as one single-quoted argument, so the
    shell ``osiris run`` starts parses exactly the text the client's shell would have."""
    if not config.shell:
        return Wrap(None, "routing.shell is off")
    if not isinstance(command, str) or not command.strip():
        return Wrap(None, "no command")
    if "osiris run --" in command or any(m.group(1) == "run"
                                         for m in OSIRIS_COMMAND.finditer(command)):
        return Wrap(None, "already wrapped")
    if tool_input.get("run_in_background") is True:
        return Wrap(None, "runs in the background")
    if "\x00" in command:
        return Wrap(None, "contains a NUL byte")
    prefix, rest = "", command
    while (lead := _LEADING_CD.match(rest)) is not None:
        prefix, rest = prefix + lead.group(1) + " && ", rest[lead.end():]
    if not rest.strip():
        return Wrap(None, "only changes directory")
    if _BACKGROUND.search(rest):
        return Wrap(None, "runs something in the background (&)")
    if _CHDIR.search(rest):
        return Wrap(None, "changes the shell's directory past a leading cd")
    if interactive(rest):
        return Wrap(None, "interactive")
    stripped = rest.strip()
    for pattern in config.exempt:
        if fnmatch.fnmatchcase(stripped, pattern) or fnmatch.fnmatchcase(command.strip(),
                                                                         pattern):
            return Wrap(None, "exempt", exempt_by=pattern)
    return Wrap(f"{prefix}{runner} -- {shlex.quote(rest)}", "wrapped")


def unwrap_command(command: str) -> str | None:
    """The agent's own command inside a wrapped one (``cd DIR && `` kept), else None."""
    found = next((m for m in OSIRIS_COMMAND.finditer(command) if m.group(1) == "run"), None)
    if found is None:
        return None
    mark = found.start()
    start = command.rfind(" && ", 0, mark)
    prefix = command[:start + 4] if start >= 0 and _LEADING_CD.match(command[:start + 4]) \
        else ""
    tail = command.find(" -- ", mark)
    if tail < 0:
        return None
    try:
        words = shlex.split(command[tail + 4:])
    except ValueError:
        return None
    return prefix + words[0] if len(words) == 1 else None


def run_footer(*, exit_code: int, lines: int, tokens: int, ref: str) -> str:
    """The last line ``osiris run`` prints under a preview (one-line recall hint)."""
    status = f"exit {exit_code}" if exit_code >= 0 else f"killed by signal {-exit_code}"
    return (f"[osiris: {status}; whole output ({lines:,} lines, {tokens:,} tokens) stored as "
            f"{ref}: osiris_recall it with op=\"grep\" pattern=… or op=\"range\" start= end=]")


MAX_ROUTED_HINT_CHARS = 500
"""Longest recall hint a loop may give ``observe(routed=…)``."""


def routed_hint(template: str, ref: str) -> str:
    """A loop's recall hint for ``ref`` (``{ref}`` in its template stands for it)."""
    return template.replace("{ref}", ref)


def routed_preview(preview: str, *, lines: int, tokens: int, hint: str) -> str:
    """What a loop that owns its history shows for an output OSIRIS externalized: the
    preview, then one line with the size of the whole and how to recall it."""
    return (preview.rstrip("\n") + f"\n[osiris: whole output ({lines:,} lines, {tokens:,} "
            f"tokens) stored; {hint}]")


def routed_pointer(hint: str) -> str:
    """What a loop shows for an output identical to an earlier one of the same call."""
    return f"[osiris: the same output as an earlier call; {hint}]"


def routed_stub(hint: str) -> str:
    """What a loop leaves in its history in place of an output it dropped."""
    return f"[osiris: output dropped from the conversation; {hint}]"


def read_key(tool_input: dict[str, Any]) -> tuple[int | None, int | None] | None:
    """The window a ``Read`` asks for (offset, limit), None for other shapes (pages)."""
    if tool_input.get("pages") is not None:
        return None
    offset, limit = tool_input.get("offset"), tool_input.get("limit")
    for value in (offset, limit):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            return None
    return offset, limit


def reread_pointer(path: str, *, tool_use_id: str | None, window: str) -> str:
    """The reason that stands in for a second copy of a file still in the prompt."""
    where = f" (tool call {tool_use_id})" if tool_use_id else ""
    return (f"OSIRIS: {path}{window} is unchanged since you read it{where}, and no "
            "compaction happened since: that result is still above in this conversation; "
            "use it. (If you cannot find it, Read with another offset or limit.)")


# -- other MCP servers ------------------------------------------------------------------

_MCP_TOOL = re.compile(r"^mcp__(?P<server>[^_].*?)__(?P<tool>.+)$")


def foreign_mcp_tool(tool: str, own_server_names: tuple[str, ...] = ("osiris",)) -> bool:
    """A tool of another MCP server (``mcp__github__get_issue``), not OSIRIS's own."""
    match = _MCP_TOOL.match(tool)
    if match is None:
        return False
    server = match.group("server")
    return server not in own_server_names and not match.group("tool").startswith("osiris")


def replaced_output(preview: str, *, ref: str, tokens: int, lines: int) -> str:
    """The text that stands in for a large MCP output."""
    return (f"{preview}\n[osiris: whole output ({lines:,} lines, {tokens:,} tokens) stored as "
            f"{ref}: osiris_recall it with op=\"grep\" pattern=… or op=\"range\" start= end=]")


# -- compaction -------------------------------------------------------------------------

def compaction_context(manifest: str, refs: list[dict[str, Any]], limit: int = 30) -> str:
    """What the model gets back after a compaction: the manifest and one line per live
    ref (newest first, at most ``limit``)."""
    lines = ["OSIRIS after compaction: the task's manifest and what OSIRIS still holds "
             "(recall any of it with osiris_recall; files can be read again).", manifest]
    for item in refs[:limit]:
        what = item.get("what") or item.get("tool") or "output"
        lines.append(f"- {item['ref']}: {what}, {int(item.get('tokens') or 0):,} tokens")
    if len(refs) > limit:
        lines.append(f"- … {len(refs) - limit} older refs (osiris_recall on the manifest's "
                     "task lists them)")
    return "\n".join(lines)
