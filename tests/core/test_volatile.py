"""Volatile tokens in a system head, with positions and suggestions."""

from __future__ import annotations

from osiris.core.tokens import default_counter
from osiris.core.volatile import find_volatile

HEAD = ("You are a coding agent.\nToday's date is 2026-11-30.\n"
        "Current time: 2026-11-30T09:52:40Z\n"
        "Session: 8f3c2a1b-9d4e-4f6a-b7c8-1234567890ab, request_id=req_9xK2mPq7Lz\n"
        "This is turn 14 of 50. nonce: a8F3kLm9Qz2XvB7nW4pR. Started at 1796032654.\n"
        "Build 3f9a1c0e5b7d2a4c6e8f. Stable text: use_snake_case_for_all_identifiers.\n")


def test_each_kind_is_found_with_its_position() -> None:
    found = find_volatile(HEAD, default_counter())
    kinds = [v.kind for v in found]
    assert kinds == ["date", "timestamp", "uuid", "nonce", "counter", "nonce", "unix_time",
                     "hex_id"]
    for v in found:
        assert HEAD[v.start:v.end] == v.text
        assert v.token_position == default_counter().count(HEAD[:v.start])
        assert v.suggestion
    assert found[0].text == "2026-11-30"
    assert "cached prefix" in found[0].suggestion


def test_stable_text_has_none() -> None:
    assert find_volatile("You are a careful engineer. Use snake_case_identifiers_always.\n"
                         "Never commit secrets.", default_counter()) == []
