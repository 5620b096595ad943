"""Volatile tokens: what in a system head or tool contract busts the prompt cache.

A provider caches an exact prefix. A timestamp, a date, a UUID, a nonce, a counter
or a random id inside the cached prefix changes every session or every turn, so
the cache never hits. Detection runs RE2 patterns (linear time) and reports each
finding with its character and token position and a fix.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass
from typing import Any

import re2

from osiris.core.tokens import TokenCounter

_PATTERNS: tuple[tuple[str, str, str], ...] = (
    ("timestamp",
     r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?",
     "move it after the cached prefix (e.g. into the latest user turn)"),
    ("unix_time", r"\b1[5-9]\d{8}(?:\d{3})?\b",
     "move it after the cached prefix"),
    ("date", r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b|"
     r"\b(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.? \d{1,2},? \d{4}\b",
     "move it after the cached prefix, or pin it to the session's start date"),
    ("time", r"\b\d{1,2}:\d{2}:\d{2}\b",
     "move it after the cached prefix"),
    ("uuid", r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b",
     "pin it for the whole session, or move it after the cached prefix"),
    ("nonce", r"\b(?i:nonce|request[_ -]?id|session[_ -]?id|trace[_ -]?id|run[_ -]?id|"
     r"correlation[_ -]?id)\b\s*[:=]?\s*[A-Za-z0-9_.-]{6,}",
     "pin it for the whole session, or move it after the cached prefix"),
    ("counter", r"\b(?i:turn|step|request|iteration|attempt|call|message|session)\s*"
     r"(?i:#|no\.?|number)?\s*\d+\b(?:\s*(?:of|/)\s*\d+)?",
     "remove it from the cached prefix: it changes every turn"),
    ("hex_id", r"\b[0-9a-f]{16,}\b",
     "pin it for the whole session, or move it after the cached prefix"),
    ("random_id", r"\b[A-Za-z0-9_-]{20,}\b",
     "pin it for the whole session, or move it after the cached prefix"),
)


@dataclass(frozen=True)
class VolatileToken:
    """One cache-busting token found in a recorded head or contract."""

    kind: str
    text: str
    start: int
    end: int
    token_position: int
    suggestion: str

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


@functools.lru_cache(maxsize=1)
def _compiled() -> tuple[tuple[str, Any, str], ...]:
    options = re2.Options()
    options.log_errors = False
    return tuple((kind, re2.compile(p, options), s) for kind, p, s in _PATTERNS)


def _looks_random(text: str) -> bool:
    # A long identifier is random when it mixes cases and digits, unlike words_in_snake.
    has_digit = any(c.isdigit() for c in text)
    has_upper = any(c.isupper() for c in text)
    has_lower = any(c.islower() for c in text)
    return has_digit and has_upper and has_lower


def find_volatile(text: str, counter: TokenCounter, limit: int = 50) -> list[VolatileToken]:
    """Volatile tokens in ``text``, earliest first, overlaps resolved to the longest."""
    spans: list[tuple[int, int, str, str]] = []
    for kind, pattern, suggestion in _compiled():
        for match in pattern.finditer(text):
            start, end = match.span()
            if kind == "random_id" and not _looks_random(match.group()):
                continue
            spans.append((start, end, kind, suggestion))
    spans.sort(key=lambda s: (s[0], -(s[1] - s[0])))
    kept: list[tuple[int, int, str, str]] = []
    for span in spans:
        if kept and span[0] < kept[-1][1]:
            continue
        kept.append(span)
    out = []
    for start, end, kind, suggestion in kept[:limit]:
        out.append(VolatileToken(kind, text[start:end], start, end,
                                 counter.count(text[:start]), suggestion))
    return out
