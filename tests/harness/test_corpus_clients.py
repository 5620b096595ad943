"""Which corpus sessions the real-client stage plays, and how it cuts them into turns
(no client needed)."""

from __future__ import annotations

from pathlib import Path

from osiris.harness.importers.traces import load_trace
from osiris.harness.real_clients.corpus import corpus_sessions, truncated, turns_of
from osiris.harness.real_clients.run import CLAUDE_CODE, CODEX
from osiris.harness.real_clients.trace_plan import PathMap, plan
from osiris.harness.replay.workloads import session_from_trace
from tests.conftest import REPO

CORPUS = REPO / "datasets" / "corpus"


def test_sessions_with_a_workspace_are_played_the_others_are_replay_only() -> None:
    found = corpus_sessions(CORPUS)
    assert {e.client for e in found} == {CLAUDE_CODE, CODEX}
    sources = (CORPUS / "SOURCES.md").read_text(encoding="utf-8")
    for entry in found:
        line = next(x for x in sources.splitlines()
                    if f"`{entry.path.parent.name}/{entry.path.name}`" in x)
        assert (entry.tarball is None) == ("replay only" in line), entry.name
    assert any(e.tarball is None for e in found) and any(e.tarball for e in found)


def test_later_typed_prompts_become_turns_at_their_step(tmp_path: Path) -> None:
    path = CORPUS / "claude-code" / "entire-cli-go.jsonl"
    trace = load_trace(path)
    session = session_from_trace(trace, "entire-cli-go", str(path))
    paths = PathMap(str(trace.meta["cwd"]), tmp_path / "project", tmp_path / "tmp",
                    tmp_path / "home")
    turns = turns_of(trace, session, paths)
    typed = [p for p in trace.user_prompts
             if p.kind == "typed" and not p.opening and p.text.strip()]
    assert [t.step for t in turns] == sorted({p.step for p in typed})
    assert all(t.prompt.strip() and t.answer.strip() for t in turns)
    assert str(trace.meta["cwd"]) not in "".join(t.prompt for t in turns)
    calls = plan(session, CLAUDE_CODE, paths)
    kept, first, answer = truncated(calls, turns, 2)
    assert first == turns[:1] and answer == turns[1].answer
    assert kept == [c for c in calls if c.step < turns[1].step] and kept
    assert truncated(calls, turns, len(turns) + 1) == (calls, turns, None)


def _row(session: str, configuration: str, **extra: object) -> dict[str, object]:
    row: dict[str, object] = {
        "session": session, "client": CLAUDE_CODE, "configuration": configuration,
        "status": "ok", "requests": 10, "cumulative_input_tokens": 1000,
        "billed_cost_anthropic-5m": 0.01, "tool_result_tokens": 100, "head_tokens": 50,
        "needs_total": 1, "needs_kept": 1, "needs_retrieved": 0, "extra_calls": 0,
        "failed_calls": 0, "compactions": 1, "reactive_compactions": 0,
        "compaction_requests": 1, "refused_requests": 0, "needed_refusal": False,
        "first_prompt_tokens": 20, "neutralised": "{}"}
    row.update(extra)
    return row


def test_the_note_names_sessions_that_needed_a_refusal_and_replay_only_ones() -> None:
    from osiris.harness.real_clients.sessions import REPLAY_ONLY
    from osiris.harness.real_clients.tables import render

    rows = [_row("corpus/claude-code/a", "bare"),
            _row("corpus/claude-code/a", "osiris", compactions=0, reactive_compactions=1,
                 refused_requests=1, needed_refusal=True),
            {"session": "corpus/claude-code/b", "client": CLAUDE_CODE,
             "configuration": "bare", "status": REPLAY_ONLY}]
    text = render(rows)
    assert "1 prompts were refused, in corpus/claude-code/a (osiris)" in text
    assert "0 + 1 after a refusal" in text  # the osiris row's compactions cell
    assert "replay only (not played here): `corpus/claude-code/b`" in text
    assert "| corpus/claude-code/b |" not in text
    calm = render(rows[:1])
    assert "no session needed the refusal" in calm


def test_pooled_totals_keep_the_corpus_apart_from_the_bundled_traces() -> None:
    """The corpus runs fewer configurations: its sessions are pooled on their own, so
    they count in the table instead of falling out of 'every configuration ran'."""
    from osiris.harness.real_clients.tables import pooled

    rows = [_row("claude-code__x/t/1", c, cumulative_input_tokens=1000)
            for c in ("bare", "osiris", "context-mode")]
    rows += [_row("corpus/claude-code/a", "bare", cumulative_input_tokens=2000),
             _row("corpus/claude-code/a", "osiris", cumulative_input_tokens=1500)]
    table = pooled(rows)
    assert "| claude-code | corpus | osiris | 1 | 1,500 | +25.00% |" in "\n".join(table)
    assert "| claude-code | traces | context-mode | 1 | 1,000 | +0.00% |" in "\n".join(table)
    assert not any("| corpus | context-mode |" in line for line in table)
