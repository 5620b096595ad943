"""Previews: the few lines of an externalized payload that are worth keeping in context.

Not just the first bytes. In order of preference:

* ``errors`` — for errors and logs with failures: the error lines (with their line
  numbers) and the last lines, where test runners print their summary;
* ``outline`` — for code, Markdown and JSON: the symbols with line numbers;
* ``head_tail`` — otherwise: the first and last lines with the gap marked.

Every line carries its line number so the agent can ``recall(op="range")`` around it:
lines are split on ``\n`` only and numbered from 1, as recall numbers them (splitting
on CR, form feed or U+0085 too, as ``str.splitlines`` does, put the numbers off).
Control characters are shown as escapes (:mod:`osiris.core.display`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import re2

from osiris.core.display import escape_controls
from osiris.core.outline import detect_language, outline_symbols
from osiris.core.tokens import TokenCounter
from osiris.errors import InvalidInputError

MAX_LINE_CHARS = 160
# Lines that report a failure in logs, test output and tracebacks (simple, linear).
_ERROR_LINE = re.compile(
    r"(?i)\b(error|exception|traceback|failed|failure|fatal|panic|assert(ion)?|denied|"
    r"not found|cannot|undefined|segmentation fault)\b|^\s*E\s{2,}|✕|✗|FAIL\b")
# Where an error line can be: every line on which _ERROR_LINE matches holds one of these
# words once the text is folded as `re` folds case (str.lower, after the four letters
# that `re`'s IGNORECASE matches to ASCII but lower() does not), or starts with an E
# line. Searched over the whole payload and checked line by line after: a search per
# line cost a 1 MB log of 33,000 lines 65 ms, these 20 (plain words, case-sensitive).
_ERROR_WORDS = re2.compile("error|exception|traceback|fail|fatal|panic|assert|denied|"
                           "not found|cannot|undefined|segmentation fault|✕|✗")
"""Searched in the folded text's UTF-8 bytes (RE2: 3 ms on 1 MB where `re` took 13)."""
_SPACE = (r"[\t\n\x0b\x0c\r\x{1c}-\x{1f} \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}"
          r"\x{2029}\x{202f}\x{205f}\x{3000}]")
"""What `re`'s \\s matches in a str (the characters str.isspace() accepts), for RE2."""
_E_LINES = re2.compile(rf"(?m)^{_SPACE}*[Ee]{_SPACE}{{2,}}")


@dataclass(frozen=True)
class Preview:
    """A preview and how it was chosen."""

    text: str
    strategy: str
    lines_total: int
    tokens: int


def _cut(line: str) -> str:
    line = escape_controls(line.rstrip())
    return line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + "…"


def _payload_lines(text: str) -> list[str]:
    """Lines as recall counts them: split on ``\n``, a final newline ends the last line,
    a CRLF ending is one line ending."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def _fill(counter: TokenCounter, budget: int, lines: Iterable[str]) -> list[str]:
    """The first ``lines`` that fit in ``budget`` tokens (a line costs one more, for its
    newline); lines after the first that does not fit are never made."""
    out: list[str] = []
    used = 0
    for line in lines:
        cost = counter.count(line) + 1
        if used + cost > budget:
            break
        out.append(line)
        used += cost
    return out


def _error_lines(text: str, lines: list[str]) -> list[int]:
    """The indexes of the lines on which :data:`_ERROR_LINE` matches (in their first 500
    characters): the lines a search per line finds, by checking only the candidate lines
    the whole-text searches above point at (a match spanning lines marks each)."""
    # U+0130, U+0131, U+017F: what IGNORECASE matches to i, i, s and lower() does not
    # (str.translate would cost 55 ms on 1 MB; a replace costs one pass)
    folded = text.replace("\u0130", "i").replace("\u0131", "i").replace("\u017f", "s").lower()
    encoded = folded.encode("utf-8", "surrogatepass")
    # Lines are counted in each searched text itself: lower() keeps every newline.
    candidates = _lines_of([m.span() for m in _ERROR_WORDS.finditer(encoded)], encoded,
                           b"\n")
    raw = text.encode("utf-8", "surrogatepass")
    candidates |= _lines_of([m.span() for m in _E_LINES.finditer(raw)], raw, b"\n")
    return [i for i in sorted(candidates)
            if i < len(lines) and _ERROR_LINE.search(lines[i][:500])]


def _lines_of(spans: list[tuple[int, int]], text: Any, newline: Any) -> set[int]:
    """The indexes of the lines the ``spans`` of ``text`` (str or bytes) touch."""
    found: set[int] = set()
    line = cursor = 0
    for start, end in sorted(spans):
        if start > cursor:
            line += text.count(newline, cursor, start)
            cursor = start
        found.update(range(line, line + text.count(newline, start, end) + 1))
    return found


def _errors(counter: TokenCounter, text: str, lines: list[str], budget: int,
            ) -> list[str] | None:
    hits = _error_lines(text, lines)
    if not hits:
        return None
    tail_start = max(len(lines) - 3, 0)
    before_tail = [i for i in hits if i < tail_start]
    picked = (_numbered(lines, i) for i in before_tail)
    summary = [_numbered(lines, i) for i in range(tail_start, len(lines)) if lines[i].strip()]
    head = _fill(counter, max(budget - sum(counter.count(s) + 1 for s in summary), 0), picked)
    more = len(before_tail) - len(head)
    body = head + ([f"… {more} more error lines (recall op=grep)"] if more > 0 else [])
    return _fill(counter, budget, body + summary)


def _outline(counter: TokenCounter, text: str, budget: int, path: str | None,
             ) -> list[str] | None:
    language = detect_language(text, path)
    if language is None:
        return None
    try:
        symbols = outline_symbols(text, language)
    except InvalidInputError:
        return None
    if len(symbols) < 2:
        return None
    lines = [f"{s.line}: {'  ' * s.depth}{s.kind} {escape_controls(s.name)}"
             for s in symbols]
    kept = _fill(counter, budget - 8, [f"[{language} outline]", *lines])
    if len(kept) - 1 < len(lines):
        kept.append(f"… {len(lines) - len(kept) + 1} more symbols (recall op=outline)")
    return kept


def _numbered(lines: list[str], i: int) -> str:
    return f"{i + 1}:{_cut(lines[i])}"


def _head_tail(counter: TokenCounter, lines: list[str], budget: int) -> list[str]:
    # A line costs at least one token, so only the first and last `budget` lines can be
    # shown: only those are numbered and cut (a 1 MB payload has tens of thousands).
    total = len(lines)
    head = _fill(counter, budget * 2 // 3,
                 (_numbered(lines, i) for i in range(min(total, budget))))
    if len(head) == total:
        return head
    tail = _fill(counter, budget - sum(counter.count(h) + 1 for h in head) - 10,
                 (_numbered(lines, i)
                  for i in range(total - 1, max(len(head), total - budget) - 1, -1)))[::-1]
    gap = total - len(head) - len(tail)
    middle = [f"… {gap} lines omitted (recall op=range) …"] if gap > 0 else []
    return head + middle + tail


def make_preview(text: str, *, budget_tokens: int, counter: TokenCounter, kind: str,
                 path: str | None = None) -> Preview:
    """The most useful preview of ``text`` within ``budget_tokens``."""
    lines = _payload_lines(text)
    if budget_tokens <= 0 or not lines:
        return Preview("", "none", len(lines), 0)
    # An error's error lines come first; a file's outline beats words like "error" in
    # its code; for other output (logs, test runs) error lines beat a guessed outline.
    order = ["errors", "outline"] if kind == "error" or not path else ["outline", "errors"]
    chosen: list[str] | None = None
    strategy = "head_tail"
    for candidate in order:
        if candidate == "errors":
            chosen = _errors(counter, text, lines, budget_tokens)
            if chosen is not None and kind != "error" and len(chosen) < 2:
                chosen = None
        else:
            chosen = _outline(counter, text, budget_tokens, path)
        if chosen is not None:
            strategy = candidate
            break
    if chosen is None:
        chosen = _head_tail(counter, lines, budget_tokens)
    body = "\n".join(chosen)
    return Preview(body, strategy, len(lines), counter.count(body))
