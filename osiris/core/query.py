"""Server-side filters behind ``recall(ref, op=...)``: grep, range, head, tail, outline,
aggregate and jsonl over the bytes of a stored payload.

Every filter is pure and linear in the payload. Regular expressions, the caller's and
ours, run in RE2: no backtracking, so no pattern can stall the server. An answer never
exceeds ``max_tokens`` as counted by the caller's :class:`TokenCounter`; when one is cut,
its last line says so and :attr:`QueryResult.next` holds the recall arguments that
continue exactly where it stopped (pages never overlap and never skip a line), written
only with arguments the MCP recall tool accepts, so it can be passed back verbatim.
Lines are split on ``\\n`` only and numbered from 1, the way ``grep -n`` and ``sed -n``
count them, so line numbers agree across every op.

Payload text in an answer shows control characters as escapes
(:func:`osiris.core.display.escape_controls`): it matches the payload everywhere except
where such a character occurs, so a line copied into an edit differs from the file only
there; ``osiris://ref/{ref}`` returns the exact bytes. Patterns match the raw bytes.
"""

from __future__ import annotations

import itertools
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import re2

from osiris.core.display import escape_controls
from osiris.core.outline import (
    LANGUAGES,
    detect_language,
    line_options,
    normalize_language,
    outline_symbols,
)
from osiris.core.tokens import TokenCounter
from osiris.errors import InvalidInputError

MAX_PATTERN_CHARS = 2_000
MAX_LINE_CHARS = 400
MIN_MAX_TOKENS = 50
MAX_N = 10_000
MAX_CONTEXT = 100


@dataclass(frozen=True)
class QueryResult:
    """One filtered answer: the text for the agent and how to continue it."""

    text: str
    truncated: bool
    next: dict[str, Any] | None
    lines_total: int
    returned_lines: int
    matches: int | None = None
    tokens: int = 0


# --- lines, patterns, token budgets ---------------------------------------------------

@dataclass(frozen=True)
class _Lines:
    """A payload and the byte offset of every line start (plus one past the last line)."""

    buf: bytes
    starts: list[int]

    @classmethod
    def of(cls, data: bytes | str) -> _Lines:
        buf = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        parts = buf.split(b"\n")
        if not parts[-1]:  # a final newline ends the last line; it does not start one
            parts.pop()
        return cls(buf, list(itertools.accumulate((len(p) + 1 for p in parts), initial=0)))

    @property
    def total(self) -> int:
        return len(self.starts) - 1

    def line_of(self, offset: int) -> int:
        """Line holding byte ``offset`` (``total + 1`` past the last line)."""
        return bisect_right(self.starts, offset)

    def text(self, line: int) -> str:
        raw = self.buf[self.starts[line - 1]:self.starts[line] - 1]
        return raw.decode("utf-8", "replace").removesuffix("\r")

    def shown(self, line: int) -> str:
        """Line ``line`` as an answer shows it (control characters escaped)."""
        return escape_controls(self.text(line))


def compile_pattern(pattern: object, *, ignore_case: bool = False) -> Any:
    """Compile a caller's pattern for line matching, or say what to pass instead."""
    if not isinstance(pattern, str) or not pattern:
        raise InvalidInputError("pattern must be a non-empty string: an RE2 regular "
                                "expression such as 'FAILED|Error'")
    if len(pattern.removeprefix("(?i)")) > MAX_PATTERN_CHARS:  # (?i): see _case_folded
        raise InvalidInputError(f"pattern has {len(pattern)} characters; the limit is "
                                f"{MAX_PATTERN_CHARS}: pass a shorter expression")
    try:
        return re2.compile("(?m)" + pattern, line_options(ignore_case=ignore_case))
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        shown = pattern if len(pattern) <= 80 else pattern[:80] + "…"
        raise InvalidInputError(
            f"pattern {shown!r} does not compile ({detail}). OSIRIS matches in linear time "
            "(RE2), so look-around ((?=…), (?!…), (?<=…), (?<!…)) and back-references (\\1) "
            "are not supported: rewrite the pattern without them") from exc


def _case_folded(pattern: str, ignore_case: bool) -> str:
    """``pattern`` with ``ignore_case`` folded in as RE2's ``(?i)`` flag.

    A continuation must pass the MCP recall schema as it stands, and that schema has
    no ``ignore_case`` (the tool description teaches ``(?i)`` instead, to keep the
    tool definitions small); the flag matches exactly what ``ignore_case`` does.
    """
    return f"(?i){pattern}" if ignore_case and not pattern.startswith("(?i)") else pattern


def _check_int(name: str, value: object, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{name} must be an integer, got {value!r}")
    if value < low or (high is not None and value > high):
        bounds = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise InvalidInputError(f"{name}={value} is out of range: pass {name} {bounds}")
    return value


def _check_start(start: object, last: int) -> int:
    start = _check_int("start", start, 1)
    if start > max(last, 1):
        raise InvalidInputError(f"start={start} is past the end: the payload has {last} "
                                f"lines; pass start between 1 and {max(last, 1)}")
    return start


def _first_match_per_line(regex: Any, lines: _Lines, start: int,
                          last: int | None = None) -> Iterator[tuple[int, Any]]:
    """(line, first match) for every matching line from ``start`` to ``last``.

    One ``finditer`` over the whole buffer is the cheap path; a second match on a line
    restarts the scan at the next line, so a line with a million matches costs one search.
    """
    last = lines.total if last is None else last
    pos, end = (lines.starts[start - 1], lines.starts[last]) if lines.total else (0, 0)
    while True:
        previous = 0
        for match in regex.finditer(lines.buf, pos, end):
            line = lines.line_of(match.start())
            if line > last:  # an empty match after the final newline is not a line
                return
            if line == previous:
                break
            previous = line
            yield line, match
        else:
            return
        if line == last:
            return
        pos = lines.starts[line]


@dataclass(frozen=True)
class _Fit:
    text: str
    kept: int  # rows kept, from the start (or from the end)
    cut: bool  # the one kept row was shortened to fit
    tokens: int


def _fit(rows: Sequence[str], *, counter: TokenCounter, max_tokens: int,
         footer: Callable[[int, bool], str], trim: Callable[[int], int] | None = None,
         from_end: bool = False) -> _Fit:
    """Keep as many rows as fit in ``max_tokens`` together with ``footer(kept, cut)``."""
    def render(k: int, first: str | None = None) -> str:
        kept = list(rows[len(rows) - k:] if from_end else rows[:k])
        if first is not None:
            kept[0] = first
        note = footer(k, first is not None)
        return "\n".join([*kept, note] if note else kept)

    # Estimate with per-row counts (cheap, bounded by the budget), then verify exactly.
    budget = max_tokens - counter.count(footer(max(len(rows) - 1, 0), False)) - 1
    used = k = 0
    for row in reversed(rows) if from_end else rows:
        if len(row) > 32 * max_tokens:  # no real text packs 32 characters into a token
            break
        used += counter.count(row) + 1
        if used > budget:
            break
        k += 1
    while True:
        k = trim(k) if trim is not None else k
        text = render(k)
        tokens = counter.count(text)
        if tokens <= max_tokens or k == 0:
            break
        k -= 1
    if k or not rows or from_end:
        return _Fit(text, k, False, tokens)
    # Not even one row fits: show its start, so that following `next` always advances.
    row, lo, hi = rows[0], 0, min(len(rows[0]), 8 * max_tokens)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if counter.count(render(1, row[:mid] + "…")) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    text = render(1, row[:lo] + "…")
    return _Fit(text, 1, True, counter.count(text))


def _clip(text: str) -> str:
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS] + "…"


MAX_WINDOWS = 3


def _clip_around(text: str, columns: list[int]) -> str:
    """A long line cut to windows that show its matches (at most three, at ``columns``)."""
    if len(text) <= MAX_LINE_CHARS:
        return text
    width = MAX_LINE_CHARS // min(len(columns), MAX_WINDOWS)
    windows: list[tuple[int, int]] = []
    for column in columns[:MAX_WINDOWS]:
        begin = min(max(column - width // 3, 0), len(text) - width)
        if windows and begin <= windows[-1][1]:  # overlapping windows merge
            windows[-1] = (windows[-1][0], max(windows[-1][1], begin + width))
        else:
            windows.append((begin, begin + width))
    pieces = [text[b:e] for b, e in windows]
    return (("…" if windows[0][0] else "") + "…".join(pieces)
            + ("…" if windows[-1][1] < len(text) else ""))


def _match_columns(regex: Any, lines: _Lines, line: int) -> list[int]:
    """Character columns of the first matches on one line (only long lines need them)."""
    begin, end = lines.starts[line - 1], lines.starts[line] - 1
    if end - begin <= MAX_LINE_CHARS:
        return [0]
    columns = []
    for match in itertools.islice(regex.finditer(lines.buf, begin, end), MAX_WINDOWS):
        columns.append(len(lines.buf[begin:match.start()].decode("utf-8", "replace")))
    return columns or [0]


def _continue_note(line: int, reason: str) -> str:
    return f"… truncated at line {line} ({reason}); continue with start={line}"


# --- grep, range, head, tail ------------------------------------------------------------

def grep(data: bytes | str, pattern: str, *, counter: TokenCounter, max_tokens: int,
         context: int = 0, n: int = 50, ignore_case: bool = False,
         start: int = 1) -> QueryResult:
    """Lines matching an RE2 ``pattern``, numbered like ``grep -n -C context``.

    At most ``n`` matching lines, scanning from line ``start``; lines longer than
    400 characters are cut (a matching line around its matches). An answer is exactly the
    full ``grep`` output from line
    ``start`` on (including the after-context of a match just before it), so following
    ``next`` yields every line of the full answer once.
    """
    regex = compile_pattern(pattern, ignore_case=ignore_case)
    context = _check_int("context", context, 0, MAX_CONTEXT)
    n = _check_int("n", n, 1, MAX_N)
    max_tokens = _check_int("max_tokens", max_tokens, MIN_MAX_TOKENS)
    lines = _Lines.of(data)
    start = _check_start(start, lines.total)
    matches = list(itertools.islice(_first_match_per_line(regex, lines, start), n + 1))
    found = [line for line, _ in matches]
    shown, more = set(found[:n]), len(found) > n
    # Where the matches sit in each matching line: a long line is cut around them.
    columns = {line: _match_columns(regex, lines, line) for line, _ in matches[:n]}
    # With more matches to come, after-context stops short of the next one, which the
    # continuation shows as a match.
    stop = found[n] - 1 if more else lines.total
    spans = [(max(m - context, start), min(m + context, stop)) for m in found[:n]]
    if context and start > 1:  # a continuation owes the after-context of the match before
        before = [line for line, _ in _first_match_per_line(
            regex, lines, max(start - context, 1), start - 1)]
        if before:
            spans.insert(0, (start, min(before[-1] + context, stop)))
    rows: list[str] = []
    row_lines: list[int | None] = []
    shown_to = start - 1
    for wanted_lo, hi in spans:
        lo = max(wanted_lo, shown_to + 1)  # overlapping groups merge, as in grep
        if lo > hi:
            continue
        if context and rows and lo > shown_to + 1:
            rows.append("--")
            row_lines.append(None)
        for i in range(lo, hi + 1):
            # Cut on the raw line (match columns count raw characters), then escape.
            text = _clip_around(lines.text(i), columns[i]) if i in shown \
                else _clip(lines.text(i))
            text = escape_controls(text)
            rows.append(f"{i}{':' if i in shown else '-'}{text}")
            row_lines.append(i)
        shown_to = hi

    def trim(k: int) -> int:
        while k < len(rows) and k and row_lines[k - 1] is None:  # no dangling separator
            k -= 1
        return k

    def resume(k: int, cut: bool) -> int | None:
        if k == len(rows) and not cut and not more:
            return None
        at = (row_lines[k - 1] or 0) + 1 if k else start
        return at if at <= lines.total else None

    def footer(k: int, cut: bool) -> str:
        if not rows:
            return f"no matches in lines {start}–{lines.total}" if lines.total \
                else "(empty payload)"
        at = resume(k, cut)
        if cut:
            return f"… line {row_lines[0]} cut to fit max_tokens" + (
                f"; continue with start={at}" if at else "")
        return _continue_note(at, "max_tokens" if k < len(rows) else f"n={n}") if at else ""

    fit = _fit(rows, counter=counter, max_tokens=max_tokens, footer=footer, trim=trim)
    at = resume(fit.kept, fit.cut)
    kept = row_lines[:fit.kept]
    return QueryResult(
        text=fit.text, truncated=at is not None or fit.cut, lines_total=lines.total,
        next=None if at is None else {"op": "grep", "pattern": _case_folded(pattern, ignore_case),
                                      "context": context, "n": n, "start": at},
        returned_lines=sum(1 for i in kept if i is not None),
        matches=sum(1 for i in kept if i in shown), tokens=fit.tokens)


def _window(lines: _Lines, first: int, last: int, *, counter: TokenCounter, max_tokens: int,
            from_end: bool = False) -> QueryResult:
    """Lines ``first``..``last`` numbered ``"{line}:{text}"``; a tail keeps the last ones."""
    max_tokens = _check_int("max_tokens", max_tokens, MIN_MAX_TOKENS)
    wanted = max(last - first + 1, 0)
    cap = min(wanted, max_tokens)  # every row costs at least a token: more never fit
    numbers = range(last - cap + 1, last + 1) if from_end else range(first, first + cap)
    rows = [f"{i}:{lines.shown(i)}" for i in numbers]

    def missing(k: int) -> tuple[int, int] | None:
        """The lines the answer leaves out (to fetch with range), if any."""
        if from_end:
            return (first, last - k) if k < wanted else None
        at = first + k
        return (at, last) if at <= last else None

    def footer(k: int, cut: bool) -> str:
        if not wanted:
            return "(empty payload)"
        gap = missing(k)
        if from_end and gap:
            return f"… lines {gap[0]}–{gap[1]} omitted (max_tokens); see range " \
                   f"start={gap[0]} end={gap[1]}"
        if cut:
            return f"… line {first} cut to fit max_tokens" + (
                f"; continue with start={gap[0]}" if gap else "")
        return _continue_note(gap[0], "max_tokens") if gap else ""

    fit = _fit(rows, counter=counter, max_tokens=max_tokens, footer=footer,
               from_end=from_end)
    gap = missing(fit.kept)
    return QueryResult(
        text=fit.text, truncated=gap is not None or fit.cut, lines_total=lines.total,
        next={"op": "range", "start": gap[0], "end": gap[1]} if gap else None,
        returned_lines=fit.kept, tokens=fit.tokens)


def range_lines(data: bytes | str, *, start: int, end: int | None, counter: TokenCounter,
                max_tokens: int) -> QueryResult:
    """Lines ``start``..``end`` inclusive (``end=None``: to the last line)."""
    lines = _Lines.of(data)
    start = _check_int("start", start, 1)
    if not lines.total:
        raise InvalidInputError("the payload is empty: there are no lines to read")
    if start > lines.total:
        raise InvalidInputError(f"start={start} is past the end: the payload has "
                                f"{lines.total} lines; pass start between 1 and {lines.total}")
    last = lines.total if end is None else _check_int("end", end, 1)
    if last < start:
        raise InvalidInputError(f"end={last} is before start={start}: pass end >= start, "
                                "or end=None to read to the last line")
    return _window(lines, start, min(last, lines.total), counter=counter,
                   max_tokens=max_tokens)


def head(data: bytes | str, *, n: int | None, counter: TokenCounter,
         max_tokens: int) -> QueryResult:
    """The first ``n`` lines (20 when ``n`` is None)."""
    lines = _Lines.of(data)
    count = _check_int("n", 20 if n is None else n, 1)
    return _window(lines, 1, min(count, lines.total), counter=counter, max_tokens=max_tokens)


def tail(data: bytes | str, *, n: int | None, counter: TokenCounter,
         max_tokens: int) -> QueryResult:
    """The last ``n`` lines (20 when ``n`` is None); when cut, the last lines are kept."""
    lines = _Lines.of(data)
    count = _check_int("n", 20 if n is None else n, 1)
    return _window(lines, max(lines.total - count + 1, 1), lines.total, counter=counter,
                   max_tokens=max_tokens, from_end=True)


def outline(data: bytes | str, *, counter: TokenCounter, max_tokens: int,
            language: str | None = None, path: str | None = None,
            start: int = 1) -> QueryResult:
    """Declarations or headings with their line numbers, ``"{line}: {indent}{kind} {name}"``.

    ``language`` defaults to :func:`detect_language`; ``start`` skips symbols before
    that line (it is how ``next`` continues a cut outline).
    """
    max_tokens = _check_int("max_tokens", max_tokens, MIN_MAX_TOKENS)
    start = _check_int("start", start, 1)
    lines = _Lines.of(data)
    text = lines.buf.decode("utf-8", "replace")
    lang = normalize_language(language) if language is not None else \
        detect_language(text, path)
    if lang is None:
        raise InvalidInputError("cannot tell the language of this payload: pass language= "
                                "one of " + ", ".join(LANGUAGES))
    symbols = [s for s in outline_symbols(text, lang) if s.line >= start]
    rows = [f"{s.line}: {'  ' * s.depth}{s.kind} {escape_controls(s.name)}"
            for s in symbols]

    def resume(k: int) -> int | None:
        return symbols[k].line if k < len(symbols) else None

    def footer(k: int, cut: bool) -> str:
        if not symbols:
            return f"(no {lang} symbols found)"
        at = resume(k)
        return _continue_note(at, "max_tokens") if at is not None else ""

    fit = _fit(rows, counter=counter, max_tokens=max_tokens, footer=footer)
    at = resume(fit.kept)
    return QueryResult(
        text=fit.text, truncated=at is not None or fit.cut, lines_total=lines.total,
        next=None if at is None else {"op": "outline", "language": lang, "start": at},
        returned_lines=fit.kept, tokens=fit.tokens)


