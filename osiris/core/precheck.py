"""The precheck verdict: a pure function of the rules, the task state and the action.

Findings come from invariants, the budget and LoopGuard; the verdict is the most
severe of them (allow < warn < suggest_alternative < require_approval < block). No
model is ever consulted. ``require_approval`` turns into ``allow`` only when the
same action comes back with ``confirmed: true`` after OSIRIS asked for it; ``block``
cannot be confirmed away.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from osiris.core.hashing import canonical_json, sha256_hex
from osiris.core.invariants import VERDICTS, Action, RuleHit
from osiris.core.loopguard import LoopFinding

_RANK = {v: i for i, v in enumerate(VERDICTS)}


@dataclass(frozen=True)
class Finding:
    """One reason for a verdict."""

    source: str
    verdict: str
    message: str
    required_action: str | None = None
    alternative: dict[str, Any] | None = None


@dataclass(frozen=True)
class Decision:
    """What precheck answers."""

    verdict: str
    reasons: tuple[str, ...]
    required_action: str | None = None
    alternative: dict[str, Any] | None = None
    findings: tuple[Finding, ...] = field(default=())
    approved: bool = False

    def as_dict(self) -> dict[str, Any]:
        """The wire form (``verdict``, ``reasons``, ``required_action``, ``alternative``)."""
        out: dict[str, Any] = {"verdict": self.verdict, "reasons": list(self.reasons)}
        if self.required_action:
            out["required_action"] = self.required_action
        if self.alternative:
            out["alternative"] = self.alternative
        if self.approved:
            out["approved"] = True
        return out


def action_key(action: Action) -> str:
    """Identity of an intended action (what a confirmation must repeat)."""
    return sha256_hex(canonical_json({"tool": action.tool, "args": action.args,
                                      "path": action.path}))


def from_invariants(hits: list[RuleHit]) -> list[Finding]:
    """Findings of fired invariants."""
    out = []
    for hit in hits:
        rule = hit.invariant
        message = rule.message
        if hit.missing:
            message += f" (requires {', '.join(hit.missing)})"
        required = rule.required_action
        if rule.verdict == "block" and not required:
            required = (f"set {', '.join(hit.missing)} first (observe a passing run, or "
                        "declare it with plan(mode='update', flags={...}))" if hit.missing
                        else f"this action is forbidden by invariant {rule.id}")
        alternative = {"instead": rule.alternative} if rule.alternative else None
        out.append(Finding(f"invariant:{rule.id}", rule.verdict, message, required,
                           alternative))
    return out


def from_budget(state: str, detail: str) -> list[Finding]:
    """Findings of the budget policy: warn near the limit, approval past it."""
    if state == "warn":
        return [Finding("budget", "warn", f"budget nearly spent: {detail}")]
    if state == "over":
        return [Finding("budget", "require_approval", f"budget exceeded: {detail}",
                        "confirm to go past the budget, or raise it with "
                        "plan(mode='update', budget={...})")]
    return []


def from_loopguard(findings: list[LoopFinding]) -> list[Finding]:
    """Findings of LoopGuard (notes allow, with the note as a reason)."""
    level_to_verdict = {"note": "allow", "warn": "warn",
                        "suggest_alternative": "suggest_alternative", "block": "block"}
    return [Finding(f"loopguard:{f.pattern}", level_to_verdict[f.level], f.message,
                    f.required_action, dict(f.alternative) if f.alternative else None)
            for f in findings]


def decide(findings: list[Finding], *, confirmed: bool, approval_pending: bool) -> Decision:
    """Combine findings into one verdict."""
    if not findings:
        return Decision("allow", ())
    worst = max(findings, key=lambda f: _RANK[f.verdict])
    verdict = worst.verdict
    reasons = tuple(f"{f.source}: {f.message}" for f in
                    sorted(findings, key=lambda f: -_RANK[f.verdict]))
    required = next((f.required_action for f in findings
                     if f.verdict == verdict and f.required_action), None)
    alternative = next((f.alternative for f in findings if f.alternative), None)
    if verdict == "require_approval" and confirmed and approval_pending:
        return Decision("allow", (*reasons, "approved: confirmed by the caller"),
                        findings=tuple(findings), approved=True)
    return Decision(verdict, reasons, required, alternative, tuple(findings))
