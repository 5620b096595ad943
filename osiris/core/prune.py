"""Cache-aware pruning: which payloads the agent may drop now, and what it costs.

Security invariant: pruning moves payload data to refs; it never deletes. OSIRIS
cannot edit the agent's prompt, so a prune is *advice*: the refs the agent may evict
(each restorable by ``recall``), confirmed afterwards by drop receipts.

Zones of the items in context: A/B are the cached prefix (the recorded system head
and tool contract); C is the working set (the most recent payloads); D is older
history. Evicting C/D never costs cache; evicting A/B does, while the cache lives::

    net_savings = pruned_tokens − prefix_tokens × P(cache alive) × prefix_pruned

SPEC §4 writes the factor as P(cache_dead), the probability that the prune kills a
cache that would otherwise have served; here it is estimated as
``max(0, 1 − idle/TTL)``: a cache idle past its TTL has nothing left to lose.

| mode | trigger | evicts |
|---|---|---|
| cache_ttl (default) | idle > TTL, or pressure ≥ threshold | C/D; A/B only once idle > TTL |
| conservative | pressure ≥ 2 × threshold | D only |
| balanced | pressure ≥ threshold | C/D but the newest item |
| aggressive | pressure ≥ threshold / 2 | everything re-expandable, A/B included |
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, NamedTuple

from osiris.errors import InvalidInputError

PRUNE_MODES = ("cache_ttl", "conservative", "balanced", "aggressive")
MAX_DROP_SHOWN = 12
"""The most payloads one prune advice lists (the largest first)."""


class ContextItem(NamedTuple):
    """A payload OSIRIS believes is in the agent's context (a NamedTuple: every observe
    makes one per payload of the task, twice)."""

    ref: str
    tokens: int
    observed_us: int
    kind: str
    """``result``, ``error``, ``file``, ``head`` or ``contract``."""
    tool: str | None = None
    zone: str = "C"


_ITEM_FIELDS = ContextItem._fields
_PREFIX_ZONES = {"head": "A", "contract": "B"}
_OBSERVED = attrgetter("observed_us")
_TOKENS = attrgetter("tokens")


@dataclass(frozen=True)
class PruneAdvice:
    """What the agent may drop now."""

    mode: str
    triggered: bool
    trigger: str
    drop: tuple[ContextItem, ...] = ()
    pruned_tokens: int = 0
    prefix_cost_tokens: float = 0.0
    net_savings_tokens: float = 0.0
    keep: tuple[str, ...] = field(default=())

    @functools.cached_property
    def largest(self) -> list[ContextItem]:
        """The :data:`MAX_DROP_SHOWN` largest payloads to drop, the earliest first among
        equals (the answer and the journal list these)."""
        return sorted(self.drop, key=_TOKENS, reverse=True)[:MAX_DROP_SHOWN]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form, compact enough for an observe answer: the
        :data:`MAX_DROP_SHOWN` largest payloads to drop (the answer reaches the model on
        every observe: a list of every droppable ref grew with the task, 35 KB at 300
        refs), and how many more there are."""
        out: dict[str, Any] = {"mode": self.mode, "triggered": self.triggered,
                               "trigger": self.trigger}
        if self.triggered:
            shown = self.largest
            out.update(
                drop=[{"ref": i.ref, "tokens": i.tokens, "zone": i.zone} for i in shown],
                pruned_tokens=self.pruned_tokens,
                net_savings_tokens=round(self.net_savings_tokens),
                how="evict these payloads from your context, then send "
                    "observe(kind='dropped', result=<ref>) for each; recall(ref) restores "
                    "any of them exactly")
            if len(self.drop) > len(shown):
                out["more"] = {"refs": len(self.drop) - len(shown),
                               "tokens": self.pruned_tokens - sum(i.tokens for i in shown),
                               "how": "listed after these are dropped"}
        return out

    def as_record(self) -> dict[str, Any]:
        """The journal's form: the advice as given (the payloads listed, whole), with the
        totals of what was not listed and the number of payloads kept. Bounded like the
        answer, so that a long task's every observe does not journal every ref again."""
        shown = self.largest
        return {"mode": self.mode, "triggered": self.triggered, "trigger": self.trigger,
                "drop": tuple({name: getattr(i, name) for name in _ITEM_FIELDS}
                              for i in shown),
                "not_listed": len(self.drop) - len(shown),
                "pruned_tokens": self.pruned_tokens,
                "prefix_cost_tokens": self.prefix_cost_tokens,
                "net_savings_tokens": self.net_savings_tokens, "kept": len(self.keep)}


def context_item(ref: str, tokens: int, observed_us: int, kind: str,
                 tool: str | None = None) -> ContextItem:
    """An item in the zone its kind and age give it outside the working set (A, B or D):
    :func:`assign_zones` then remakes only the few that are in the working set."""
    return ContextItem(ref, tokens, observed_us, kind, tool, _PREFIX_ZONES.get(kind) or "D")


def assign_zones(items: list[ContextItem], working_set: int) -> list[ContextItem]:
    """Head/contract refs are A/B; the newest ``working_set`` payloads C; the rest D.
    An item already in its zone is kept as it is (a long task's observes call this with
    every item of the task)."""
    payloads = sorted((i for i in items if i.kind not in _PREFIX_ZONES), key=_OBSERVED)
    recent = {i.ref for i in payloads[-working_set:]} if working_set else set()
    prefix = _PREFIX_ZONES.get
    zones = [prefix(i.kind) or ("C" if i.ref in recent else "D") for i in items]
    return [i if i.zone == z else i._replace(zone=z) for i, z in zip(items, zones, strict=True)]


def prune_trigger(mode: str, *, used_tokens: int, threshold: int, ttl_s: int,
                  idle_s: float) -> tuple[bool, str]:
    """Whether ``mode`` calls for advice at all, and why: decided before the context's
    items are gathered, which a long task's every observe would otherwise pay for."""
    if mode not in PRUNE_MODES:
        raise InvalidInputError(f"prune mode must be one of {', '.join(PRUNE_MODES)}")
    expired = ttl_s > 0 and idle_s > ttl_s
    limits = {"cache_ttl": threshold, "conservative": 2 * threshold,
              "balanced": threshold, "aggressive": threshold // 2}
    over = used_tokens >= limits[mode]
    if mode == "cache_ttl":
        return expired or over, (
            f"idle {idle_s:.0f}s > TTL {ttl_s}s" if expired else
            f"pressure {used_tokens} ≥ {threshold}" if over else
            f"idle {idle_s:.0f}s ≤ TTL {ttl_s}s and pressure {used_tokens} < {threshold}")
    return over, (f"pressure {used_tokens} {'≥' if over else '<'} {limits[mode]} "
                  f"({mode} threshold)")


def plan_prune(items: list[ContextItem], *, mode: str, used_tokens: int, threshold: int,
               ttl_s: int, idle_s: float, prefix_tokens: int,
               working_set: int = 3) -> PruneAdvice:
    """Decide what to evict under ``mode``; a pure function of its inputs."""
    triggered, trigger = prune_trigger(mode, used_tokens=used_tokens, threshold=threshold,
                                       ttl_s=ttl_s, idle_s=idle_s)
    if not triggered:
        return PruneAdvice(mode, False, trigger)
    expired = ttl_s > 0 and idle_s > ttl_s
    # One pass over the items (a long task's every observe plans over all of them): the
    # zone of each (as assign_zones gives it) decides whether the mode takes it.
    payloads = sorted((i for i in items if i.kind not in _PREFIX_ZONES), key=_OBSERVED)
    recent = {i.ref for i in payloads[-working_set:]} if working_set else set()
    newest = payloads[-1].observed_us if payloads else None
    prefix_goes = mode == "aggressive" or (mode == "cache_ttl" and expired)
    takes = {"A": prefix_goes, "B": prefix_goes,
             "C": mode in ("balanced", "aggressive") or (mode == "cache_ttl" and expired),
             "D": True}
    spare_newest = mode == "balanced"
    prefix = _PREFIX_ZONES.get
    eligible: list[ContextItem] = []
    keep: list[str] = []
    pruned = prefix_pruned = 0
    for given in items:
        zone = prefix(given.kind) or ("C" if given.ref in recent else "D")
        item = given if zone == given.zone else given._replace(zone=zone)
        if takes[zone] and not (spare_newest and item.observed_us == newest):
            eligible.append(item)
            pruned += item.tokens
            if zone in "AB":
                prefix_pruned = 1
        else:
            keep.append(item.ref)
    alive = 0.0 if ttl_s <= 0 else max(0.0, 1.0 - idle_s / ttl_s)
    cost = prefix_tokens * alive * prefix_pruned
    return PruneAdvice(mode, True, trigger, tuple(eligible), pruned, cost, pruned - cost,
                       tuple(keep))
