"""Pruning modes and the net-savings formula."""

from __future__ import annotations

import random

import pytest

from osiris.core.prune import ContextItem, plan_prune, prune_trigger

ITEMS = [ContextItem("mem://head", 3000, 0, "head"),
         ContextItem("mem://contract", 800, 1, "contract")] + [
    ContextItem(f"mem://p{i}", 5000, 10 + i, "result", "Bash") for i in range(6)]


def _plan(mode: str, used: int, idle: float = 10.0) -> object:
    return plan_prune(ITEMS, mode=mode, used_tokens=used, threshold=20_000, ttl_s=300,
                      idle_s=idle, prefix_tokens=3800)


def test_nothing_happens_below_the_trigger() -> None:
    for mode in ("cache_ttl", "conservative", "balanced", "aggressive"):
        advice = _plan(mode, 5_000)
        assert advice.triggered is False
        assert advice.drop == ()


def test_the_trigger_alone_decides_whether_there_is_advice() -> None:
    """observe asks :func:`prune_trigger` before it gathers the context's items: it must
    agree with the whole plan on every mode, pressure and idle time."""
    for mode in ("cache_ttl", "conservative", "balanced", "aggressive"):
        for used in (0, 9_999, 10_000, 19_999, 20_000, 39_999, 40_000, 10**6):
            for idle in (0.0, 300.0, 300.5, 10_000.0):
                advice = _plan(mode, used, idle)
                assert prune_trigger(mode, used_tokens=used, threshold=20_000, ttl_s=300,
                                     idle_s=idle) == (advice.triggered, advice.trigger)


def test_conservative_drops_old_history_only() -> None:
    assert not _plan("conservative", 30_000).triggered  # its trigger is 2x the threshold
    advice = _plan("conservative", 45_000)
    assert {i.ref for i in advice.drop} == {"mem://p0", "mem://p1", "mem://p2"}
    assert advice.net_savings_tokens == 15_000


def test_balanced_drops_all_payloads_but_the_newest() -> None:
    advice = _plan("balanced", 25_000)
    assert {i.ref for i in advice.drop} == {f"mem://p{i}" for i in range(5)}
    assert advice.prefix_cost_tokens == 0


def test_cache_ttl_waits_for_expiry_before_touching_the_prefix() -> None:
    warm = _plan("cache_ttl", 25_000, idle=30)
    assert {i.zone for i in warm.drop} == {"D"}
    cold = _plan("cache_ttl", 1_000, idle=400)
    assert cold.triggered
    assert {"mem://head", "mem://contract"} <= {i.ref for i in cold.drop}
    assert cold.prefix_cost_tokens == 0  # the cache is already dead: nothing to lose


def test_aggressive_prices_the_prefix_while_the_cache_lives() -> None:
    advice = _plan("aggressive", 12_000, idle=60)
    assert len(advice.drop) == len(ITEMS)
    assert advice.prefix_cost_tokens == pytest.approx(3800 * (1 - 60 / 300))
    assert advice.net_savings_tokens == pytest.approx(advice.pruned_tokens - 3800 * 0.8)


def test_unknown_mode() -> None:
    from osiris.errors import InvalidInputError

    with pytest.raises(InvalidInputError):
        _plan("reckless", 1)


def test_the_advice_lists_the_largest_payloads_and_stays_bounded_in_a_long_task() -> None:
    """An observe answer reaches the model every turn: at 500 payloads it must not list
    them all (it did: 35 KB at 300 refs). What it leaves out is counted, not hidden."""
    import json

    from osiris.core.prune import MAX_DROP_SHOWN

    items = [ContextItem(f"mem://p{i}", 100 + (i * 37) % 1000, i, "result", "Bash")
             for i in range(500)]
    advice = plan_prune(items, mode="balanced", used_tokens=10**6, threshold=20_000,
                        ttl_s=300, idle_s=10, prefix_tokens=0)
    assert len(advice.drop) == 499  # all but the newest may go
    shown = advice.as_dict()
    largest = sorted(advice.drop, key=lambda i: -i.tokens)[:MAX_DROP_SHOWN]
    assert [d["ref"] for d in shown["drop"]] == [i.ref for i in largest]
    assert shown["more"]["refs"] == 499 - MAX_DROP_SHOWN
    assert shown["more"]["tokens"] + sum(d["tokens"] for d in shown["drop"]) \
        == shown["pruned_tokens"] == sum(i.tokens for i in advice.drop)
    record = advice.as_record()
    assert [d["ref"] for d in record["drop"]] == [i.ref for i in largest]
    assert record["not_listed"] == 499 - MAX_DROP_SHOWN and record["kept"] == 1
    assert len(json.dumps(shown)) < 2_500 and len(json.dumps(record)) < 3_500


# The module's table, written out over assign_zones' zones: what each mode evicts.
def _evicts(mode: str, zone: str, expired: bool) -> bool:
    return {"conservative": zone == "D",
            "balanced": zone in "CD",
            "aggressive": True,
            "cache_ttl": zone == "D" or expired}[mode]


def test_the_plan_evicts_by_the_table_over_assign_zones_zones() -> None:
    """plan_prune decides zone and eviction in one pass over a long task's items; it must
    give what the table in this module's docstring gives over assign_zones' zones, for
    items in any order, with repeated times and refs and stale zones."""
    from osiris.core.prune import PRUNE_MODES, assign_zones, context_item

    rnd = random.Random(20)
    kinds = ("result", "error", "file", "head", "contract")
    for _ in range(3000):
        items = [context_item(f"mem://{rnd.randint(0, 40)}", rnd.randint(1, 500),
                              rnd.randint(0, 20), rnd.choice(kinds))
                 for _ in range(rnd.randint(0, 30))]
        if rnd.random() < 0.3:
            items = [i._replace(zone=rnd.choice("ABCD")) for i in items]
        mode, working_set = rnd.choice(PRUNE_MODES), rnd.choice((0, 1, 3))
        ttl_s, idle_s, prefix = rnd.choice((0, 300)), rnd.choice((1.0, 500.0)), 700
        advice = plan_prune(items, mode=mode, used_tokens=10**6, threshold=20_000,
                            ttl_s=ttl_s, idle_s=idle_s, prefix_tokens=prefix,
                            working_set=working_set)
        zoned = assign_zones(items, working_set)
        expired = ttl_s > 0 and idle_s > ttl_s
        newest = max((i.observed_us for i in zoned if i.zone in "CD"), default=None)
        goes = [_evicts(mode, i.zone, expired)
                and not (mode == "balanced" and i.observed_us == newest) for i in zoned]
        drop = [i for i, ok in zip(zoned, goes, strict=True) if ok]
        assert list(advice.drop) == drop
        assert advice.keep == tuple(i.ref for i, ok in zip(zoned, goes, strict=True)
                                    if not ok)
        assert advice.pruned_tokens == sum(i.tokens for i in drop)
        alive = 0.0 if ttl_s <= 0 else max(0.0, 1.0 - idle_s / ttl_s)
        lost = prefix * alive if any(i.zone in "AB" for i in drop) else 0.0
        assert advice.prefix_cost_tokens == lost
        assert advice.net_savings_tokens == advice.pruned_tokens - lost
