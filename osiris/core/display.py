"""Text shaped for the model shows control characters; it never carries them.

Payloads and agent-supplied strings are stored exactly, but what OSIRIS writes for the
model to read (previews, recall answers, the manifest) passes through a terminal, a
transcript viewer, a code review and the model itself. There a raw ESC sequence can
clear or rewrite the screen, a lone CR can hide the text before it, a NUL or BEL can
break a client, and a bidi override ("Trojan Source", CVE-2021-42574) can make code read
differently from what it is. So those characters are rendered as visible escapes:

* C0 controls except ``\\n`` and ``\\t`` (``\\r`` included: a CRLF line ending is
  removed before a line is shown, so any CR left is one that could hide text), and DEL:
  ``\\x1b``, ``\\x07``, ``\\x00``, ``\\x0d``, ``\\x7f``;
* C1 controls U+0080–U+009F (U+009B is an 8-bit CSI): ``\\x9b``;
* the bidi embeddings, overrides and isolates U+202A–U+202E and U+2066–U+2069:
  ``\\u202e``.

The escaped text differs from the payload only where such a character occurs (a payload
that already holds the four characters ``\\x1b`` reads the same as one that held an
ESC). An agent that copies a recalled line into an edit gets the escaped form there;
the exact bytes stay available through the ``osiris://ref/{ref}`` resource, and refs,
the audit and the seal are computed over the stored bytes, never over this rendering.
"""

from __future__ import annotations

import re

_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _escape_json(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def escape_controls(text: str) -> str:
    """``text`` with every control character of the module docstring shown as an escape.

    Idempotent (an escaped text holds no such characters) and linear in ``text``.
    """
    return _CONTROLS.sub(_escape, text) if _CONTROLS.search(text) else text


def escape_controls_json(text: str) -> str:
    """The same for compact JSON text: ``\\u`` escapes, so a JSON string stays valid JSON
    and decodes to the same value (``json.dumps`` already escapes C0 controls)."""
    return _CONTROLS.sub(_escape_json, text) if _CONTROLS.search(text) else text
