"""What a hook could save on a recorded session when the client compacts as it does, by
how much the hook knows of the future (osiris.harness.reports.bounds)."""

from __future__ import annotations

from osiris.core.cost_models import default_cost_models
from osiris.core.tokens import default_counter
from osiris.harness.importers.records import Compaction, Trace, TraceStep
from osiris.harness.reports import report
from osiris.harness.reports.bounds import (
    CLIENT_THRESHOLD,
    Output,
    Timeline,
    chosen_rule,
    previewed,
    rule_saving,
    rules,
    seen_as,
    threshold,
)
from osiris.harness.reports.reach import reach, reach_rows
from tests.conftest import REPO

COUNTER = default_counter()
MODEL = default_cost_models().get("anthropic-5m")


def _usage(prompt: int, cached: int, output: int = 100) -> dict[str, int]:
    return {"cache_read_input_tokens": cached, "cache_creation_input_tokens": prompt - cached,
            "input_tokens": 0, "output_tokens": output}


def test_the_client_compacts_where_the_author_did_and_never_below_what_did_not() -> None:
    prompt, output = [1_000, 150_000, 30_000, 40_000], [10, 10, 10, 10]
    claude = CLIENT_THRESHOLD["claude-code"]
    # Compacted before request 2: after the answer that took the prompt to 150,010.
    assert threshold(prompt, output, frozenset({2}), claude) == 150_010
    # A compaction after a jump far above the client's rule (one huge result): capped.
    assert threshold([1_000, 190_000, 30_000], [10] * 3, frozenset({2}), claude) == claude
    assert threshold([1_000, 190_000, 30_000], [10] * 3, frozenset({2}), 245_000) == 190_010
    # A session that went past 170,000 without compacting: above that.
    assert threshold([1_000, 170_000], [10, 10], frozenset(), claude) == 170_011


def test_a_rule_decides_by_what_a_hook_sees_when_the_output_arrives() -> None:
    assert seen_as("Bash", {"command": "cd app && npm test 2>&1 | tail -40"}) == "log"
    assert seen_as("Bash", {"command": "cat src/app.ts"}) == "shell"
    assert seen_as("exec_command", {"cmd": "bun run build"}) == "log"
    assert seen_as("Read", {"file_path": "/w/app.py", "offset": 120, "limit": 40}) == "range"
    assert seen_as("Read", {"file_path": "/w/app.py"}) == "source"
    assert seen_as("Read", {"file_path": "/w/README.md"}) == "text"
    assert seen_as("Read", {"file_path": "/w/Makefile"}) == "text"
    assert seen_as("mcp__github__get_issue", {}) == "other"
    named = rules()
    assert len(named) == 12 and "every output from 600 tokens" in named
    # The rule chosen is the best on the tuning rows alone, whatever the others say.
    tuning = [{"modelled_bare_cost": 1.0, "saving_by_rule": '{"a": 0.05, "b": 0.01}'},
              {"modelled_bare_cost": 3.0, "saving_by_rule": '{"a": -0.01, "b": 0.02}'}]
    unseen = [{"modelled_bare_cost": 1.0, "saving_by_rule": '{"a": 0.5, "b": 0.0}'}]
    name, saving = chosen_rule(tuning) or ("", 0.0)
    assert name == "b" and abs(saving - 0.0175) < 1e-9
    assert rule_saving(unseen, "b") == 0.0 and chosen_rule([]) is None


def _postponed_session() -> Trace:
    """A session whose one big Read pushed the prompt over the threshold: the client
    compacted before request 2 and carried a small summary for 40 requests after."""
    read = "\n".join(f"{n:6}→    value_{n} = compute(value_{n - 1})  # step {n}"
                     for n in range(1, 400))
    size = COUNTER.count(read)
    head, history, base = 2_000, 20_000, 3_000
    usage = [_usage(history, head), _usage(history + 100 + size, history)]
    usage += [_usage(base + 20 * k, head if k == 0 else base + 20 * (k - 1))
              for k in range(40)]
    return Trace("s.jsonl", "claude-code", steps=[
        TraceStep(0, "Read", {"file_path": "/w/m.py"}, read, False, "c0", 0),
        TraceStep(1, "Bash", {"command": "ls"}, "m.py", False, "c1", 2),
    ], usage=usage,
        compactions=[Compaction(1, history + 200 + size, "the summary " * 40)])


def test_keeping_a_result_out_puts_off_the_compaction_the_record_made_and_can_cost_more() -> None:
    row = reach(_postponed_session(), "s", COUNTER).row()
    assert row["modelled_bare_compactions"] == 1
    # With the compaction where it was recorded, keeping the Read out saves its one carry.
    assert row["saving_clairvoyant_fixed"] > 0
    # The client as it behaves does not compact (the prompt stays under the threshold)
    # and carries the whole history for 40 requests where the author's carried a summary.
    assert row["compactions_clairvoyant"] == 0
    assert row["saving_clairvoyant"] < 0
    # Every hook pays it: the compaction is the client's.
    assert row["saving_no_foresight"] < 0


def _line(requests: int) -> Timeline:
    prompt = [20_000 + 500 * j for j in range(requests)]
    return Timeline(prompt=prompt, output=[100] * requests,
                    growth=[0] + [500] * (requests - 1), arriving=[0] * requests,
                    cuts=frozenset(), expired=[False] * requests, head=10_000, base=0,
                    summary=0, threshold=CLIENT_THRESHOLD["claude-code"])


def test_a_hook_that_knows_the_outputs_cuts_only_where_the_recalls_pay() -> None:
    """A file quoted once at the end pays for its recall; a file whose every line is
    quoted over the next requests does not. Without foresight both are cut."""
    text = "\n".join(f"line_{n:03d} = handler_{n:03d}()" for n in range(300))
    tokens = COUNTER.count(text)
    once = Output(arrival=1, end=60, tokens=tokens, needs=[(59, "line_150")], text=text)
    everywhere = Output(arrival=1, end=60, tokens=tokens,
                        needs=[(2 + n // 10, f"line_{n:03d}") for n in range(300)], text=text)
    line = _line(60)
    chosen = previewed([once, everywhere], COUNTER, line, MODEL, lines=(0,), choose=True)
    assert [kept for kept in chosen.kept_out if kept[2] > 0] == [(1, 1, tokens - 60)]
    assert chosen.recalls == {59: 1}
    # Its recall puts the quoted line back from the request that used it.
    assert [(first, arrival) for first, arrival, kept in chosen.kept_out if kept < 0] \
        == [(59, 1)]
    # Of several previews it shows the one that saves the most: 20 lines hold this need.
    early = Output(arrival=1, end=60, tokens=tokens, needs=[(5, "line_003")], text=text)
    head = COUNTER.count("\n".join(text.split("\n")[:20])) + 60
    best = previewed([early], COUNTER, line, MODEL, lines=(0, 20), choose=True)
    assert best.kept_out == [(1, 1, tokens - head)] and best.recalls == {}
    blind = previewed([once, everywhere], COUNTER, line, MODEL, lines=(20,), choose=False)
    assert len([kept for kept in blind.kept_out if kept[2] > 0]) == 2
    # What the 20 lines shown hold is not recalled: requests 2 and 3 use only those.
    assert 2 not in blind.recalls and 3 not in blind.recalls and blind.recalls[4] == 1


def test_the_recorded_sessions_bound_what_a_hook_saves_by_what_it_knows() -> None:
    rows = [r for r in reach_rows(REPO / "datasets", COUNTER) if r["client"] == "claude-code"]
    for row in rows:
        assert row["modelled_bare_cost"] > 0
        # The model's client compacts the bare session where its author's client did.
        assert row["modelled_bare_compactions"] == row["compactions"]
        assert row["saving_clairvoyant"] >= row["saving_knows_outputs"] - 1e-9
    bare = sum(r["modelled_bare_cost"] for r in rows)

    def pooled(key: str) -> float:
        return sum(r[key] * r["modelled_bare_cost"] for r in rows) / bare
    # With compactions where they were recorded the model gives reach's ceiling back
    # (within a point), and the client's own compactions take a third of it away.
    ceiling = sum(r["ceiling_billed_saving"] for r in rows) / sum(
        r["recorded_billed_cost"] for r in rows)
    assert abs(pooled("saving_clairvoyant_fixed") - ceiling) < 0.01
    assert pooled("saving_clairvoyant") < pooled("saving_clairvoyant_fixed") - 0.03
    assert pooled("saving_no_foresight") < pooled("saving_knows_outputs") \
        < pooled("saving_clairvoyant")
    section = "\n".join(report.bounds_section(rows))
    assert section.startswith("### What a hook could save, by what it knows of the future")
    assert "| corpus/claude-code/cipherbox-sharing |" in section
    assert f"{pooled('saving_knows_outputs'):.1%}" in section
    assert "- Claude Code: *" in section and "of the unseen (3)" in section
    assert report.bounds_section([{"client": "codex", "modelled_bare_cost": None}]) == []
