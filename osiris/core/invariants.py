"""Invariants: project guard rails from ``.osiris/invariants.toml`` (SPEC §6).

::

    [[invariant]]
    id = "tests-before-commit"
    when = { tool = "git.commit" }              # glob(s) on the tool name
    require = { state = "tests_passed" }        # flag(s) that must be true
    message = "Cannot commit while tests are failing"

    [[invariant]]
    id = "no-test-edit"
    when = { path_glob = "tests/**", args = { command = "rm\\\\s" } }
    verdict = "block"
    message = "Modifying test suites requires explicit approval"

    [loopguard]                                 # thresholds and per-tool exemptions
    runaway_warn = 20
    [[loopguard.exempt]]
    tool = "Read"
    patterns = ["exact_duplicate"]

A rule with ``require`` fires when a required flag is not true (default verdict
``block``); a rule without fires whenever ``when`` matches (default ``warn``).
Shell commands also match a tool name made of their first two words (``git commit
-m x`` matches ``git.commit``), so the seed's rules govern real agents' Bash calls.
Every pattern (globs, argument regexes) is compiled to RE2: linear time. Parsing
is pure; reading the files and keeping the last good rules is the engine's job.
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

import re2

from osiris.core.hashing import canonical_json, sha256_hex
from osiris.core.loopguard import PATTERNS, Exemption, LoopConfig
from osiris.core.routing import RoutingConfig, RoutingError, parse_routing
from osiris.core.shell import command_tool_name

VERDICTS = ("allow", "warn", "suggest_alternative", "require_approval", "block")
_WHEN_KEYS = {"tool", "path_glob", "args"}
_RULE_KEYS = {"id", "when", "require", "verdict", "message", "alternative", "required_action"}
_LOOP_INTS = ("repeated_failure_block", "loop_warn", "loop_block", "oscillation_warn",
              "oscillation_block", "runaway_warn", "runaway_block")


class RulesError(ValueError):
    """An invariants file that cannot be used (its message names the place)."""


@dataclass(frozen=True)
class Action:
    """What the agent intends to do."""

    tool: str
    args: dict[str, Any] = field(default_factory=dict)
    path: str | None = None


@dataclass(frozen=True)
class Invariant:
    """One compiled rule."""

    id: str
    root: str
    tools: tuple[Any, ...]
    paths: tuple[Any, ...]
    args: tuple[tuple[str, Any], ...]
    require: tuple[str, ...]
    verdict: str
    message: str
    alternative: str | None
    required_action: str | None


@dataclass(frozen=True)
class RuleSet:
    """The invariants and LoopGuard settings in force."""

    invariants: tuple[Invariant, ...] = ()
    loop: LoopConfig = field(default_factory=LoopConfig)
    digest: str = ""
    routing: RoutingConfig = field(default_factory=RoutingConfig)


@dataclass(frozen=True)
class RuleHit:
    """An invariant that fired for an action."""

    invariant: Invariant
    missing: tuple[str, ...]


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False
    options.max_mem = 8 << 20
    return options


def glob_regex(glob: str) -> Any:
    """A path/tool glob (``**`` crosses ``/``, ``*`` and ``?`` do not) as an RE2 pattern."""
    out = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re2.escape(glob[i]))
            i += 1
    return re2.compile("^" + "".join(out) + "$", _options())


def _strings(value: object, where: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
        return list(value)
    raise RulesError(f"{where} must be a string or a list of strings")


def _compile_rule(raw: object, index: int, root: str) -> Invariant:
    where = f"invariant #{index + 1}"
    if not isinstance(raw, dict):
        raise RulesError(f"{where} must be a table ([[invariant]])")
    unknown = set(raw) - _RULE_KEYS
    if unknown:
        raise RulesError(f"{where} has unknown key(s) {sorted(unknown)}; allowed: "
                         + ", ".join(sorted(_RULE_KEYS)))
    rule_id = raw.get("id")
    if not isinstance(rule_id, str) or not rule_id:
        raise RulesError(f"{where} needs an id (a non-empty string)")
    where = f"invariant {rule_id!r}"
    when = raw.get("when", {})
    if not isinstance(when, dict) or set(when) - _WHEN_KEYS:
        raise RulesError(f"{where}: when must be a table with keys among "
                         + ", ".join(sorted(_WHEN_KEYS)))
    try:
        tools = tuple(glob_regex(g) for g in _strings(when["tool"], f"{where}: when.tool")) \
            if "tool" in when else ()
        paths = tuple(glob_regex(g) for g in
                      _strings(when["path_glob"], f"{where}: when.path_glob")) \
            if "path_glob" in when else ()
        args_raw = when.get("args", {})
        if not isinstance(args_raw, dict) or not all(isinstance(v, str)
                                                      for v in args_raw.values()):
            raise RulesError(f"{where}: when.args must map argument names to regexes")
        args = tuple((key, re2.compile(value, _options())) for key, value in args_raw.items())
    except re2.error as exc:
        raise RulesError(f"{where}: a pattern does not compile in RE2 (linear-time "
                         f"regexes, no look-around or back-references): {exc}") from None
    require_raw = raw.get("require")
    require: tuple[str, ...] = ()
    if require_raw is not None:
        if not isinstance(require_raw, dict) or set(require_raw) != {"state"}:
            raise RulesError(f'{where}: require must be {{ state = "flag" }} or a list of flags')
        require = tuple(_strings(require_raw["state"], f"{where}: require.state"))
    verdict = raw.get("verdict", "block" if require else "warn")
    if verdict not in VERDICTS:
        raise RulesError(f"{where}: verdict {verdict!r} is not one of " + ", ".join(VERDICTS))
    if verdict == "suggest_alternative" and not isinstance(raw.get("alternative"), str):
        raise RulesError(f"{where}: verdict suggest_alternative needs alternative = \"...\"")
    message = raw.get("message", f"invariant {rule_id}")
    if not isinstance(message, str):
        raise RulesError(f"{where}: message must be a string")
    if not (tools or paths or args):
        raise RulesError(f"{where}: when must name a tool, a path_glob or args")
    return Invariant(rule_id, root, tools, paths, args, require, verdict, message,
                     raw.get("alternative"), raw.get("required_action"))


def _loop_config(raw: object) -> LoopConfig:
    if raw is None:
        return LoopConfig()
    if not isinstance(raw, dict):
        raise RulesError("[loopguard] must be a table")
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if key == "exempt":
            continue
        if key not in _LOOP_INTS:
            raise RulesError(f"[loopguard] has unknown key {key!r}; allowed: "
                             + ", ".join((*_LOOP_INTS, "exempt")))
        if not isinstance(value, int) or isinstance(value, bool) or value < 2:
            raise RulesError(f"[loopguard] {key} must be an integer ≥ 2")
        values[key] = value
    exemptions = []
    for index, item in enumerate(raw.get("exempt", [])):
        if not isinstance(item, dict) or not isinstance(item.get("tool"), str):
            raise RulesError(f"[[loopguard.exempt]] #{index + 1} needs tool = \"glob\"")
        patterns = tuple(_strings(item.get("patterns", list(PATTERNS)),
                                  f"[[loopguard.exempt]] {item['tool']!r}: patterns"))
        bad = set(patterns) - set(PATTERNS)
        if bad:
            raise RulesError(f"[[loopguard.exempt]] {item['tool']!r}: unknown pattern(s) "
                             f"{sorted(bad)}; use " + ", ".join(PATTERNS))
        exemptions.append(Exemption(item["tool"], patterns))
    return LoopConfig(**values, exemptions=tuple(exemptions))


Parsed = tuple[tuple[Invariant, ...], LoopConfig, RoutingConfig]
"""One file's invariants, LoopGuard settings and ``[routing]`` table."""


def parse_rules(text: str, root: str) -> Parsed:
    """Compile one invariants file; RulesError with a precise message when malformed."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RulesError(f"not valid TOML: {exc}") from None
    unknown = set(document) - {"invariant", "loopguard", "routing"}
    if unknown:
        raise RulesError(f"unknown top-level key(s) {sorted(unknown)}; use [[invariant]], "
                         "[loopguard] and [routing]")
    raw_rules = document.get("invariant", [])
    if not isinstance(raw_rules, list):
        raise RulesError("invariant must be an array of tables: write [[invariant]]")
    rules = tuple(_compile_rule(raw, i, root) for i, raw in enumerate(raw_rules))
    ids = [r.id for r in rules]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise RulesError(f"duplicate invariant id(s) {duplicates}")
    try:
        routing = parse_routing(document.get("routing"))
    except RoutingError as exc:
        raise RulesError(str(exc)) from None
    return rules, _loop_config(document.get("loopguard")), routing


def merge(files: Sequence[tuple[str, str, Parsed]]) -> RuleSet:
    """One RuleSet from several roots' files (root, text digest, parsed)."""
    invariants: list[Invariant] = []
    loop, routing = LoopConfig(), RoutingConfig()
    for _, _, (rules, config, routed) in files:
        invariants.extend(rules)
        if config != LoopConfig():
            loop = config  # the last root that configures LoopGuard wins
        if routed != RoutingConfig():
            routing = routed  # and [routing]
    digest = sha256_hex(canonical_json([[root, text_digest] for root, text_digest, _ in files]))
    return RuleSet(tuple(invariants), loop, digest, routing)


def _relative(path: str, root: str) -> str:
    candidate = PurePosixPath(path)
    base = PurePosixPath(root)
    if candidate.is_absolute() and candidate.is_relative_to(base):
        return str(candidate.relative_to(base))
    return path


def evaluate(rules: RuleSet, action: Action, flags: dict[str, bool]) -> list[RuleHit]:
    """Invariants that fire for ``action`` given the task's state flags."""
    names = [action.tool]
    derived = command_tool_name(action.tool, action.args)
    if derived:
        names.append(derived)
    hits = []
    for rule in rules.invariants:
        if rule.tools and not any(t.match(n) for t in rule.tools for n in names):
            continue
        if rule.paths:
            if not action.path:
                continue
            candidates = {action.path, _relative(action.path, rule.root)}
            if not any(p.match(c) for p in rule.paths for c in candidates):
                continue
        if rule.args:
            matched = True
            for key, regex in rule.args:
                value = action.args.get(key)
                text = value if isinstance(value, str) else canonical_json(value) \
                    if value is not None else None
                if text is None or regex.search(text[:100_000]) is None:
                    matched = False
                    break
            if not matched:
                continue
        missing = tuple(f for f in rule.require if not flags.get(f, False))
        if rule.require and not missing:
            continue
        hits.append(RuleHit(rule, missing))
    return hits
