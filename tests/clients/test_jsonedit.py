"""The text-splicing JSON editor behind `osiris install`: styles kept, round trips exact."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from osiris.clients.jsonedit import JsonDocument
from osiris.errors import ConfigError

ENTRY = {"command": "/py", "args": ["-m", "osiris"], "env": {"OSIRIS_HOME": "/h"}}

STYLES = {
    "two spaces": lambda d: json.dumps(d, indent=2) + "\n",
    "four spaces, no final newline": lambda d: json.dumps(d, indent=4),
    "tabs": lambda d: json.dumps(d, indent="\t") + "\n",
    "one line": json.dumps,
    "JSON.stringify compact": lambda d: json.dumps(d, separators=(",", ":")),
    "CRLF": lambda d: json.dumps(d, indent=2).replace("\n", "\r\n") + "\r\n",
    "non-ASCII kept": lambda d: json.dumps(d, indent=2, ensure_ascii=False) + "\n",
}
DOCS = [
    {},
    {"a": 1},
    {"mcpServers": {}},
    {"mcpServers": {"x": {"command": "npx", "args": ["-y", "é"]}}, "z": [1, 2.5, None]},
    {"hooks": {"PreToolUse": []}, "b": {"c": {"d": [True, False]}}},
]


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("data", DOCS)
def test_insert_then_delete_gives_back_the_bytes(style: str, data: dict[str, Any]) -> None:
    original = STYLES[style](data)
    doc = JsonDocument(original)
    servers_existed = "mcpServers" in data
    if servers_existed:
        doc.set(("mcpServers", "osiris"), ENTRY)
    else:
        doc.set(("mcpServers",), {"osiris": ENTRY})
    doc.verify()
    written = doc.render()
    assert json.loads(written)["mcpServers"]["osiris"] == ENTRY
    if "\r\n" in original:
        assert "\n" not in written.replace("\r\n", "")
    if style == "two spaces" and not data:  # a new member in a new file looks like json.dumps
        assert written == json.dumps({"mcpServers": {"osiris": ENTRY}}, indent=2) + "\n"

    again = JsonDocument(written)
    again.set(("mcpServers", "osiris", "env", "OSIRIS_ROOTS"), "/r")
    again.set(("mcpServers", "osiris", "command"), "/other")
    again.delete(("mcpServers", "osiris", "env", "OSIRIS_ROOTS"))
    again.set(("mcpServers", "osiris", "command"), "/py")
    again.delete(("mcpServers", "osiris"))
    if not servers_existed:
        again.delete(("mcpServers",))
    again.verify()
    assert again.render() == original


def test_appended_items_follow_their_siblings_style() -> None:
    text = '{\n  "hooks": {\n    "PreToolUse": [{"matcher": "Bash", "hooks": []}]\n  }\n}\n'
    doc = JsonDocument(text)
    doc.append(("hooks", "PreToolUse"), {"matcher": "*", "hooks": []})
    doc.verify()
    assert doc.render() == ('{\n  "hooks": {\n    "PreToolUse": [{"matcher": "Bash", '
                            '"hooks": []}, {"matcher": "*", "hooks": []}]\n  }\n}\n')
    doc.delete(("hooks", "PreToolUse", 0))
    doc.verify()
    assert json.loads(doc.render()) == {"hooks": {"PreToolUse": [{"matcher": "*",
                                                                   "hooks": []}]}}


def test_a_byte_order_mark_is_kept() -> None:
    doc = JsonDocument('\ufeff{"a": 1}')
    doc.set(("b",), 2)
    assert doc.render() == '\ufeff{"a": 1, "b": 2}'


def test_duplicate_keys_edit_the_one_json_reads() -> None:
    doc = JsonDocument('{"a": 1, "b": 2, "a": 3}')
    assert doc.get(("a",)) == 3
    doc.set(("a",), 4)
    doc.verify()
    assert doc.render() == '{"a": 1, "b": 2, "a": 4}'
    # Deleting it would bring the shadowed value back: refused, not written.
    doc.delete(("a",))
    with pytest.raises(ConfigError, match="duplicate keys"):
        doc.verify()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(data=st.dictionaries(st.text(max_size=6), json_values, max_size=5),
       style=st.sampled_from(sorted(STYLES)), value=json_values)
def test_any_document_round_trips(data: dict[str, Any], style: str, value: Any) -> None:
    original = STYLES[style](data)
    key = "osiris-" + "".join(sorted(data))  # a key the document does not have
    doc = JsonDocument(original)
    doc.set((key,), value)
    doc.verify()
    assert json.loads(doc.render()) == {**data, key: value}
    doc.delete((key,))
    doc.verify()
    assert doc.render() == original
