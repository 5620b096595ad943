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
import re
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
    keywords: tuple[str, ...] = ()
    """Every rule's keywords, in the order of :attr:`keyword_set`'s indices."""
    keyword_set: Any = None
    """All keywords as one RE2 set: one linear pass finds which of them a text holds
    (testing each with ``in`` cost 59 scans of the text; 20x slower on 45 KB)."""
    pattern_set: Any = None
    """Every rule's pattern as one RE2 set, indexed as :attr:`rules`: on a long text one
    pass tells which rules match anywhere, and only those are run to find where (each
    rule's own pass cost a 1 MB text 17 ms in all)."""

    def position(self, rule: SecretRule) -> int:
        """``rule``'s index in :attr:`rules` (and :attr:`pattern_set`)."""
        return self.rules.index(rule)

    def candidates(self, lowered: str) -> list[SecretRule]:
        """The rules worth running on ``lowered``: those without keywords, and those with a
        keyword in it (in rule order)."""
        if self.keyword_set is None:
            return [r for r in self.rules
                    if not r.keywords or any(k in lowered for k in r.keywords)]
        found = self.keyword_set.Match(lowered)
        if not found:  # most texts (a tool name, an argument) hold no keyword at all
            return [r for r in self.rules if not r.keywords]
        present = {self.keywords[i] for i in found}
        return [r for r in self.rules if not r.keywords or not present.isdisjoint(r.keywords)]


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
    keywords = tuple(sorted({k for rule in compiled for k in rule.keywords}))
    keyword_set = None
    if keywords:
        keyword_set = re2.Set.SearchSet(options)
        for keyword in keywords:
            keyword_set.Add(re.escape(keyword))
        keyword_set.Compile()
    pattern_set = re2.Set.SearchSet(options)
    for rule in compiled:
        pattern_set.Add(rule.pattern.pattern)
    try:
        pattern_set.Compile()
    except re2.error:  # too large for the memory budget: every rule runs on its own
        pattern_set = None
    return RuleSet(version=str(document["version"]), rules=tuple(compiled),
                   keywords=keywords, keyword_set=keyword_set, pattern_set=pattern_set)


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


class _CharOffsets:
    """str offsets of increasing byte offsets into UTF-8 ``data`` (one pass in all)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.byte = self.char = 0

    def of(self, byte: int) -> int:
        if byte < self.byte:  # a group before the last offset asked for: start over
            self.byte = self.char = 0
        self.char += len(self.data[self.byte:byte].decode("utf-8"))
        self.byte = byte
        return self.char


SET_FIRST_BYTES = 8 << 10
"""From this size on, :attr:`RuleSet.pattern_set` picks the rules to run."""
SHORT_TEXT = 200
"""Texts up to this length are scrubbed once per process with the bundled rules (tool
names, argument keys and small values recur on every call)."""


def scrub(text: str, rules: RuleSet | None = None) -> ScrubResult:
    """Replace every secret in ``text``; return the new text and the findings."""
    if rules is None and len(text) <= SHORT_TEXT:
        return _scrub_short(text)
    return _scrub(text, rules or default_rules())


@functools.lru_cache(maxsize=8192)
def _scrub_short(text: str) -> ScrubResult:
    return _scrub(text, default_rules())


def _scrub(text: str, rules: RuleSet) -> ScrubResult:
    lowered = text.lower()
    spans: list[tuple[int, int, SecretRule]] = []
    candidates = rules.candidates(lowered)
    # RE2 matches UTF-8: given a str, each rule would encode the whole text again (12 ms
    # a rule-set on 1 MB). Encoded once here; its byte offsets are the str's when the
    # text is ASCII, and are converted otherwise.
    encoded = text.encode("utf-8") if candidates else b""
    ascii_only = len(encoded) == len(text)
    if len(candidates) > 1 and len(encoded) >= SET_FIRST_BYTES \
            and rules.pattern_set is not None:
        matching = set(rules.pattern_set.Match(encoded) or ())
        candidates = [r for r in candidates if rules.position(r) in matching]
    for rule in candidates:
        chars = _CharOffsets(encoded)
        for match in rule.pattern.finditer(encoded):
            start, end = match.span(rule.group)
            if start < 0 or end <= start:
                continue
            if not ascii_only:
                start, end = chars.of(start), chars.of(end)
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
