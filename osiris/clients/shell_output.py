"""What a client's shell call really printed, for the PostToolUse sink.

OSIRIS never rewrites a shell command: it runs in the client's own shell, under the
user's permission rules, aliases, directory and environment, and OSIRIS only sees its
output afterwards, in the PostToolUse hook. What the hook input holds differs by client,
so this adapter finds the fullest output the client left, and the exit status:

* **Claude Code** (checked in 2.1.328): ``tool_response`` is ``{stdout, stderr,
  interrupted, isImage, noOutputExpected}``. An output over Claude Code's inline limit
  is cut to 30,000 characters there, and the whole of it is in the file named by
  ``persistedOutputPath`` (``persistedOutputSize`` bytes), which Claude Code wrote
  before the hook ran. PostToolUse comes only for a command Claude Code counts as a
  success; a failing one comes as PostToolUseFailure, whose output cannot be replaced.
* **Codex** (checked in 0.169.0): ``tool_response`` is the output as Codex cut it for the
  model (head and tail of about 10,000 characters); the exit status is not in the hook
  input. Before it runs PostToolUse, Codex appends the command's ``item_completed``
  record to the session's rollout (``transcript_path``): ``status``, ``exit_code`` and
  ``aggregated_output`` (the whole output up to 64 KiB, head and tail beyond). A call
  whose record is not there (a command still running, a rollout of another format)
  gets None: its output reaches the model as Codex shows it.

Whatever cannot be read is None too: the call then passes as the client shows it.
"""

from __future__ import annotations

import json
import os
import stat
import time
from dataclasses import dataclass
from typing import Any, BinaryIO

from osiris.clients.hook_input import HookCall
from osiris.core.routing import SHELL_TOOLS

CODEX_CUT_MARK = "command output truncated for persistence"
"""What Codex 0.169.0 puts in the middle of an ``aggregated_output`` over 64 KiB."""
ROLLOUT_TAIL_BYTES = 1 << 18
"""The first read from the rollout's end; it grows fourfold up to ROLLOUT_MAX_BYTES."""
ROLLOUT_MAX_BYTES = 1 << 20
"""The record is the rollout's last when the hook runs (one record holds at most 64 KiB
of output, JSON-escaped): a miss never reads more than this from a rollout of any size."""
ROLLOUT_WAITS_S = (0.0, 0.01, 0.03)
"""Codex appends the record before the hook starts (every run seen); in case a write is
still on its way, two short retries, 40 ms at most on a miss."""


@dataclass(frozen=True)
class ShellOutput:
    """A shell call's output as OSIRIS stores it."""

    text: str
    exit_code: int | None
    """None where the client does not say (Claude Code's PostToolUse: a success by its
    own reading of the status)."""
    complete: bool
    """Whether ``text`` is the whole output, not a cut the client made."""


def finished(call: HookCall) -> bool:
    """Whether ``call`` is a shell call that finished, whose output a hook may replace."""
    return call.event == "PostToolUse" and call.tool in SHELL_TOOLS


def claude_code(call: HookCall, max_bytes: int) -> ShellOutput | None:
    """A finished Bash call's output as Claude Code left it (the persisted file when it
    cut the hook's copy), or None when OSIRIS should leave the output alone."""
    if not finished(call):
        return None
    response = call.response
    if not isinstance(response, dict) or response.get("isImage"):
        return None
    stdout, stderr = response.get("stdout"), response.get("stderr") or ""
    if not isinstance(stdout, str) or not isinstance(stderr, str):
        return None
    persisted = response.get("persistedOutputPath")
    if isinstance(persisted, str) and persisted:
        whole = _read_text(persisted, max_bytes)
        if whole is None:
            return None  # over what OSIRIS holds, or unreadable: Claude Code's own notice
        stdout = whole
    text = stdout + ("\n" + stderr if stdout and stderr else stderr)
    return ShellOutput(text, None, True)


def _open_regular(path: str, max_bytes: int) -> BinaryIO | None:
    """``path`` opened for reading if it is a regular file of at most ``max_bytes``
    (non-blocking open: a FIFO named by a hostile input must not hang the hook)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
        os.close(fd)
        return None
    return os.fdopen(fd, "rb")


def _read_text(path: str, max_bytes: int) -> str | None:
    fh = _open_regular(path, max_bytes)
    if fh is None:
        return None
    try:
        with fh:
            return fh.read().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def codex(call: HookCall, max_bytes: int) -> ShellOutput | None:
    """A finished shell call's output and exit status from the record Codex wrote to its
    rollout, or None when OSIRIS should leave the output alone."""
    if not finished(call):
        return None
    path, call_id = call.transcript_path, call.tool_use_id
    if not path or not call_id or not path.endswith(".jsonl"):
        return None
    for wait in ROLLOUT_WAITS_S:
        if wait:
            time.sleep(wait)
        item = _rollout_item(path, call_id)
        if item is not None:
            break
    else:
        return None
    text = item.get("aggregated_output")
    if not isinstance(text, str) or len(text.encode("utf-8")) > max_bytes:
        return None
    return ShellOutput(text, int(item["exit_code"]), CODEX_CUT_MARK not in text)


def _rollout_item(path: str, call_id: str) -> dict[str, Any] | None:
    """The finished ``CommandExecution`` item of ``call_id``, read from the rollout's
    end (its newest records), or None."""
    needle = json.dumps(call_id).encode("utf-8")
    opened = _open_regular(path, 1 << 62)
    if opened is None:
        return None
    try:
        with opened as fh:
            end = fh.seek(0, os.SEEK_END)
            size = ROLLOUT_TAIL_BYTES
            while True:
                start = max(0, end - size)
                fh.seek(start)
                lines = fh.read(end - start).split(b"\n")
                if start > 0:
                    lines = lines[1:]  # the first line may begin before the read
                for line in reversed(lines):
                    if needle in line and b"CommandExecution" in line:
                        item = _command_item(line, call_id)
                        if item is not None:
                            return item
                if start == 0 or size >= ROLLOUT_MAX_BYTES:
                    return None
                size *= 4
    except OSError:
        return None


def _command_item(line: bytes, call_id: str) -> dict[str, Any] | None:
    try:
        doc = json.loads(line)
    except ValueError:
        return None
    payload = doc.get("payload") if isinstance(doc, dict) else None
    item = payload.get("item") if isinstance(payload, dict) else None
    if (not isinstance(item, dict) or item.get("type") != "CommandExecution"
            or item.get("id") != call_id or item.get("status") not in ("completed", "failed")
            or not isinstance(item.get("exit_code"), int)
            or isinstance(item.get("exit_code"), bool)):
        return None
    return item
