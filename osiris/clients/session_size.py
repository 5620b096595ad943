"""How big the client's prompt is now: the payoff's input (:mod:`osiris.core.payoff`).

Claude Code (checked in 2.1.328) writes each model answer to the session's transcript
(``transcript_path`` in every hook input) with the provider's ``usage``: the prompt of
that request was ``input_tokens + cache_creation_input_tokens + cache_read_input_tokens``
tokens, and the answer's ``output_tokens`` join the next one. The hook reads the last
such record from the transcript's end; a transcript it cannot read (missing, not a
regular file, no usage yet) gives None, and the payoff then assumes nothing of the
session (its floor of later requests).
"""

from __future__ import annotations

import json
import os
import stat

from osiris.clients.hook_input import HookCall

TAIL_BYTES = 1 << 18
"""How much of the transcript's end is read: one answer's record is far smaller."""
USAGE_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
              "output_tokens")


def prompt_tokens(call: HookCall) -> int | None:
    """The size of the client's next prompt before this call's result joins it, from the
    last model answer the transcript records; None when it cannot be read."""
    path = call.transcript_path
    if not path or not path.endswith(".jsonl"):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        start = max(0, info.st_size - TAIL_BYTES)
        os.lseek(fd, start, os.SEEK_SET)
        tail = os.read(fd, TAIL_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
    lines = tail.split(b"\n")
    if start:
        lines = lines[1:]  # the first may be cut
    for line in reversed(lines):
        if b'"usage"' not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        message = record.get("message") if isinstance(record, dict) else None
        usage = message.get("usage") if isinstance(message, dict) else None
        if not isinstance(usage, dict):
            continue
        values = [usage.get(k) for k in USAGE_KEYS]
        if not any(isinstance(v, int) and v > 0 for v in values):
            continue
        return sum(v for v in values if isinstance(v, int) and not isinstance(v, bool)
                   and v > 0)
    return None
