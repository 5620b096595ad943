"""The owner's wire codec writes and reads what ``json`` does, without importing it (a
hook process starts about 10 ms sooner: ``osiris.owner_wire``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from osiris import owner_wire

VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner), max_leaves=40)


def _own_dumps(value: Any) -> str:
    out: list[str] = []
    owner_wire._encode(value, out)  # the path a process without json takes
    return "".join(out)


@settings(max_examples=400, deadline=None)
@given(VALUES)
def test_the_codec_writes_and_reads_what_json_does(value: Any) -> None:
    text = _own_dumps(value)
    assert text == json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    assert json.dumps(owner_wire.loads(text)) == json.dumps(json.loads(text))


@pytest.mark.parametrize("bad", ["", " {}", "{} ", "{", "[1,]", "nul", '"\\x"', "{1: 2}"])
def test_malformed_frames_are_value_errors(bad: str) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - the frame reader turns any into one
        owner_wire.loads(bad)


def test_what_json_cannot_write_the_codec_refuses() -> None:
    for value in ({1: "int key"}, {"x": object()}, {"set": {1}}):
        with pytest.raises(TypeError):
            _own_dumps(value)
