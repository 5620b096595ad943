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
from dataclasses import dataclass

from osiris.core.display import escape_controls
from osiris.core.outline import detect_language, outline_symbols
from osiris.core.tokens import TokenCounter
from osiris.errors import InvalidInputError

MAX_LINE_CHARS = 160
# Lines that report a failure in logs, test output and tracebacks (simple, linear).
_ERROR_LINE = re.compile(
    r"(?i)\b(error|exception|traceback|failed|failure|fatal|panic|assert(ion)?|denied|"
    r"not found|cannot|undefined|segmentation fault)\b|^\s*E\s{2,}|✕|✗|FAIL\b")


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


def _fill(counter: TokenCounter, budget: int, lines: list[str]) -> list[str]:
    out: list[str] = []
    used = 0
    for line in lines:
        cost = counter.count(line) + 1
        if used + cost > budget:
            break
        out.append(line)
        used += cost
    return out


def _errors(counter: TokenCounter, lines: list[str], budget: int) -> list[str] | None:
    hits = [i for i, line in enumerate(lines) if _ERROR_LINE.search(line[:500])]
    if not hits:
        return None
    tail_start = max(len(lines) - 3, 0)
    picked = [f"{i + 1}:{_cut(lines[i])}" for i in hits if i < tail_start]
    summary = [f"{i + 1}:{_cut(lines[i])}" for i in range(tail_start, len(lines))
               if lines[i].strip()]
    head = _fill(counter, max(budget - sum(counter.count(s) + 1 for s in summary), 0), picked)
    more = len(picked) - len(head)
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


def _head_tail(counter: TokenCounter, lines: list[str], budget: int) -> list[str]:
    numbered = [f"{i + 1}:{_cut(line)}" for i, line in enumerate(lines)]
    head = _fill(counter, budget * 2 // 3, numbered)
    if len(head) == len(numbered):
        return head
    tail = _fill(counter, budget - sum(counter.count(h) + 1 for h in head) - 10,
                 numbered[len(head):][::-1])[::-1]
    gap = len(numbered) - len(head) - len(tail)
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
            chosen = _errors(counter, lines, budget_tokens)
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
