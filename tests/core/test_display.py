"""escape_controls: what is shown, what stays, and that it can be applied twice."""

from __future__ import annotations

import json

from osiris.core.display import escape_controls, escape_controls_json


def test_controls_are_shown_and_text_stays() -> None:
    assert escape_controls("a\x1b[2Jb\x07\x00\x7f\r") == "a\\x1b[2Jb\\x07\\x00\\x7f\\x0d"
    assert escape_controls("csi\x9b nel\x85") == "csi\\x9b nel\\x85"
    assert escape_controls("if admin\u202e\u2066 {") == "if admin\\u202e\\u2066 {"
    kept = "tab\there\nnext line: C:\\path \\x1b é 日本 🙂 \u200d \u2028"
    assert escape_controls(kept) == kept
    every = "".join(map(chr, range(0x20))) + "\x7f" + "".join(map(chr, range(0x80, 0xa0)))
    shown = escape_controls(every)
    assert shown.count("\\x") == len(every) - 2  # all but \t and \n
    assert escape_controls(shown) == shown


def test_the_json_form_still_parses_to_the_same_value() -> None:
    value = {"msg": "del\x7f c1\x85 rlo\u202e esc\x1b"}
    text = escape_controls_json(json.dumps(value, ensure_ascii=False))
    assert "\x7f" not in text and "\u202e" not in text and "\x1b" not in text
    assert json.loads(text) == value
