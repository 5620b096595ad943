"""Secret scrubbing: runs on every payload before it is hashed, counted or stored.

Rules are versioned data (``data/secret_rules.toml``, bundled with the package) and
are compiled with RE2, a linear-time engine: no payload, however hostile, can make
scrubbing backtrack. A found secret is replaced by ``[REDACTED:<kind>:<hash8>]`` so the
agent still knows that something of that kind was there, and two occurrences of the
same secret keep the same marker; ``hash8`` is the first 8 hex digits of a salted
SHA-256 of the secret (32 bits: enough to tell secrets apart, far too few to confirm
a guess of a strong one).
"""

from __future__ import annotations

import functools
import hashlib
import math
import tomllib
from collections import Counter
from dataclasses import dataclass
from importlib import resources
from typing import Any

import re2

_MARKER_SALT = b"osiris-redaction-v1:"


@dataclass(frozen=True)
class SecretRule:
    """One compiled scrubbing rule."""

    id: str
    kind: str
    keywords: tuple[str, ...]
    pattern: Any  # re2._Regexp; the binding ships no type stubs
    group: int
    entropy_min: float
    allow: tuple[str, ...]


@dataclass(frozen=True)
class Finding:
    """One secret found in a payload (positions index the original text)."""

    rule_id: str
    kind: str
    start: int
    end: int
    marker: str


@dataclass(frozen=True)
class ScrubResult:
    """The scrubbed text and what was replaced."""

    text: str
    findings: tuple[Finding, ...]
    rules_version: str

    @property
    def redacted(self) -> int:
        """Number of secrets replaced."""
        return len(self.findings)


@dataclass(frozen=True)
class RuleSet:
    """A versioned, compiled set of rules."""

    version: str
    rules: tuple[SecretRule, ...]


def compile_rules(document: dict[str, Any]) -> RuleSet:
    """Compile a parsed rules document (same shape as ``secret_rules.toml``)."""
    options = re2.Options()
    options.log_errors = False
    options.max_mem = 64 << 20
    compiled = []
    for raw in document["rule"]:
        try:
            pattern = re2.compile(raw["regex"], options)
        except re2.error as exc:
            raise ValueError(f"secret rule {raw['id']!r} does not compile in RE2: {exc}") from exc
        compiled.append(SecretRule(
            id=raw["id"], kind=raw["kind"],
            keywords=tuple(k.lower() for k in raw.get("keywords", ())),
            pattern=pattern, group=int(raw.get("group", 0)),
            entropy_min=float(raw.get("entropy_min", 0.0)),
            allow=tuple(a.lower() for a in raw.get("allow", ())),
        ))
    return RuleSet(version=str(document["version"]), rules=tuple(compiled))


@functools.lru_cache(maxsize=1)
def default_rules() -> RuleSet:
    """The rules bundled with this version of OSIRIS."""
    text = resources.files("osiris.core").joinpath("data/secret_rules.toml").read_text("utf-8")
    return compile_rules(tomllib.loads(text))


def shannon_entropy(value: str) -> float:
    """Bits per character of ``value``."""
    if not value:
        return 0.0
    counts = Counter(value)
    total = len(value)
    return -sum(n / total * math.log2(n / total) for n in counts.values())


def marker_for(kind: str, secret: str) -> str:
    """The replacement text for a secret of a given kind."""
    digest = hashlib.sha256(_MARKER_SALT + secret.encode("utf-8")).hexdigest()[:8]
    return f"[REDACTED:{kind}:{digest}]"


def scrub(text: str, rules: RuleSet | None = None) -> ScrubResult:
    """Replace every secret in ``text``; return the new text and the findings."""
    rules = rules or default_rules()
    lowered = text.lower()
    spans: list[tuple[int, int, SecretRule]] = []
    for rule in rules.rules:
        if rule.keywords and not any(k in lowered for k in rule.keywords):
            continue
        for match in rule.pattern.finditer(text):
            start, end = match.span(rule.group)
            if start < 0 or end <= start:
                continue
            secret = text[start:end]
            if rule.allow and any(a in secret.lower() for a in rule.allow):
                continue
            if rule.entropy_min and shannon_entropy(secret) < rule.entropy_min:
                continue
            spans.append((start, end, rule))
    if not spans:
        return ScrubResult(text=text, findings=(), rules_version=rules.version)
    # Overlaps (a JWT inside a quoted assignment, say): keep the earliest, then longest.
    spans.sort(key=lambda s: (s[0], -(s[1] - s[0])))
    kept: list[tuple[int, int, SecretRule]] = []
    for span in spans:
        if kept and span[0] < kept[-1][1]:
            if span[1] > kept[-1][1]:
                prev = kept[-1]
                kept[-1] = (prev[0], span[1], prev[2])
            continue
        kept.append(span)
    pieces: list[str] = []
    findings: list[Finding] = []
    cursor = 0
    for start, end, rule in kept:
        marker = marker_for(rule.kind, text[start:end])
        pieces.append(text[cursor:start])
        pieces.append(marker)
        findings.append(Finding(rule.id, rule.kind, start, end, marker))
        cursor = end
    pieces.append(text[cursor:])
    return ScrubResult(text="".join(pieces), findings=tuple(findings),
                       rules_version=rules.version)


class ScrubbedText(str):
    """A string that has been scrubbed, carrying what the scrub replaced (so that a
    payload is scrubbed once, where it enters OSIRIS, and still counts its redactions)."""

    scrub: ScrubResult

    def __new__(cls, result: ScrubResult) -> ScrubbedText:
        text = super().__new__(cls, result.text)
        text.scrub = result
        return text

    def __reduce__(self) -> tuple[type[str], tuple[str]]:
        # Copies (dataclasses.asdict deep-copies) and pickles are plain strings.
        return (str, (str(self),))


def scrub_once(text: str, rules: RuleSet | None = None) -> ScrubResult:
    """The scrub of ``text``: the one already done when it is :class:`ScrubbedText`."""
    if isinstance(text, ScrubbedText) and rules is None:
        return text.scrub
    return scrub(text, rules)
