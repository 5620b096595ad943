"""The pure routing decisions of :mod:`osiris.core.routing`."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from osiris.core.routing import (
    RoutingConfig,
    changed_span,
    compaction_context,
    read_changes_context,
    shell_candidate,
    shell_replacement,
)

REF = "mem://sha256:" + "a" * 64
SHORT = "mem://sha256:" + "a" * 16
"""What the model is shown of REF: 16 hex digits, which osiris_recall resolves."""


def test_a_shell_output_is_a_candidate_unless_off_in_the_background_or_exempt() -> None:
    config = RoutingConfig(exempt=("npm run dev*",))
    assert shell_candidate("Bash", {"command": "pytest -q"}, config) == "pytest -q"
    assert shell_candidate("exec_command", {"cmd": ["make", "test"]}, config) == "make test"
    assert shell_candidate("Bash", {"command": "npm run dev -- -p 3"}, config) is None
    assert shell_candidate("Bash", {"command": "npm test", "run_in_background": True},
                           config) is None
    assert shell_candidate("Read", {"command": "x"}, config) is None
    assert shell_candidate("Bash", {"command": "  "}, config) is None
    assert shell_candidate("Bash", {"command": "ls"}, RoutingConfig(shell=False)) is None


def test_the_replacement_names_the_status_only_where_it_stands_for_the_clients_own() -> None:
    codex = shell_replacement("FAILED x\n", lines=10, tokens=99, ref=REF, exit_code=2,
                              status_line=True)
    assert codex.startswith("Process exited with code 2\nFAILED x\n[osiris: whole output "
                            "(10 lines, 99 tokens) stored as " + SHORT + ": ")
    claude = shell_replacement("ok", lines=1, tokens=5, ref=REF, exit_code=None,
                               status_line=False)
    assert claude.startswith("ok\n[osiris: whole output")
    cut = shell_replacement("", lines=3, tokens=4, ref=REF, exit_code=0, status_line=True,
                            complete=False)
    assert "[osiris: output as the client kept it, its middle cut (3 lines" in cut


def test_after_a_compaction_older_refs_are_said_to_exist_not_counted() -> None:
    refs = [{"ref": REF, "what": f"output {i}", "tokens": 600} for i in range(4)]
    text = compaction_context("OSIRIS/1 task=x", refs, limit=3)
    assert text.count(SHORT) == 3 and REF not in text
    assert text.endswith("- … and older refs, not listed here")
    assert "older" not in compaction_context("OSIRIS/1 task=x", refs[:3], limit=3)


LINES = st.lists(st.sampled_from(["a", "b", "c", "", "  d"]), max_size=12)


@settings(derandomize=True, max_examples=300)
@given(old=LINES, new=LINES, context=st.integers(0, 3))
def test_the_changed_span_and_the_earlier_read_give_back_the_file(
        old: list[str], new: list[str], context: int) -> None:
    """What a changed re-read tells the model is enough: the earlier read's lines before
    the span, the span as shown, and the earlier read's last lines after it (moved) are
    the file as it is now, line for line."""
    span = changed_span("\n".join(old), "\n".join(new), context)
    old, new = "\n".join(old).splitlines(), "\n".join(new).splitlines()  # as numbered
    if span is None:
        assert old == new or not new
        return
    first, last = span
    assert 1 <= first <= last <= len(new)
    after = len(new) - last  # the lines after the span, taken from the earlier read
    rebuilt = old[:first - 1] + new[first - 1:last] + (old[len(old) - after:] if after else [])
    assert rebuilt == new
    assert first - 1 <= len(old) and after <= len(old) - (first - 1)


def test_the_changed_span_keeps_context_lines_and_points_at_a_deletion() -> None:
    old = "\n".join(f"line {i}" for i in range(1, 21))
    assert changed_span(old, old.replace("line 10", "LINE 10"), 2) == (8, 12)
    assert changed_span(old, old.replace("line 10\n", ""), 0) == (10, 10)  # line 11 now
    assert changed_span(old, old + "\nline 21", 1) == (20, 21)
    assert changed_span(old, old, 3) is None


def test_the_note_says_where_every_other_line_is() -> None:
    note = read_changes_context("/p/app.py", span=(10, 20), lines=100, old_lines=95,
                                tool_use_id="toolu_1", ref=REF)
    assert "changed since you read it whole (tool call toolu_1)" in note
    assert "Shown: lines 10-20" in note and "(100 lines; 95 then)" in note
    assert "Lines 1-9 are as in that read." in note
    assert "Lines 21-100 are that read's lines 16-95, moved by +5." in note
    assert note.count(SHORT) == 2 and REF not in note
    top = read_changes_context("/p/app.py", span=(1, 100), lines=100, old_lines=100,
                               tool_use_id=None, ref=REF)
    assert "Lines 1-" not in top and "that read's lines" not in top
