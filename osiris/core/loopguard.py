"""LoopGuard: the five loop patterns of SPEC §5, escalating gently.

``fingerprint = sha256(tool ‖ canonical_args ‖ result_signature)``. From the task's
call history LoopGuard judges an intended call (precheck) or the call just observed:

| pattern | signal | verdict |
|---|---|---|
| exact_duplicate | same tool and args, nothing changed since | suggest_alternative (recall) |
| repeated_failure | same error signature ≥ 3 times | block + required_action |
| loop_pattern | same error with different args | note, warn at 3, block at 6 |
| oscillation | A/B/A/B with identical calls | warn, block at 8 |
| runaway | N calls that brought nothing new | warn at N, block at 2N |

"Since" always means since the last progress (a plan update, a new decision or
lesson, a success of the failing tool). Per-tool exemptions come from the
invariants file; users of other agents complain most about guards that halt
legitimate repetitive work, so every threshold is configurable.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from osiris.core.hashing import sha256_hex

PATTERNS = ("exact_duplicate", "repeated_failure", "loop_pattern", "oscillation", "runaway")
PROGRESS_TOOL = "osiris_plan"
READ_ONLY_TOOLS = frozenset({
    "Read", "Grep", "Glob", "LS", "WebFetch", "WebSearch", "TodoRead", "NotebookRead",
    "BashOutput", "osiris_recall", "recall", "read_file", "list_files", "search_files",
    "open", "goto", "scroll_up", "scroll_down", "find_file", "search_file", "search_dir",
    "file"})
MUTATING_TOOLS = frozenset({
    "Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch", "edit", "create",
    "str_replace_editor", "write_file", "insert", "osiris_plan"})


class CallRecord(NamedTuple):
    """One observed call, as LoopGuard needs it (a NamedTuple: every observe makes one
    per recent call, and a frozen dataclass's ``__init__`` cost 1 ms of it at 300)."""

    seq: int
    tool: str
    args_hash: str
    fingerprint: str
    family: str = ""
    """What failures are grouped by: the tool, or ``tool:program subcommand`` for shells."""
    is_error: bool = False
    error_signature: str | None = None
    error_text: str | None = None
    mutating: bool = False
    novel: bool = True
    """Whether the call brought a result never seen before in the task."""
    ref: str | None = None
    targets: tuple[str, ...] = ()
    """File names the call's arguments mention (to tell a fix attempt from a blind retry)."""


@dataclass(frozen=True)
class Exemption:
    """Tools (glob) for which some patterns are not checked."""

    tool: str
    patterns: tuple[str, ...] = PATTERNS


@dataclass(frozen=True)
class LoopConfig:
    """Thresholds and exemptions (overridable in ``[loopguard]`` of invariants.toml)."""

    repeated_failure_block: int = 3
    loop_warn: int = 3
    loop_block: int = 6
    oscillation_warn: int = 4
    oscillation_block: int = 8
    runaway_warn: int = 12
    runaway_block: int = 24
    exemptions: tuple[Exemption, ...] = field(default_factory=tuple)

    def exempt(self, names: tuple[str, ...], pattern: str) -> bool:
        """Whether ``pattern`` is not checked for a call known by ``names`` (its tool and,
        for shell calls, ``tool:program subcommand``)."""
        return any(fnmatch.fnmatchcase(name, e.tool) and pattern in e.patterns
                   for e in self.exemptions for name in names)


@dataclass(frozen=True)
class LoopFinding:
    """What LoopGuard saw, and what it asks for."""

    pattern: str
    level: str
    """note, warn, suggest_alternative or block."""
    message: str
    required_action: str | None = None
    alternative: dict[str, str] | None = None


def fingerprint(tool: str, args_hash: str, result_signature: str) -> str:
    """sha256(tool ‖ canonical args ‖ result signature)."""
    return sha256_hex(f"{tool}\u2016{args_hash}\u2016{result_signature}")


def is_mutating(tool: str) -> bool:
    """Whether a call may change the world (unknown tools, shells included, may)."""
    return tool not in READ_ONLY_TOOLS


def _since_progress(history: Sequence[CallRecord]) -> list[CallRecord]:
    for index in range(len(history) - 1, -1, -1):
        if history[index].tool == PROGRESS_TOOL:
            return list(history[index + 1:])
    return list(history)


def _duplicate(history: Sequence[CallRecord], tool: str, args_hash: str,
               config: LoopConfig, names: tuple[str, ...]) -> LoopFinding | None:
    if config.exempt(names, "exact_duplicate"):
        return None
    for index in range(len(history) - 1, -1, -1):
        call = history[index]
        if call.tool == tool and call.args_hash == args_hash:
            if call.is_error or call.ref is None:
                return None
            later = history[index + 1:]
            # A re-run is a duplicate only when nothing since could have changed its
            # result: every call after it was read-only.
            if any(c.mutating for c in later):
                return None
            return LoopFinding(
                "exact_duplicate", "suggest_alternative",
                f"the same {tool} call ran before (event {call.seq}) and nothing that could "
                "change its result ran since",
                alternative={"op": "recall", "ref": call.ref,
                             "why": "its result is stored: recall it instead of running "
                                    "the call again"})
    return None


def _failures(recent: list[CallRecord], tool: str, family: str,
              config: LoopConfig, names: tuple[str, ...]) -> list[LoopFinding]:
    # Failures count within a family (one shell runs many programs: a failing test run
    # says nothing about the next `cat`), back to the family's last success.
    out: list[LoopFinding] = []
    since_success: list[CallRecord] = []
    for call in reversed(recent):
        if call.family == family and not call.is_error:
            break
        since_success.append(call)
    failures = [c for c in since_success
                if c.family == family and c.is_error and c.error_signature]
    if not failures:
        return out
    latest = failures[0]
    same = [c for c in failures if c.error_signature == latest.error_signature]
    # Repeated failure: the same call failing the same way again and again. The same
    # error from varied arguments is the (gentler) loop pattern below.
    repeated = [c for c in same if c.args_hash == latest.args_hash]
    # ...unless the very file the failing call names was changed since its last failure:
    # then the next run tests a fix, it is not a blind retry.
    after = recent[[c.seq for c in recent].index(latest.seq) + 1:] \
        if latest.seq in [c.seq for c in recent] else []
    fixed = bool(latest.targets) and any(
        c.mutating and not c.is_error and set(c.targets) & set(latest.targets) for c in after)
    if not config.exempt(names, "repeated_failure") and not fixed and \
            len(repeated) >= config.repeated_failure_block:
        out.append(LoopFinding(
            "repeated_failure", "block",
            f"{family} failed {len(repeated)} times with the same error: {latest.error_text}",
            required_action="stop retrying: read the error, change the approach, and record "
                            "what you learned with plan(mode='update', decisions=[...]) "
                            "before calling this tool again"))
    distinct_args = {c.args_hash for c in same}
    if not config.exempt(names, "loop_pattern") and len(distinct_args) >= 2:
        count = len(distinct_args)
        level = "block" if count >= config.loop_block else \
            "warn" if count >= config.loop_warn else "note"
        out.append(LoopFinding(
            "loop_pattern", level,
            f"{count} different {family} calls end in the same error: {latest.error_text}",
            required_action="the arguments are not the problem; address the cause "
                            "of the error" if level == "block" else None))
    return out


def _oscillation(recent: list[CallRecord], tool: str, args_hash: str,
                 config: LoopConfig, names: tuple[str, ...]) -> LoopFinding | None:
    if config.exempt(names, "oscillation"):
        return None
    window = recent[-(config.oscillation_block + 2):]
    keys = [*((c.tool, c.args_hash) for c in window), (tool, args_hash)]
    length = 1
    for index in range(len(keys) - 2, -1, -1):
        expected = keys[-1] if (len(keys) - 1 - index) % 2 == 0 else keys[-2]
        if keys[index] != expected or keys[-1] == keys[-2]:
            break
        length += 1
    # Alternating is fine while it teaches something: after the first A and B, the
    # repeats must have brought nothing new for this to be an oscillation.
    repeats = window[len(window) - (length - 1):][2:] if length > 1 else []
    if length < config.oscillation_warn or any(c.novel for c in repeats):
        return None
    level = "block" if length >= config.oscillation_block else "warn"
    return LoopFinding(
        "oscillation", level,
        f"alternating between the same two calls ({length} in a row) without new results",
        required_action="break the A/B cycle: decide with plan(mode='update')"
        if level == "block" else None)


def _runaway(recent: list[CallRecord], config: LoopConfig,
             names: tuple[str, ...]) -> LoopFinding | None:
    if config.exempt(names, "runaway"):
        return None
    stale = 0
    for call in reversed(recent):
        # Progress: a result never seen before, or a successful edit-like call. (Shell
        # calls count by their results: a new output is progress, a repeat is not.)
        if call.novel or (call.tool in MUTATING_TOOLS and not call.is_error):
            break
        stale += 1
    stale += 1  # the intended call
    if stale < config.runaway_warn:
        return None
    level = "block" if stale >= config.runaway_block else "warn"
    return LoopFinding(
        "runaway", level, f"{stale} calls in a row brought nothing new and changed nothing",
        required_action="update the plan or take a checkpoint before going on"
        if level == "block" else None)


def judge(history: Sequence[CallRecord], tool: str, args_hash: str, config: LoopConfig,
          family: str | None = None) -> list[LoopFinding]:
    """LoopGuard's findings for calling ``tool`` with ``args_hash`` after ``history``."""
    recent = _since_progress(history)
    names = (tool, family) if family and family != tool else (tool,)
    findings: list[LoopFinding] = []
    duplicate = _duplicate(recent, tool, args_hash, config, names)
    if duplicate is not None:
        findings.append(duplicate)
    findings.extend(_failures(recent, tool, family or tool, config, names))
    for check in (_oscillation(recent, tool, args_hash, config, names),
                  _runaway(recent, config, names)):
        if check is not None:
            findings.append(check)
    return findings


def judge_observed(history: Sequence[CallRecord], call: CallRecord, config: LoopConfig,
                   ) -> list[LoopFinding]:
    """LoopGuard's findings about ``call``, which has just run after ``history``.

    A duplicate is judged against the calls before it (so a first call is never a
    duplicate of itself, and a repeat names the earlier event); failures, oscillation
    and runaway are patterns of the history including it."""
    recent = _since_progress(history)
    names = (call.tool, call.family) if call.family != call.tool else (call.tool,)
    findings: list[LoopFinding] = []
    duplicate = _duplicate(recent, call.tool, call.args_hash, config, names)
    if duplicate is not None:
        findings.append(duplicate)
    findings += [f for f in judge([*history, call], call.tool, call.args_hash, config,
                                  call.family) if f.pattern != "exact_duplicate"]
    return findings
