"""The payoff of routing an output, on its own: the cache arithmetic and its bounds."""

from __future__ import annotations

import pytest

from osiris.core.payoff import PayoffConstants, decide, future_requests

SESSION = {"prompt_tokens": 60_000, "requests_so_far": 20, "compaction_at_tokens": 167_000}


def test_the_arithmetic_is_the_documented_formula() -> None:
    c = PayoffConstants()
    p = decide(kind="read", result_tokens=3_000, shown_tokens=600, **SESSION)
    # 107k of room at 500 a request: 214 ahead, but only 20 expected.
    assert p.future_requests == 20
    carried = c.write + c.read * 20
    assert p.saving == pytest.approx(2_400 * carried)
    assert p.recall_cost == pytest.approx(c.recall_read * (
        c.read * 60_600 + c.write * c.request_tokens + c.share * 2_400 * carried))
    assert p.route
    assert p.record()["saving"] == round(p.saving, 1)


def test_a_small_result_is_not_worth_a_recall() -> None:
    p = decide(kind="read", result_tokens=1_500, shown_tokens=500, **SESSION)
    assert not p.route and p.saving > 0  # it saves something, not enough


def test_near_the_compaction_nothing_is_carried_long_enough() -> None:
    late = {**SESSION, "prompt_tokens": 165_500, "requests_so_far": 50}
    assert not decide(kind="shell", result_tokens=3_000, shown_tokens=600, **late).route
    assert decide(kind="shell", result_tokens=3_000, shown_tokens=600, **SESSION).route
    at = decide(kind="shell", result_tokens=3_000, shown_tokens=600,
                **{**late, "prompt_tokens": 170_000})
    assert at.future_requests == 1 and not at.route


def test_future_requests_are_bounded_by_the_session_and_the_room() -> None:
    # Nothing known: the floor, uncapped.
    grow = {"compaction_at_tokens": 167_000, "min_future": 8, "growth_tokens": 500}
    assert future_requests(prompt_tokens=0, requests_so_far=0, **grow) == 8
    # Early in a session, the floor; later, as long again as so far, capped by the room.
    assert future_requests(prompt_tokens=20_000, requests_so_far=2, **grow) == 8
    assert future_requests(prompt_tokens=100_000, requests_so_far=100, **grow) == 100
    assert future_requests(prompt_tokens=150_000, requests_so_far=100, **grow) == 34
    assert future_requests(prompt_tokens=20_000, requests_so_far=0, **grow) == 8


def test_a_likelier_recall_routes_less() -> None:
    sure = PayoffConstants(recall_read=0.95)
    args = {"kind": "read", "result_tokens": 3_000, "shown_tokens": 600, **SESSION}
    assert decide(**args).route and not decide(**args, constants=sure).route
    assert not decide(kind="mcp", result_tokens=500, shown_tokens=500, **SESSION).route


def test_bad_inputs_say_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="unknown output kind"):
        decide(kind="image", result_tokens=1, shown_tokens=1, **SESSION)
    with pytest.raises(ValueError, match="negative"):
        decide(kind="read", result_tokens=-1, shown_tokens=1, **SESSION)
