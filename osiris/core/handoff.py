"""Handoff contracts: delegation that a machine can check.

A contract names the objective, the refs handed over, constraints, acceptance checks
(required result fields, commands that must have passed as observed by OSIRIS,
paths that may or may not be touched), a budget and a deadline. ``complete``
validates the child's structured result against it and names every failed check.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

import re2

from osiris.core.hashing import digest_of_ref
from osiris.core.invariants import glob_regex
from osiris.errors import InvalidInputError

_CONTRACT_KEYS = {"objective", "input_refs", "constraints", "checks", "budget", "deadline",
                  "steps"}
_CHECK_KEYS = {"required_fields", "commands_passed", "paths_allowed", "paths_forbidden"}
_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


@dataclass(frozen=True)
class Contract:
    """A validated handoff contract."""

    objective: str
    input_refs: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()
    steps: tuple[str, ...] = ()
    required_fields: tuple[str, ...] = ()
    commands_passed: tuple[str, ...] = ()
    paths_allowed: tuple[str, ...] = ()
    paths_forbidden: tuple[str, ...] = ()
    budget_tokens: int | None = None
    budget_cost_usd: float | None = None
    deadline_us: int | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (stored with the handoff)."""
        return asdict(self)

    def brief(self) -> dict[str, Any]:
        """The few facts an answer repeats (about 200 tokens in all)."""
        out: dict[str, Any] = {"objective": self.objective}
        checks = {k: list(v) for k, v in (("required_fields", self.required_fields),
                                          ("commands_passed", self.commands_passed),
                                          ("paths_allowed", self.paths_allowed),
                                          ("paths_forbidden", self.paths_forbidden)) if v}
        if checks:
            out["checks"] = checks
        if self.input_refs:
            out["input_refs"] = len(self.input_refs)
        if self.budget_tokens or self.budget_cost_usd:
            out["budget"] = {"tokens": self.budget_tokens, "cost_usd": self.budget_cost_usd}
        if self.deadline_us:
            out["deadline"] = datetime.fromtimestamp(self.deadline_us / 1e6, UTC).isoformat()
        return out


@dataclass(frozen=True)
class CheckResult:
    """One acceptance check and how it went."""

    check: str
    passed: bool
    detail: str


@dataclass(frozen=True)
class Evaluation:
    """All checks of a completion."""

    accepted: bool
    checks: tuple[CheckResult, ...] = field(default=())

    @property
    def failed(self) -> list[CheckResult]:
        """The checks that did not pass."""
        return [c for c in self.checks if not c.passed]


def _strings(value: object, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise InvalidInputError(f"contract {where} must be a list of non-empty strings")
    return tuple(v.strip() for v in value)


def parse_contract(raw: object, now_us: int) -> Contract:
    """Validate a contract; InvalidInputError says which field is wrong and how."""
    if not isinstance(raw, dict):
        raise InvalidInputError('contract must be an object like {"objective": "...", '
                                '"checks": {"required_fields": ["summary"]}}')
    unknown = set(raw) - _CONTRACT_KEYS
    if unknown:
        raise InvalidInputError(f"contract has unknown field(s) {sorted(unknown)}; allowed: "
                                + ", ".join(sorted(_CONTRACT_KEYS)))
    objective = raw.get("objective")
    if not isinstance(objective, str) or not objective.strip():
        raise InvalidInputError("contract.objective must be a non-empty string")
    checks = raw.get("checks") or {}
    if not isinstance(checks, dict) or set(checks) - _CHECK_KEYS:
        raise InvalidInputError("contract.checks must be an object with keys among "
                                + ", ".join(sorted(_CHECK_KEYS)))
    refs = _strings(raw.get("input_refs"), "input_refs")
    for ref in refs:
        digest_of_ref(ref)
    paths = {k: _strings(checks.get(k), f"checks.{k}") for k in ("paths_allowed",
                                                                  "paths_forbidden")}
    for globs in paths.values():
        for glob in globs:
            glob_regex(glob)
    budget = raw.get("budget") or {}
    if not isinstance(budget, dict) or set(budget) - {"tokens", "cost_usd"}:
        raise InvalidInputError('contract.budget must be {"tokens": int, "cost_usd": number}')
    tokens = budget.get("tokens")
    cost = budget.get("cost_usd")
    if tokens is not None and (not isinstance(tokens, int) or isinstance(tokens, bool)
                               or tokens <= 0):
        raise InvalidInputError("contract.budget.tokens must be a positive integer")
    if cost is not None and (not isinstance(cost, (int, float)) or isinstance(cost, bool)
                             or cost <= 0):
        raise InvalidInputError("contract.budget.cost_usd must be a positive number")
    return Contract(
        objective=objective.strip(), input_refs=refs,
        constraints=_strings(raw.get("constraints"), "constraints"),
        steps=_strings(raw.get("steps"), "steps"),
        required_fields=_strings(checks.get("required_fields"), "checks.required_fields"),
        commands_passed=_strings(checks.get("commands_passed"), "checks.commands_passed"),
        paths_allowed=paths["paths_allowed"], paths_forbidden=paths["paths_forbidden"],
        budget_tokens=tokens, budget_cost_usd=float(cost) if cost is not None else None,
        deadline_us=_deadline(raw.get("deadline"), now_us))


def _deadline(value: object, now_us: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return now_us + int(value * 1e6)  # seconds from now
    if isinstance(value, str) and _ISO.match(value):
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        return int(moment.timestamp() * 1e6)
    raise InvalidInputError("contract.deadline must be seconds from now or an ISO-8601 time "
                            "with a zone, e.g. 2026-12-01T18:00:00Z")


def contract_from_dict(data: dict[str, Any]) -> Contract:
    """A stored contract back."""
    values: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v
                              for k, v in data.items()}
    return Contract(**values)


def _matches(glob: str, path: str) -> bool:
    regex = glob_regex(glob)
    return regex.match(path) is not None or regex.match(path.lstrip("/")) is not None or any(
        regex.match("/".join(path.split("/")[i:])) is not None
        for i in range(1, path.count("/") + 1))


def evaluate(contract: Contract, result: object, *, passed_commands: list[str],
             touched_paths: list[str], tokens_used: int, cost_used: float,
             now_us: int) -> Evaluation:
    """Check a structured result and the child's observed work against the contract."""
    checks: list[CheckResult] = []
    if not isinstance(result, dict):
        return Evaluation(False, (CheckResult("result", False,
                                              "result must be an object of named fields"),))
    for name in contract.required_fields:
        value = result.get(name)
        present = value is not None and value not in ("", [], {})
        checks.append(CheckResult(f"required_field:{name}", present,
                                  "present" if present else f"result has no {name!r}"))
    for command in contract.commands_passed:
        pattern = re2.compile(re2.escape(command))
        hit = next((c for c in passed_commands if pattern.search(c)), None)
        checks.append(CheckResult(
            f"command_passed:{command}", hit is not None,
            f"passed: {hit[:80]}" if hit else f"no successful run of {command!r} was observed "
                                              "by OSIRIS in the child task"))
    for path in touched_paths:
        if contract.paths_allowed and not any(_matches(g, path) for g in contract.paths_allowed):
            checks.append(CheckResult("paths_allowed", False,
                                      f"{path} is outside {list(contract.paths_allowed)}"))
        for glob in contract.paths_forbidden:
            if _matches(glob, path):
                checks.append(CheckResult("paths_forbidden", False,
                                          f"{path} matches forbidden {glob!r}"))
    if (contract.paths_allowed or contract.paths_forbidden) and \
            not any(c.check.startswith("paths_") for c in checks):
        checks.append(CheckResult("paths", True, f"{len(touched_paths)} path(s) touched, "
                                                 "all allowed"))
    if contract.budget_tokens is not None:
        ok = tokens_used <= contract.budget_tokens
        checks.append(CheckResult("budget_tokens", ok, f"{tokens_used} of "
                                                       f"{contract.budget_tokens} tokens"))
    if contract.budget_cost_usd is not None:
        ok = cost_used <= contract.budget_cost_usd
        checks.append(CheckResult("budget_cost", ok, f"${cost_used:.4f} of "
                                                     f"${contract.budget_cost_usd:.4f}"))
    if contract.deadline_us is not None:
        ok = now_us <= contract.deadline_us
        late = (now_us - contract.deadline_us) / 1e6
        checks.append(CheckResult("deadline", ok, "on time" if ok else f"{late:.0f}s late"))
    return Evaluation(all(c.passed for c in checks), tuple(checks))
