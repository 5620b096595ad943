"""Zone hashes and drift: appends never touch the prefix, head changes always do."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from osiris.core import task_state as ts
from osiris.core.cost_models import default_cost_models
from osiris.core.prefix import PromptSizes, classify_drift, compute_zones, seal_record
from osiris.core.task_state import TaskState

MODEL = default_cost_models().get("anthropic-5m")
SIZES = PromptSizes(head=3000, zone_b=400, tail=100, rest=20_000)
texts = st.lists(st.text(min_size=1, max_size=60).filter(lambda s: s.strip()), max_size=6)


def _state(head: str = "h", constraints: list[str] | None = None,
           decisions: list[str] | None = None, steps: list[str] | None = None) -> TaskState:
    state = TaskState(task_id="t_x", objective="objective", created_us=0)
    return replace(state, zones=replace(state.zones, head_digest=head),
                   constraints=ts.append_pinned((), constraints or []),
                   decisions=ts.append_pinned((), decisions or []),
                   plan=ts.set_plan(state.plan, steps or ["a", "b"], None))


@settings(max_examples=80, deadline=None)
@given(head=st.text(max_size=40), c0=texts, d0=texts, c1=texts, d1=texts)
def test_appends_never_change_the_prefix(head: str, c0: list[str], d0: list[str],
                                         c1: list[str], d1: list[str]) -> None:
    before = _state(head, c0, d0)
    after = replace(before, constraints=ts.append_pinned(before.constraints, c1),
                    decisions=ts.append_pinned(before.decisions, d1))
    z0, z1 = compute_zones(before), compute_zones(after)
    assert z0.prefix == z1.prefix
    assert z0.head == z1.head and z0.zone_b == z1.zone_b
    grew = len(after.constraints) + len(after.decisions) > len(before.constraints) + len(
        before.decisions)
    assert (z0.tail != z1.tail) == grew
    assert ts.classify_collection(before.decisions, after.decisions) in ("append", "unchanged")


@settings(max_examples=80, deadline=None)
@given(h0=st.text(max_size=40), h1=st.text(max_size=40), c=texts)
def test_any_head_change_changes_the_prefix(h0: str, h1: str, c: list[str]) -> None:
    z0, z1 = compute_zones(_state(h0, c)), compute_zones(_state(h1, c))
    assert (z0.prefix != z1.prefix) == (h0 != h1)
    assert (z0.zone_a != z1.zone_a) == (h0 != h1)


@settings(max_examples=50, deadline=None)
@given(head=st.text(max_size=30), c=texts, d=texts)
def test_seals_are_deterministic(head: str, c: list[str], d: list[str]) -> None:
    a, b = _state(head, c, d), _state(head, c, d)
    assert compute_zones(a).seal == compute_zones(b).seal
    assert compute_zones(TaskState.from_dict(a.as_dict())).seal == compute_zones(a).seal


def test_each_drift_class() -> None:
    base = _state("h", ["c1"], ["d1"])
    record = seal_record(base)

    grown = replace(base, decisions=ts.append_pinned(base.decisions, ["d2"]))
    v = classify_drift(record, compute_zones(grown), pinned_change="append", sizes=SIZES,
                       model=MODEL, appended_tokens=5)
    assert v.verdict == "normal_growth"
    assert (v.prefill.from_token, v.prefill.tokens, v.prefill.extra_cost_usd) == (3495, 5, 0.0)

    replanned = replace(base, plan=ts.set_plan(base.plan, ["a", "b", "c"], None))
    v = classify_drift(record, compute_zones(replanned), pinned_change="unchanged",
                       sizes=SIZES, model=MODEL, zone_b_position=12)
    assert v.verdict == "minor"
    assert v.prefill.zone == "zone_b"
    assert v.prefill.from_token == 3012
    assert v.prefill.tokens == SIZES.total - 3012
    assert v.prefill.extra_cost_usd > 0

    new_head = replace(base, zones=replace(base.zones, head_digest="other"))
    v = classify_drift(record, compute_zones(new_head), pinned_change="unchanged",
                       sizes=SIZES, model=MODEL)
    assert v.verdict == "critical"
    assert (v.prefill.from_token, v.prefill.tokens) == (0, SIZES.total)
    assert v.prefill.cost_usd == round(SIZES.total * 3e-6 * 1.25, 8)

    rewritten = replace(base, decisions=ts.rewrite_pinned(base.decisions, 0, "d1 changed"))
    change = ts.classify_collection(base.decisions, rewritten.decisions)
    assert change == "rewrite"
    v = classify_drift(record, compute_zones(rewritten), pinned_change=change, sizes=SIZES,
                       model=MODEL)
    assert v.verdict == "semantic_break"
    assert v.as_dict()["semantic_break"] is True
    assert v.as_dict()["cause"] == "pinned_rewrite"
    assert v.prefill.tokens == 0

    unchanged = classify_drift(record, compute_zones(base), pinned_change="unchanged",
                               sizes=SIZES, model=MODEL)
    assert unchanged.verdict == "none"


def test_rewrite_is_told_from_growth_by_identity_not_by_hash() -> None:
    items = ts.append_pinned((), ["a", "b"])
    grown = ts.append_pinned(items, ["c"])
    swapped = ts.rewrite_pinned(grown, 1, "B")
    assert ts.classify_collection(items, grown) == "append"
    assert ts.classify_collection(items, swapped) == "rewrite"
    # Same length, same number of items: only identity tells these apart.
    forged = (items[0], ts.PinnedItem("B", items[1].identity))
    assert ts.verify_identities(forged) == [1]
    assert ts.classify_collection(items, forged) == "rewrite"
