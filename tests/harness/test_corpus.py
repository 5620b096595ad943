"""The public corpus (``datasets/corpus/``) as the importers read it, and ``osiris replay``
on the Codex rollouts it used to refuse, through the real CLI."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from osiris.harness.importers.traces import Trace, find_traces, load_trace, problem
from tests.conftest import REPO, run_cli

CORPUS = REPO / "datasets" / "corpus"


def _sources() -> dict[str, dict[str, str]]:
    """``SOURCES.md``'s table, one row per file."""
    lines = (CORPUS / "SOURCES.md").read_text("utf-8").splitlines()
    header = next(line for line in lines if line.startswith("| file |"))
    names = [c.strip() for c in header.strip("|").split("|")]
    rows = {}
    for line in lines:
        if line.startswith("| `"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            row = dict(zip(names, cells, strict=True))
            rows[row["file"].strip("`")] = row
    return rows


def _calls(trace: Trace, version: str) -> int:
    """The calls the session's own log holds, as ``SOURCES.md`` counted them: the main
    agent's, its last call even without a result (a cumulative Entire checkpoint), and
    1.0's inline sub-agents (2.1 keeps those in ``progress`` records, not counted);
    Codex's ``tool_search`` is a provider-side search, not counted either."""
    calls = len([s for s in trace.steps if s.tool != "tool_search"])
    calls += trace.skipped.get("call_without_result", 0)
    if version.startswith("1.0"):
        calls += sum(len(sub.steps) for sub in trace.subagents)
    return calls


def test_every_corpus_file_has_its_licence_provenance_and_imports_whole() -> None:
    sources = _sources()
    files = [str(p.relative_to(CORPUS)) for p in find_traces(CORPUS)]
    # Licence texts and workspace tarballs are not taken for transcripts.
    assert sorted(files) == sorted(sources) and len(files) == 12
    for name, row in sources.items():
        owner_repo = row["repository"].replace("/", "__")
        assert (CORPUS / "licenses" / f"{owner_repo}.txt").stat().st_size > 100, name
        tarball = re.search(r"`(workspaces/[^`]+\.tar\.gz)`", row["workspace"])
        assert tarball is None or (CORPUS / tarball.group(1)).is_file(), name
        trace = load_trace(CORPUS / name)
        assert problem(trace) is None, name
        assert trace.format == ("codex-cli" if name.startswith("codex/") else "claude-code")
        assert trace.meta["client_version"] == row["client version"], name
        # Nothing unknown was skipped: every record is read or known as bookkeeping.
        assert set(trace.skipped) <= {"call_without_result"}, (name, trace.skipped)
        assert trace.skipped.get("call_without_result", 0) <= 1, name
        assert _calls(trace, row["client version"]) == int(row["tool calls"]), name
        assert trace.meta["cwd"], name


def test_codex_rollouts_0140_to_0142_give_every_call_kind_with_its_exit_status() -> None:
    trace = load_trace(CORPUS / "codex" / "agentv-ci-node24.jsonl")
    tools = Counter(s.tool for s in trace.steps)
    assert {"exec_command", "write_stdin", "apply_patch"} <= set(tools)
    assert tools["exec_command"] > 300
    execs = [s for s in trace.steps if s.tool == "exec_command"]
    assert all(isinstance(s.args.get("cmd"), str) and s.args["cmd"] for s in execs)
    # The header Codex wrote says which commands failed; most did not.
    failed = [s for s in execs if s.is_error]
    assert 0 < len(failed) < len(execs) / 2
    assert all(re.search(r"Process exited with code [1-9]", s.output[:400]) for s in failed)
    patches = [s for s in trace.steps if s.tool == "apply_patch"]
    assert all("*** Begin Patch" in str(s.args.get("input")) for s in patches)
    # Codex compacted its history three times; each is where the replay compacts it too.
    assert len(trace.compactions) == 3
    assert all(0 < c.step < len(trace.steps) for c in trace.compactions)
    # A token count repeated for a rate-limit update is one response, not two.
    assert len(trace.usage) <= len({s.response for s in trace.steps}) + 20


def test_interactive_sessions_keep_every_user_prompt_where_it_was_sent() -> None:
    trace = load_trace(CORPUS / "claude-code" / "entire-cli-go.jsonl")
    typed = [p for p in trace.user_prompts if p.kind == "typed"]
    assert len(typed) == 14
    assert typed[0].opening and not any(p.opening for p in typed[1:])
    steps = [p.step for p in trace.user_prompts]
    assert steps == sorted(steps) and steps[-1] > 0
    assert typed[0].text in trace.task_prompt
    rollout = load_trace(CORPUS / "codex" / "agentv-spark.jsonl")
    kinds = Counter(p.kind for p in rollout.user_prompts)
    assert kinds["typed"] == 10
    # What Codex writes in the user's name (AGENTS.md, environment) is the client's.
    assert all(p.kind == "client" for p in rollout.user_prompts
               if p.text.lstrip().startswith(("<environment_context>", "# AGENTS.md")))


def test_sub_agents_are_conversations_of_their_own() -> None:
    inline = load_trace(CORPUS / "claude-code" / "ccviewer-todo-1.0.98.jsonl")  # 1.0
    nested = load_trace(CORPUS / "claude-code" / "strato.jsonl")  # 2.1 progress records
    for trace in (inline, nested):
        tasks = {s.call_id for s in trace.steps if s.tool in ("Task", "Agent")}
        assert trace.subagents and tasks
        for sub in trace.subagents:
            assert sub.steps, sub.source
            assert sub.meta["parent_call_id"] in tasks, sub.source


def test_a_file_the_importers_cannot_use_gets_a_reason_to_act_on(tmp_path: Path) -> None:
    unknown = tmp_path / "events.jsonl"
    unknown.write_text(json.dumps({"kind": "telemetry", "at": 1}) + "\n"
                       + json.dumps({"kind": "telemetry", "at": 2}) + "\n", "utf-8")
    reason = problem(load_trace(unknown))
    assert reason is not None
    assert "keys: at, kind" in reason and "~/.codex/sessions" in reason
    assert "~/.claude/projects" in reason
    future = tmp_path / "future.jsonl"
    future.write_text("\n".join(json.dumps(r) for r in (
        {"type": "user", "version": "9.3.0", "cwd": "/w", "sessionId": "s",
         "message": {"role": "user", "content": "hello"}},
        {"type": "assistant", "version": "9.3.0", "cwd": "/w", "sessionId": "s",
         "message": {"role": "assistant", "content": [{"type": "shiny_new_block"}]}},
        {"type": "hologram", "version": "9.3.0"})) + "\n", "utf-8")
    reason = problem(load_trace(future))
    assert reason is not None
    assert "Claude Code 9.3.0" in reason and "1.0 to 2.1" in reason
    assert "event:hologram ×1 (first at line 3)" in reason
    done = run_cli("replay", "--json", str(unknown), str(future), timeout=120)
    assert done.returncode != 0 or '"files"' in done.stdout
    doc = json.loads(done.stdout) if done.stdout.strip().startswith("{") else {}
    said = json.dumps(doc.get("skipped", {})) + done.stderr
    assert "keys: at, kind" in said and "first at line 3" in said


@pytest.mark.slow
def test_replay_reads_a_real_codex_rollout_it_used_to_refuse() -> None:
    done = run_cli("replay", "--json", str(CORPUS / "codex" / "agentv-spark.jsonl"),
                   timeout=600)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["skipped"]["files"] == []
    (session,) = doc["sessions"]
    assert session["format"] == "codex-cli" and session["tool_calls"] == 177
    systems = session["systems"]
    assert systems["osiris"]["needs_found"] >= 0.99 * systems["osiris"]["needs_total"]
    assert systems["osiris"]["cumulative_input_tokens"] < \
        systems["client-native"]["cumulative_input_tokens"]
