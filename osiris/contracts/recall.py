"""Answers of ``recall``: a stored payload (a ref) expanded server-side, only as far as the
agent asks, by one of seven ops: ``grep``, ``range``, ``head``, ``tail``, ``outline``,
``aggregate`` and ``jsonl``.

Every answer carries the text shown (never more than ``max_tokens``) and ``next``: when
the answer was cut, the recall arguments that continue exactly where it stopped (pass
them back with the same ``ref``; pages never overlap and never skip a line), else None.
``head`` and ``tail`` continue with a ``range``; ``aggregate`` never continues (raise
``n`` or ``max_tokens`` instead). Lines are split on ``\\n`` and numbered from 1, the way
``grep -n`` and ``sed -n`` count them. Payload text shows control characters as escapes.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict

JsonlOp = Literal["eq", "ne", "gt", "ge", "lt", "le", "contains", "regex", "exists"]
"""The comparisons a ``jsonl`` ``where`` condition may use."""


# -- continuations ----------------------------------------------------------------------

class RecallNextGrep(TypedDict):
    """The arguments that continue a cut ``grep`` answer."""

    op: Literal["grep"]
    """Always ``grep``."""
    pattern: str
    """The pattern asked for; ``ignore_case`` is folded in as a leading ``(?i)``."""
    context: int
    """Lines of context around each match, as asked (0 by default)."""
    n: int
    """The most matching lines one answer shows, as asked (50 by default)."""
    start: int
    """The line (from 1) the next page starts scanning at."""
    max_tokens: NotRequired[int]
    """The answer size asked for, in tokens, capped at 25,000 (present only when the
    call passed ``max_tokens``)."""


class RecallNextRange(TypedDict):
    """The arguments that continue a cut ``range``, ``head`` or ``tail`` answer: the lines
    it left out, as a ``range``."""

    op: Literal["range"]
    """Always ``range`` (a cut ``head`` or ``tail`` continues as a range too)."""
    start: int
    """First line (from 1) left out."""
    end: int
    """Last line left out (inclusive)."""
    max_tokens: NotRequired[int]
    """The answer size asked for, in tokens, capped at 25,000 (present only when the
    call passed ``max_tokens``)."""


class RecallNextOutline(TypedDict):
    """The arguments that continue a cut ``outline`` answer."""

    op: Literal["outline"]
    """Always ``outline``."""
    language: str
    """The language the outline was read in (asked for, or detected), e.g. ``python``."""
    start: int
    """The line (from 1) of the first symbol the next page shows."""
    max_tokens: NotRequired[int]
    """The answer size asked for, in tokens, capped at 25,000 (present only when the
    call passed ``max_tokens``)."""


class JsonlCondition(TypedDict):
    """One ``where`` condition of a ``jsonl`` call, as the agent wrote it."""

    field: str
    """Dotted path of the field tested, e.g. ``error.type`` (a digit indexes a list)."""
    op: NotRequired[JsonlOp]
    """The comparison (``eq`` when absent)."""
    value: NotRequired[Any]
    """The JSON value compared with; ``exists`` takes a boolean (true when absent), every
    other op needs one."""


class RecallNextJsonl(TypedDict):
    """The arguments that continue a cut ``jsonl`` answer (the filters repeated)."""

    op: Literal["jsonl"]
    """Always ``jsonl``."""
    n: int
    """The most records one answer shows, as asked (50 by default)."""
    start: int
    """The record number (a line, or an index from 1 in a JSON-array payload) the next
    page starts at."""
    where: NotRequired[dict[str, Any] | list[JsonlCondition]]
    """The ``where`` filter as passed: ``{field: value}`` (all equal) or a list of
    conditions (absent when the call had none)."""
    fields: NotRequired[list[str]]
    """The dotted fields each record is projected onto, as passed (absent when the call
    had none: whole records)."""
    max_tokens: NotRequired[int]
    """The answer size asked for, in tokens, capped at 25,000 (present only when the
    call passed ``max_tokens``)."""


# -- answers ----------------------------------------------------------------------------

class RecallGrep(TypedDict):
    """``recall(op="grep")``: the lines matching an RE2 pattern, as ``grep -n -C`` prints
    them."""

    ref: str
    """The ref recalled (``mem://sha256:…``)."""
    op: Literal["grep"]
    """Always ``grep``."""
    text: str
    """``{line}:{text}`` for a matching line, ``{line}-{text}`` for a context line, ``--``
    between groups; lines over 400 characters cut around their matches; a last line says
    where the answer stopped (or ``no matches in lines …``)."""
    truncated: bool
    """Whether the answer stops short of every match from ``start`` on (cut by
    ``max_tokens`` or ``n``, or one line shortened to fit)."""
    next: RecallNextGrep | None
    """The arguments that continue it (None when nothing is left)."""
    tokens: int
    """Tokens of ``text``, as the server counted them: what the answer adds to the
    context (at most ``max_tokens``)."""
    lines_total: int
    """Lines in the whole payload."""
    matches: int
    """Matching lines shown in this answer (not in the whole payload: context lines and
    later pages are not counted)."""


class RecallLines(TypedDict):
    """``recall(op="range" | "head" | "tail")``: consecutive lines of the payload."""

    ref: str
    """The ref recalled (``mem://sha256:…``)."""
    op: Literal["range", "head", "tail"]
    """The op asked for: ``range`` (lines ``start``..``end``), ``head`` or ``tail`` (the
    first or last ``n`` lines, 20 by default)."""
    text: str
    """``{line}:{text}`` per line; when cut, a last line says which lines were left out
    (a ``tail`` keeps the last lines and leaves out the first ones); ``(empty payload)``
    for an empty payload."""
    truncated: bool
    """Whether lines asked for were left out (or the one line shown was shortened) to fit
    ``max_tokens``."""
    next: RecallNextRange | None
    """The ``range`` of the lines left out (None when none were)."""
    tokens: int
    """Tokens of ``text``, as the server counted them: what the answer adds to the
    context (at most ``max_tokens``)."""
    lines_total: int
    """Lines in the whole payload."""


class RecallOutline(TypedDict):
    """``recall(op="outline")``: the declarations or headings of code or a document,
    with their line numbers."""

    ref: str
    """The ref recalled (``mem://sha256:…``)."""
    op: Literal["outline"]
    """Always ``outline``."""
    text: str
    """``{line}: {indent}{kind} {name}`` per symbol (``(no <language> symbols found)``
    when there are none); when cut, a last line says where to continue."""
    truncated: bool
    """Whether symbols were left out to fit ``max_tokens``."""
    next: RecallNextOutline | None
    """The arguments that continue it (None when every symbol from ``start`` is shown)."""
    tokens: int
    """Tokens of ``text``, as the server counted them: what the answer adds to the
    context (at most ``max_tokens``)."""
    lines_total: int
    """Lines in the whole payload."""


class RecallAggregate(TypedDict):
    """``recall(op="aggregate")``: lines counted by key (a pattern's capture or JSON
    fields), most frequent first."""

    ref: str
    """The ref recalled (``mem://sha256:…``)."""
    op: Literal["aggregate"]
    """Always ``aggregate``."""
    text: str
    """``{count}\\t{key}`` per group (top ``n``; the keys of several fields are
    tab-separated, ``(missing)`` for an absent field, ``(empty)`` for an empty key),
    then ``total matching lines: …`` with the non-JSON lines skipped and the groups not
    shown."""
    truncated: bool
    """Whether groups were left out (by ``n`` or ``max_tokens``)."""
    next: None
    """Always None: an aggregate does not page (raise ``n`` or ``max_tokens``)."""
    tokens: int
    """Tokens of ``text``, as the server counted them: what the answer adds to the
    context (at most ``max_tokens``)."""
    lines_total: int
    """Lines in the whole payload."""
    matches: int
    """Lines counted in all groups, shown or not (matching the pattern, or JSON records
    with ``fields``)."""


class RecallJsonl(TypedDict):
    """``recall(op="jsonl")``: the JSON records that satisfy every ``where`` condition,
    projected onto ``fields``."""

    ref: str
    """The ref recalled (``mem://sha256:…``)."""
    op: Literal["jsonl"]
    """Always ``jsonl``."""
    text: str
    """``{record number}:{compact JSON}`` per record, then notes: ``no matching records
    in lines …``, where to continue, non-JSON lines skipped."""
    truncated: bool
    """Whether matching records were left out (by ``n`` or ``max_tokens``, or the one
    record shown was shortened)."""
    next: RecallNextJsonl | None
    """The arguments that continue it (None when no matching record is left)."""
    tokens: int
    """Tokens of ``text``, as the server counted them: what the answer adds to the
    context (at most ``max_tokens``)."""
    lines_total: int
    """Lines in the whole payload (a JSON-array payload numbers its records by index, not
    by line)."""
    matches: int
    """Matching records shown in this answer (not in the whole payload)."""


RecallAnswer = RecallGrep | RecallLines | RecallOutline | RecallAggregate | RecallJsonl
"""What ``recall`` answers, by op."""
