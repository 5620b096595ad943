"""Routing: which client tool calls OSIRIS puts itself in the path of, and how.

A client that owns its history (Claude Code, Codex) lets OSIRIS change a call only
through its hooks: a PreToolUse answer may rewrite the call's input, a PostToolUse
answer may replace the output the model will see. This module decides, purely, from the
call and the ``[routing]`` settings of ``.osiris/invariants.toml``:

* **large reads** — a ``Read`` without ``offset``/``limit`` of a text file over
  ``read_threshold_tokens`` becomes a ``Read`` of its first ``read_window_lines``
  lines; the hook adds the file's line count, outline and ref as context;
* **commands** — a shell call runs in the client's own shell, untouched; when its
  output is over ``shell_preview_tokens``, the PostToolUse hook stores the whole output
  and the client shows the model a preview and the ref instead (Claude Code's
  ``updatedToolOutput``, Codex's ``decision: "block"``). OSIRIS is a sink: it never
  rewrites the command, so the user's permission rules, shell, aliases, directory,
  signals and exit status are the client's, exactly as without OSIRIS;
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
from dataclasses import dataclass, fields
from pathlib import PurePosixPath
from typing import Any

from osiris.core.hashing import short_ref
from osiris.core.shell import output_kind

READ_TOOLS = frozenset({"Read"})
SHELL_TOOLS = frozenset({"Bash", "shell", "exec_command", "local_shell", "shell_command"})
# What a Read shows that OSIRIS must not touch: images, PDFs and notebooks are rendered by
# the client itself, not returned as numbered lines.
UNTOUCHED_SUFFIXES = frozenset({
    ".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".ico", ".tif", ".tiff", ".svgz",
    ".pdf", ".ipynb"})
OSIRIS_COMMAND = re.compile(r"(?: -m osiris|launch\.py'?) (hook|run) ")
"""What every command OSIRIS writes contains: ``PYTHON -m osiris run|hook …`` or
``PYTHON -S -P …/osiris/launch.py run|hook …`` (:mod:`osiris.clients.launcher`)."""


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
    shell: bool = True
    """Show a large shell output as its preview and ref (the command itself runs in the
    client's shell untouched; OSIRIS only replaces what the model is shown after it)."""
    shell_preview_tokens: int = 1_500
    """A shell output of at most this many tokens is shown as the client shows it (where
    size alone decides: Codex, ``payoff = false``, ``osiris run``)."""
    shell_log_tokens: int = 1_000
    """Where size alone decides, a log's threshold instead (a test run, a build, a type
    check or lint, an install, git's log/diff/show/status:
    :func:`osiris.core.shell.output_kind`): its preview keeps the verdict and the errors,
    which is what an agent reads a log for. Chosen on agentv-ci-node24 (Codex, the replay
    of its recorded outputs: the real-client replay runs its ``bun`` builds and tests in a
    workspace without their toolchain, where they fail in a line): billed 4.7% below the
    bare client at 1,500, 9.1% at 1,200, 10.3% at 1,000 and 800, 7.7% at 600, 7.9% at
    400, every need kept at each."""
    exempt: tuple[str, ...] = ()
    """Globs of commands whose output is always shown as the client shows it
    (``fnmatch`` against the command as the agent wrote it), e.g. ``"npm run dev*"``."""
    mcp_outputs: bool = True
    """Replace another MCP server's large output with its preview and ref (Claude Code)."""
    mcp_threshold_tokens: int = 4_000
    compaction: bool = True
    """After a compaction, put the manifest and live refs back in front of the model."""
    rereads: bool = True
    """Answer a repeated ``Read`` of an unchanged file, still in the prompt, with a pointer
    to the earlier result instead of a second copy (Claude Code)."""
    reread_changes: bool = True
    """Show a whole-file ``Read`` of a file that changed since this context read it whole
    (that read still in the prompt: no compaction since) as the lines that hold every
    change, numbered as the file is now, and a note on where the rest is (Claude Code:
    ``updatedToolOutput``; the read itself ran, so edits work as after a full read)."""
    reread_changes_min_tokens: int = 400
    """A changed file smaller than this is shown whole."""
    reread_changes_max_percent: int = 50
    """Show the changed lines only when they and the note take at most this share of the
    file's tokens (changes spread over the whole file: shown whole)."""
    reread_changes_context_lines: int = 3
    """Unchanged lines shown on each side of the changes."""
    outline_tokens: int = 700
    """The most a windowed read's outline may take."""
    payoff: bool = True
    """Route an output only when the cache arithmetic says it pays
    (:mod:`osiris.core.payoff`: the tokens kept out of every later request against the
    expected price of asking for them back); false: by size thresholds alone."""
    compaction_at_tokens: int = 167_000
    """The prompt size at which the client compacts (Claude Code on a 200k-token model;
    ``CLAUDE_CODE_AUTO_COMPACT_WINDOW`` in the hook's environment overrides it): what a
    result is carried in until then is what routing it saves."""
    read_shape: bool = False
    """Show a mid-size whole-file ``Read`` (from ``read_shape_min_tokens`` up to
    ``read_threshold_tokens``) as its first ``read_shape_lines`` lines and an outline with
    line numbers, when the payoff says so (Claude Code: ``updatedToolOutput``). Off by
    default: in the real Claude Code on the tielec sessions (tuning data) it made two
    sessions re-send 20% and 35% more, with every need kept and no extra call, because a
    smaller prompt put off the compaction the bare client went through (the payoff does
    not model a compaction the routing postpones)."""
    read_shape_min_tokens: int = 2_000
    read_shape_lines: int = 80
    shell_min_tokens: int = 600
    """With ``payoff``, a shell output from this size is a candidate for a preview (the
    arithmetic decides); without, ``shell_preview_tokens`` is the threshold."""
    preview_tokens: int = 500
    """The size of a preview that replaces an output."""
    sized_preview_tokens: int = 300
    """The size of the preview that replaces a client's shell output where size alone
    decides (a client without the payoff: Codex). Chosen on the Codex tuning sessions
    (agentv-ci-node24 and the tielec ones): from 500 to 300 the same outputs were routed
    and the same needs recalled, with 1.7% less billed in agentv-ci-node24; 200 saved
    no more, 1,000 saved less."""


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
    shown, ref = min(window, lines), short_ref(ref)
    parts = [f"OSIRIS shortened this Read: {path} has {lines:,} lines ({tokens:,} tokens); "
             f"lines 1-{shown} are shown. The whole file is stored as {ref}. For other "
             f"lines use Read with offset/limit, or osiris_recall(ref=\"{ref}\", "
             "op=\"grep\"|\"range\"|\"outline\")."]
    if outline:
        parts.append("Outline (line: symbol):\n" + "\n".join(outline)
                     + ("\n… (every few symbols shown; osiris_recall op=\"outline\" for all)"
                        if outline_cut else ""))
    return "\n".join(parts)


def shaped_read_context(path: str, *, lines: int, tokens: int, ref: str, shown: int,
                        outline: list[str], outline_cut: bool) -> str:
    """The note beside a mid-size ``Read`` shown as its first lines (reaches the model
    verbatim, after the numbered lines the client renders)."""
    ref = short_ref(ref)
    parts = [f"OSIRIS showed lines 1-{shown} of {path} ({lines:,} lines, {tokens:,} tokens; "
             f"the whole file is stored as {ref}). For any other part: Read with "
             f"offset/limit (line numbers below), or osiris_recall(ref=\"{ref}\", "
             "op=\"grep\"|\"range\"). Edits work as after a full Read."]
    if outline:
        parts.append("Outline (line: symbol):\n" + "\n".join(outline)
                     + ("\n… (every few symbols shown)" if outline_cut else ""))
    return "\n".join(parts)


def changed_span(old: str, new: str, context: int) -> tuple[int, int] | None:
    """The lines of ``new`` (1-based, first and last, inclusive) between which it differs
    from ``old``, widened by ``context`` unchanged lines each side; None when the lines
    are equal or ``new`` has none. Every line of ``new`` before the span is the same line
    of ``old``; every line after it is ``old``'s line moved by ``len(new) - len(old)``
    lines (a common prefix and suffix, so the span holds every change, exactly)."""
    a, b = old.splitlines(), new.splitlines()
    if a == b or not b:
        return None
    head, most = 0, min(len(a), len(b))
    while head < most and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < most - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    last = max(len(b) - tail, head + 1)  # a deletion: the line after the cut
    return max(1, min(head + 1, len(b)) - context), min(len(b), last + context)


def read_changes_context(path: str, *, span: tuple[int, int], lines: int, old_lines: int,
                         tool_use_id: str | None, ref: str) -> str:
    """The note beside a re-read shown as its changed lines (reaches the model verbatim,
    after the numbered lines the client renders)."""
    first, last = span
    ref = short_ref(ref)
    where = f" (tool call {tool_use_id})" if tool_use_id else ""
    moved = lines - old_lines
    parts = [f"OSIRIS: {path} changed since you read it whole{where}; no compaction since, "
             f"so that read is still above. Shown: lines {first}-{last}, which hold every "
             f"change, numbered as the file is now ({lines:,} lines; {old_lines:,} then)."]
    if first > 1:
        parts.append(f"Lines 1-{first - 1} are as in that read.")
    if last < lines:
        parts.append(f"Lines {last + 1}-{lines} are that read's lines "
                     f"{last + 1 - moved}-{old_lines}"
                     + (f", moved by {moved:+d}." if moved else ", unchanged."))
    parts.append(f"The whole file is stored as {ref}: Read with offset/limit or "
                 f"osiris_recall(ref=\"{ref}\", op=\"range\") for any part. Edits work as "
                 "after a full Read.")
    return " ".join(parts)


# -- commands ----------------------------------------------------------------------------

def shell_candidate(tool: str, tool_input: dict[str, Any], config: RoutingConfig) -> str | None:
    """The command of a shell call whose large output OSIRIS may show as a preview; None
    when its output reaches the model as the client shows it (shell routing off, a call
    in the background, whose output is a handle to poll, or an ``exempt`` command)."""
    if not config.shell or tool not in SHELL_TOOLS:
        return None
    command = tool_input.get("command", tool_input.get("cmd"))
    if isinstance(command, list):
        command = " ".join(str(word) for word in command)
    if not isinstance(command, str) or not command.strip():
        return None
    if tool_input.get("run_in_background") is True:
        return None
    stripped = command.strip()
    if any(fnmatch.fnmatchcase(stripped, pattern) for pattern in config.exempt):
        return None
    return command


def sized_threshold(command: str, config: RoutingConfig) -> int:
    """The size over which a shell output gets a preview where size alone decides (no
    payoff): ``shell_log_tokens`` for a log, ``shell_preview_tokens`` for any other."""
    return config.shell_log_tokens if output_kind(command) == "log" \
        else config.shell_preview_tokens


def shell_replacement(preview: str, *, lines: int, tokens: int, ref: str,
                      exit_code: int | None, status_line: bool, complete: bool = True) -> str:
    """What the model is shown instead of a large shell output: the exit status where the
    client's own output names it (``status_line``: Codex's "Process exited with code N",
    which the replacement takes the place of), the preview and one line with the ref —
    which says so when the client had already cut the output (``complete`` false)."""
    head = f"Process exited with code {exit_code}\n" if status_line and exit_code is not None \
        else ""
    body = preview.rstrip("\n")
    what = "whole output" if complete else "output as the client kept it, its middle cut"
    return (head + (body + "\n" if body else "")
            + f"[osiris: {what} ({lines:,} lines, {tokens:,} tokens) stored as "
            f"{short_ref(ref)}: "
            "osiris_recall it with op=\"grep\" pattern=… or op=\"range\" start= end=]")


def run_footer(*, exit_code: int, lines: int, tokens: int, ref: str) -> str:
    """The last line ``osiris run`` prints under a preview: the recall hint in the shell's
    own syntax (whoever reads it acts through a shell), as ``osiris recall`` says it."""
    status = f"exit {exit_code}" if exit_code >= 0 else f"killed by signal {-exit_code}"
    ref = short_ref(ref)
    return (f"[osiris: {status}; whole output ({lines:,} lines, {tokens:,} tokens) stored as "
            f"{ref}: read it with `osiris recall {ref} --grep PATTERN` (or --lines A:B)]")


MAX_ROUTED_HINT_CHARS = 500
"""Longest recall hint a loop may give ``observe(routed=…)``."""


def routed_hint(template: str, ref: str) -> str:
    """A loop's recall hint for ``ref`` (``{ref}`` in its template stands for it)."""
    return template.replace("{ref}", short_ref(ref))


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
            f"{short_ref(ref)}: osiris_recall it with op=\"grep\" pattern=… or op=\"range\" "
            "start= end=]")


# -- compaction -------------------------------------------------------------------------

def compaction_context(manifest: str, refs: list[dict[str, Any]], limit: int = 30) -> str:
    """What the model gets back after a compaction: the manifest and one line per live
    ref (newest first, at most ``limit``)."""
    lines = ["OSIRIS after compaction: the task's manifest and what OSIRIS still holds "
             "(recall any of it with osiris_recall; files can be read again).", manifest]
    for item in refs[:limit]:
        what = item.get("what") or item.get("tool") or "output"
        lines.append(f"- {short_ref(item['ref'])}: {what}, {int(item.get('tokens') or 0):,} "
                     "tokens")
    if len(refs) > limit:
        # The caller asks for one row more than it shows: there are older refs, and
        # no tool lists them, so the line says only that.
        lines.append("- … and older refs, not listed here")
    return "\n".join(lines)
