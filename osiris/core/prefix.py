"""Prompt zones, their five hashes, the SEAL, drift verdicts and the PrefillPlan.

The model of the agent's prompt (SPEC §2), in prompt order::

    [ZONE A head: system head ‖ rules] [ZONE B: objective ‖ plan ‖ tool contract]
    [tail: constraints ‖ pinned decisions, append-only] [ZONE C work] [ZONE D history]

``prefix_hash`` covers what a provider can cache (head and zone B). The tail only
grows at the end, so an append costs just the new tokens. A change in zone B
invalidates the cache from the first changed token on; a change in the head from
token 0. Rewriting a pinned item leaves the cache alone but corrupts the task.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from osiris.core.cost_models import CostModel
from osiris.core.hashing import canonical_json, sha256_hex
from osiris.core.task_state import PinnedItem, SealRecord, TaskState
from osiris.core.tokens import TokenCounter

SEP = "\u2016"  # ‖, the seed's concatenation sign
SEAL_HEX = 24
SEVERITY = {"none": 0, "normal_growth": 1, "minor": 2, "semantic_break": 3, "critical": 4}


@dataclass(frozen=True)
class ZoneHashes:
    """The five hashes of SPEC §2."""

    head: str
    zone_b: str
    tail: str
    prefix: str
    zone_a: str

    @property
    def seal(self) -> str:
        """Digest of the stable zone (head, zone B and tail): what the agent carries.

        The first 96 bits of the SHA-256, in hex: enough to detect any drift (a chance
        collision is 1 in 2^96) at half the tokens of the full digest, which the agent
        pays on every turn it carries the manifest.
        """
        return sha256_hex(f"OSIRIS/1{SEP}{self.zone_a}{SEP}{self.zone_b}")[:SEAL_HEX]


def _h(*parts: str) -> str:
    return sha256_hex(SEP.join(parts))


def zone_b_text(objective: str, steps: tuple[str, ...], contract_digest: str) -> str:
    """Canonical text of zone B (what is hashed, and token-counted for positions)."""
    plan = "\n".join(f"{i + 1}. {s}" for i, s in enumerate(steps))
    return f"objective: {objective}\nplan:\n{plan}\ncontract: {contract_digest}"


def pinned_text(items: tuple[PinnedItem, ...]) -> str:
    """Canonical text of a pinned collection."""
    return canonical_json([i.text for i in items])


def compute_zones(state: TaskState) -> ZoneHashes:
    """The five hashes of a task's current state."""
    z = state.zones
    head = _h(z.head_digest, z.rules_digest)
    zone_b = _h(zone_b_text(state.objective, state.plan.steps, z.contract_digest))
    tail = _h(pinned_text(state.constraints), pinned_text(state.decisions))
    return ZoneHashes(head=head, zone_b=zone_b, tail=tail, prefix=_h(head, zone_b),
                      zone_a=_h(head, tail))


def seal_record(state: TaskState) -> SealRecord:
    """A record of the current seal, to recognise it when an agent passes it back."""
    zones = compute_zones(state)
    return SealRecord(seal=zones.seal, head=zones.head, zone_b=zones.zone_b, tail=zones.tail,
                      constraints=len(state.constraints), decisions=len(state.decisions))


@dataclass(frozen=True)
class PrefillPlan:
    """What a drift costs: from which token the prompt must be prefilled again."""

    zone: str
    from_token: int
    tokens: int
    cost_model: str
    cost_usd: float
    """Price of prefilling ``tokens`` again (written to the cache where it caches)."""
    extra_cost_usd: float
    """What that costs beyond the cache read it replaces (0 when nothing was cached)."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


@dataclass(frozen=True)
class DriftVerdict:
    """The drift between what the agent carries and the current state."""

    verdict: str
    """none, normal_growth, minor, critical or semantic_break."""
    changes: tuple[str, ...] = ()
    semantic_break: bool = False
    cause: str | None = None
    prefill: PrefillPlan | None = None
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (the wire's ``drift`` object)."""
        out: dict[str, Any] = {"verdict": self.verdict}
        if self.changes:
            out["changes"] = list(self.changes)
        if self.semantic_break:
            out["semantic_break"] = True
            out["cause"] = self.cause
        if self.prefill is not None:
            out["prefill"] = self.prefill.as_dict()
        if self.detail:
            out["detail"] = self.detail
        return out


NO_DRIFT = DriftVerdict("none")


@dataclass(frozen=True)
class PromptSizes:
    """Token sizes of the zones, for PrefillPlan positions."""

    head: int
    zone_b: int
    tail: int
    rest: int
    """Tokens after the stable zones (working zone and history), as far as known."""

    @property
    def total(self) -> int:
        """The whole prompt."""
        return self.head + self.zone_b + self.tail + self.rest


def prompt_sizes(state: TaskState, counter: TokenCounter, rest_tokens: int) -> PromptSizes:
    """Token sizes of a task's zones."""
    zone_b = counter.count(zone_b_text(state.objective, state.plan.steps, "")) \
        + state.zones.contract_tokens
    tail = counter.count(pinned_text(state.constraints)) + \
        counter.count(pinned_text(state.decisions))
    return PromptSizes(head=state.zones.head_tokens, zone_b=zone_b, tail=tail,
                       rest=rest_tokens)


def common_prefix_tokens(counter: TokenCounter, old: str, new: str) -> int:
    """Tokens of the longest common prefix of two texts (where a re-prefill starts)."""
    limit = 0
    for a, b in zip(old, new, strict=False):
        if a != b:
            break
        limit += 1
    # Back off to a line start so the boundary does not split a token.
    cut = old.rfind("\n", 0, limit) + 1
    return counter.count(old[:cut])


def _plan(zone: str, from_token: int, tokens: int, model: CostModel,
          replaces_cache_hit: bool) -> PrefillPlan:
    tokens = max(tokens, 0)
    cost = model.token_cost(tokens, model.write_multiplier)
    extra = cost - model.token_cost(tokens, model.read_multiplier) if replaces_cache_hit else 0.0
    return PrefillPlan(zone=zone, from_token=from_token, tokens=tokens, cost_model=model.name,
                       cost_usd=round(cost, 8), extra_cost_usd=round(max(extra, 0.0), 8))


def classify_drift(old: SealRecord, new: ZoneHashes, *, pinned_change: str,
                   sizes: PromptSizes, model: CostModel, zone_b_position: int | None = None,
                   appended_tokens: int = 0) -> DriftVerdict:
    """Compare the zones a seal stood for with the current ones.

    ``pinned_change`` comes from :func:`osiris.core.task_state.classify_collection`
    (identity, not hash): ``rewrite`` is a semantic break even when the tail hash
    alone could not tell it from growth. ``zone_b_position`` is the token offset of
    the first change inside zone B, when the caller could compute it.
    """
    changes = []
    if new.head != old.head:
        changes.append("head")
    if new.zone_b != old.zone_b:
        changes.append("zone_b")
    if new.tail != old.tail:
        changes.append("tail")
    if pinned_change == "rewrite":
        return DriftVerdict(
            "semantic_break", tuple(changes) or ("tail",), semantic_break=True,
            cause="pinned_rewrite",
            prefill=_plan("tail", sizes.head + sizes.zone_b, 0, model, False),
            detail="a pinned constraint or decision was rewritten; the prompt cache survives "
                   "but the task state no longer matches what was agreed: restore the pinned "
                   "text verbatim (plan mode=resume) or append a new decision instead")
    if "head" in changes:
        return DriftVerdict(
            "critical", tuple(changes), prefill=_plan("head", 0, sizes.total, model, True),
            detail="the system head or rules changed: the whole prompt is prefilled again")
    if "zone_b" in changes:
        start = sizes.head + (zone_b_position if zone_b_position is not None else 0)
        return DriftVerdict(
            "minor", tuple(changes),
            prefill=_plan("zone_b", start, sizes.total - start, model, True),
            detail="objective, plan or tool contract changed: re-prefill from the change on")
    if "tail" in changes:
        start = sizes.head + sizes.zone_b + sizes.tail - appended_tokens
        return DriftVerdict(
            "normal_growth", tuple(changes),
            prefill=_plan("tail", start, appended_tokens, model, False),
            detail="constraints or decisions were appended: only the new tokens are prefilled")
    return NO_DRIFT


def worst(a: str, b: str) -> str:
    """The more severe of two verdicts."""
    return a if SEVERITY.get(a, 0) >= SEVERITY.get(b, 0) else b
