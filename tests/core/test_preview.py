"""Previews: the error lines found over the whole payload are those a search per line finds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from osiris.core import preview

WORDS = st.sampled_from([
    "ok", "  E   assert 1 == 2", "Traceback (most recent call last):", "FAILED x", "FAIL",
    "\r", "error\r", "  ", "E", "E  ", " \tE\t\tx", "✗ broken", "not  found", "cannot",
    "x" * 600 + " error", "errors", "FAILURES", "panicked", "", "\x0c", "ünïcode fine",
    "faİled", "ERRıR", "ſegmentation fault", "\u212aILLED fatal", "ǅ", "İİİ", "\u00a0E\u2003\u2003",
    "Not Found", "not\nfound", "érror", "日error日", "✕",
])
LINES = st.lists(st.one_of(WORDS, st.text(max_size=12),
                           st.tuples(st.text(max_size=4), WORDS, st.text(max_size=4)).map(
                               "".join)), max_size=12)


@given(LINES)
@settings(max_examples=400, deadline=None)
def test_the_error_lines_are_those_a_search_per_line_finds(lines: list[str]) -> None:
    for text in ("\n".join(lines), "\n".join(lines) + "\n", "\r\n".join(lines)):
        payload = preview._payload_lines(text)
        assert preview._error_lines(text, payload) == [
            i for i, line in enumerate(payload) if preview._ERROR_LINE.search(line[:500])]


def test_every_space_re_knows_is_a_space_of_the_e_line_search() -> None:
    spaces = [chr(c) for c in range(0x3001) if chr(c).isspace() and chr(c) != "\n"]
    for space in spaces:
        text = f"ok\n{space}E{space}{space}x\nok"
        payload = preview._payload_lines(text)
        assert preview._error_lines(text, payload) == [1], hex(ord(space))

