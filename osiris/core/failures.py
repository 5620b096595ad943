"""Error signatures and test-run outcomes, normalised so that repeats are recognised.

The same failure rarely repeats byte for byte: temp paths, line numbers, addresses,
timings and ids change. The signature keeps the shape of the most telling error line
with those stripped, so "the same error" means the same mistake.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from osiris.core.hashing import sha256_hex

# All patterns are simple and linear (no nested quantifiers); inputs are bounded lines.
_ERROR_HINT = re.compile(
    r"(?i)(\w+(error|exception|failure)\b|\berror\b|\bfailed\b|\bfatal\b|\bpanic\b|"
    r"\bnot found\b|\bcannot\b|\bdenied\b|\bunable to\b|\bno such\b|\bundefined\b)")
_NAMED_ERROR = re.compile(r"\b\w*(Error|Exception|Failure)\b:\s*\S|^error(\[\w+\])?:\s*\S|"
                          r"\bE\d{4}\b")
_FAILING_TEST = re.compile(r"^(FAILED|FAIL|ERROR)\s+\S|^●\s+\S|✕")
_SUMMARY = re.compile(r"(?i)\b\d+ (passed|failed|skipped|errors?)\b|^tests?:\s+\d|"
                      r"test suites?:")
# Harness wrappers such as mini-swe-agent's <returncode>1</returncode> / <output> lines.
_TAG_ONLY = re.compile(r"^(<[/\w]+>)+(-?\d+)?(</\w+>)?$")
_NORMALISERS = (
    (re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                r"[0-9a-fA-F]{12}\b"), "<id>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<addr>"),
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?Z?"), "<ts>"),
    (re.compile(r"(?:[A-Za-z]:)?(?:[\w.~-]*[/\\])+[\w.@-]+"), "<path>"),
    (re.compile(r"\b[0-9a-f]{12,}\b"), "<hex>"),
    (re.compile(r"\d+(\.\d+)?"), "<n>"),
    (re.compile(r"\s+"), " "),
)
_TEST_COMMAND = re.compile(
    r"(?i)\b(pytest|py\.test|tox|nox|unittest|npm (run )?test|yarn test|pnpm test|jest|"
    r"vitest|mocha|go test|cargo test|mvn (-\S+ )*test|gradle test|rspec|phpunit|ctest|"
    r"make (check|test))\b")
_PASS_LINE = re.compile(r"(?i)(\b\d+ passed\b|\btests?:\s+\d+ passed\b|^ok\b|\bOK\b$|"
                        r"\ball tests passed\b|test result: ok)")
_FAIL_LINE = re.compile(r"(?i)(\b[1-9]\d* failed\b|^FAIL\b|^FAILED\b|"
                        r"\berrors? during collection\b|test result: FAILED|\b[1-9]\d* errors?\b)")


@dataclass(frozen=True)
class ErrorSignature:
    """A normalised error: the readable text and its hash (with the tool)."""

    text: str
    digest: str


def error_line(output: str) -> str:
    """The most telling line of an error output.

    A line that names an error with its message (``KeyError: 'x'``) beats a line that
    names a failing test (``FAILED t.py::a``, jest's ``●``), which beats any line with an
    error word; a runner's summary (``1 failed, 3 passed``) is the last resort, since it
    reads the same for every different failure.
    """
    lines = [line.strip() for line in output[-20_000:].splitlines()
             if line.strip() and not _TAG_ONLY.match(line.strip())]
    for pattern in (_NAMED_ERROR, _FAILING_TEST):
        for line in reversed(lines):
            if pattern.search(line[:400]) and not _SUMMARY.search(line[:400]):
                return line[:400]
    for line in reversed(lines):
        if _ERROR_HINT.search(line[:400]) and not _SUMMARY.search(line[:400]):
            return line[:400]
    for line in reversed(lines):
        if _ERROR_HINT.search(line[:400]):
            return line[:400]
    return lines[-1][:400] if lines else ""


def normalise(line: str) -> str:
    """``line`` with paths, numbers, addresses, ids and timestamps replaced."""
    text = line
    for pattern, replacement in _NORMALISERS:
        text = pattern.sub(replacement, text)
    return text.strip()[:200]


def error_signature(tool: str, output: str) -> ErrorSignature:
    """The signature of a failed call's output."""
    text = normalise(error_line(output))
    return ErrorSignature(text, sha256_hex(f"{tool}\u2016{text}"))


def is_test_command(command: str) -> bool:
    """Whether a shell command runs a test suite."""
    return bool(_TEST_COMMAND.search(command[:2000]))


def outcome_of_test_run(output: str, is_error: bool) -> bool | None:
    """True (passed), False (failed) or None (cannot tell) from a test run's output."""
    tail = [line.strip() for line in output[-5000:].splitlines() if line.strip()][-15:]
    failed = any(_FAIL_LINE.search(line) for line in tail)
    if failed or is_error:
        return False
    if any(_PASS_LINE.search(line) for line in tail):
        return True
    return None
