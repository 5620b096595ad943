"""``osiris replay`` through the real CLI, on the real traces in every layout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pyarrow.parquet as pq
import pytest

from osiris.harness.importers.traces import find_traces, load_trace
from osiris.harness.user_sessions import schema
from tests.conftest import TRACES, run_cli
from tests.harness.transcripts import claude_session_file, codex_rollout

CLAUDE = TRACES / "claude-code__tielec-ai-workflow-agent/issue-271/04_implementation/execute/" \
    "agent_log_raw.txt"
CODEX = TRACES / "codex-cli__tielec-ai-workflow-agent/issue-119/01_requirements/review/" \
    "agent_log_raw.txt"


def _replay(*args: str, timeout: float = 600) -> tuple[int, dict[str, Any], str]:
    done = run_cli("replay", "--json", *args, timeout=timeout)
    doc = json.loads(done.stdout) if done.stdout.strip().startswith("{") else {}
    return done.returncode, doc, done.stderr


@pytest.fixture(scope="module")
def whole_dataset(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """One run over every dataset transcript, with Parquet."""
    out = tmp_path_factory.mktemp("replay") / "parquet"
    code, doc, stderr = _replay(str(TRACES), "--parquet", str(out))
    assert code == 0, stderr
    return doc, out


@pytest.mark.slow
def test_every_format_of_the_dataset_replays_and_matches_the_schema(
        whole_dataset: tuple[dict[str, Any], Path]) -> None:
    doc, _ = whole_dataset
    jsonschema.validate(doc, schema())
    paths = find_traces(TRACES)
    assert len(doc["sessions"]) == len(paths) == 11
    assert {s["format"] for s in doc["sessions"]} == {"claude-code", "codex-cli",
                                                     "mini-swe-agent", "swe-agent"}
    for session, path in zip(doc["sessions"], paths, strict=True):
        assert session["tool_calls"] == len(load_trace(path).steps)
        systems = session["systems"]
        # Nothing the agent needed is lost by OSIRIS, and the oracle is the floor.
        assert systems["osiris"]["needs_found"] == systems["osiris"]["needs_total"]
        assert systems["oracle"]["cumulative_input_tokens"] <= \
            systems["raw"]["cumulative_input_tokens"]
    totals = doc["totals"]
    assert totals["osiris"]["cumulative_input_tokens"] < totals["raw"]["cumulative_input_tokens"]
    assert doc["skipped"] == {"lines": {}, "files": [], "unmatched_paths": []}


@pytest.mark.slow  # the whole dataset's replay (a minute) feeds it
def test_provider_usage_and_loopguard_are_reported_where_the_transcript_has_them(
        whole_dataset: tuple[dict[str, Any], Path]) -> None:
    doc, _ = whole_dataset
    by_format: dict[str, list[dict[str, Any]]] = {}
    for session in doc["sessions"]:
        by_format.setdefault(session["format"], []).append(session)
    for session in by_format["claude-code"]:
        usage = session["provider_usage"]
        assert usage["records"] > 1 and usage["input_tokens"] > 0
        assert 0 < usage["cache_hit_ratio"] <= 1
        assert usage["unseen_head_tokens"] is not None
    for session in by_format["codex-cli"]:
        assert session["provider_usage"]["records"] == 1
        assert session["provider_usage"]["unseen_head_tokens"] is None
    for session in by_format["swe-agent"] + by_format["mini-swe-agent"]:
        assert session["provider_usage"] is None
        assert session["system_prompt"]["tokens"] > 0
    flagged = {s["name"].split("/")[-1]: s["loopguard"]["flags"] for s in doc["sessions"]}
    # The duplicate run LoopGuard catches in pylint (see reports/LOOPGUARD.md).
    assert any(f["verdict"] != "allow" for f in flagged["pylint-dev__pylint-6528.traj.json"])


@pytest.mark.slow  # the whole dataset's replay (a minute) feeds it
def test_parquet_tables_hold_every_session_system_and_step(
        whole_dataset: tuple[dict[str, Any], Path]) -> None:
    doc, out = whole_dataset
    sessions = pq.read_table(out / "sessions.parquet").to_pylist()
    steps = pq.read_table(out / "steps.parquet").to_pylist()
    calls = sum(s["tool_calls"] for s in doc["sessions"])
    assert len(sessions) == 4 * len(doc["sessions"])
    assert {r["system"] for r in sessions} == {"raw", "client-native", "oracle", "osiris"}
    assert len(steps) == 4 * calls
    raw_steps = [r for r in steps if r["system"] == "raw"]
    assert all(r["kept_tokens"] == r["output_tokens"] for r in raw_steps)
    osiris_steps = [r for r in steps if r["system"] == "osiris"]
    assert {r["mode"] for r in osiris_steps} >= {"bystander", "standard"}
    assert (out / "loopguard.parquet").exists()


def test_claude_session_files_and_codex_rollouts_import_like_their_stream(
        tmp_path: Path) -> None:
    projects = tmp_path / ".claude" / "projects" / "-home-dev-ai-workflow-agent"
    projects.mkdir(parents=True)
    session_file = projects / "4f35e220-c435-4cf7-b9b9-f40426042847.jsonl"
    session_file.write_text(claude_session_file(CLAUDE.read_text("utf-8")), "utf-8")
    rollouts = tmp_path / ".codex" / "sessions" / "2026" / "05" / "26"
    rollouts.mkdir(parents=True)
    rollout = rollouts / "rollout-2026-05-26T07-27-40-4f35e220.jsonl"
    rollout.write_text(codex_rollout(CODEX.read_text("utf-8")), "utf-8")

    code, doc, stderr = _replay(str(tmp_path / ".claude" / "projects"),
                                str(tmp_path / ".codex" / "sessions" / "**" / "*.jsonl"))
    assert code == 0, stderr
    jsonschema.validate(doc, schema())
    claude, codex = doc["sessions"]
    assert claude["format"] == "claude-code"
    assert codex["format"] == "codex-cli"
    stream, session = load_trace(CLAUDE), load_trace(session_file)
    assert [s.output for s in session.steps] == [s.output for s in stream.steps]
    assert claude["tool_calls"] == len(stream.steps)
    # Bookkeeping records are known and passed over; the sub-agent's record is a
    # conversation of its own, never a step of the main agent.
    assert claude["skipped"] == {}
    assert len(session.subagents) == 1
    assert session.subagents[0].meta["agent_id"].startswith("sidechain-")
    exec_json, rolled = load_trace(CODEX), load_trace(rollout)
    commands = [s for s in exec_json.steps if s.tool == "shell"]
    assert [s.output for s in rolled.steps] == [s.output for s in commands]
    assert [s.is_error for s in rolled.steps] == [s.is_error for s in commands]
    assert codex["provider_usage"]["input_tokens"] == exec_json.usage[0]["input_tokens"]


def test_malformed_lines_unknown_events_and_truncation_are_skipped_and_counted(
        tmp_path: Path) -> None:
    lines = CLAUDE.read_text("utf-8").splitlines()
    damaged = [lines[0], "{not json", "[1, 2]", '{"type": "telemetry", "x": 1}',
               *lines[1:-3], lines[-3][: len(lines[-3]) // 2]]
    path = tmp_path / "damaged.jsonl"
    path.write_text("\n".join(damaged), "utf-8")
    code, doc, stderr = _replay(str(path))
    assert code == 0, stderr
    skipped = doc["sessions"][0]["skipped"]
    assert skipped["malformed_line"] == 3  # the bad JSON, the array and the cut line
    assert skipped["event:telemetry"] == 1
    assert doc["skipped"]["lines"]["malformed_line"] == 3


def test_files_that_are_not_transcripts_are_reported_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("just some notes\n", "utf-8")
    (tmp_path / "blob.bin").write_bytes(bytes(range(256)) * 40)
    (tmp_path / "empty.jsonl").write_text("", "utf-8")
    (tmp_path / "chat.jsonl").write_text(json.dumps(
        {"type": "user", "sessionId": "s", "message": {"role": "user", "content": "hi"}})
        + "\n", "utf-8")
    good = tmp_path / "run.traj"
    good.write_bytes((TRACES / "swe-agent__SWE-agent" / "swe-agent__test-repo-i1.traj")
                     .read_bytes())
    code, doc, stderr = _replay(str(tmp_path))
    assert code == 0, stderr
    assert [s["name"].split("/")[-1] for s in doc["sessions"]] == ["run.traj"]
    reasons = {Path(f["path"]).name: f["reason"] for f in doc["skipped"]["files"]}
    assert set(reasons) == {"notes.txt", "blob.bin", "empty.jsonl", "chat.jsonl"}
    assert reasons["chat.jsonl"].startswith("no tool calls")
    assert "known format" in reasons["blob.bin"]

    # Nothing replayable at all: exit 1, and the reasons are still printed.
    (tmp_path / "run.traj").unlink()
    done = run_cli("replay", str(tmp_path))
    assert done.returncode == 1
    assert "none of the 4 files could be replayed" in done.stderr
    assert "notes.txt" in done.stdout


def test_paths_that_match_nothing_are_a_usage_error(tmp_path: Path) -> None:
    done = run_cli("replay", str(tmp_path / "missing.jsonl"), str(tmp_path / "*.nothing"))
    assert done.returncode == 2
    assert "no transcript found in" in done.stderr and "missing.jsonl" in done.stderr
    assert done.stdout == ""
    assert run_cli("replay").returncode == 2


def test_table_progress_and_schema(tmp_path: Path) -> None:
    done = run_cli("replay", str(TRACES / "swe-agent__SWE-agent"))
    assert done.returncode == 0, done.stderr
    header, rule, *rows = done.stdout.splitlines()
    assert header.split()[:3] == ["session", "format", "calls"]
    assert set(rule.replace(" ", "")) == {"-"}
    assert rows[0].startswith("pydicom__pydicom-1458.traj")
    assert rows[2].startswith("total (2 sessions)")
    assert "replay [" in done.stderr and "2/2" in done.stderr
    quiet = run_cli("replay", "--quiet", str(TRACES / "swe-agent__SWE-agent"))
    assert quiet.stderr == ""
    printed = run_cli("replay", "--schema")
    assert json.loads(printed.stdout) == schema()


def test_parquet_output_says_where_it_wrote(tmp_path: Path) -> None:
    done = run_cli("replay", "--quiet", "--parquet", str(tmp_path / "pq"),
                   str(TRACES / "swe-agent__SWE-agent" / "swe-agent__test-repo-i1.traj"))
    assert done.returncode == 0, done.stderr
    assert f"wrote {tmp_path / 'pq' / 'sessions.parquet'}" in done.stderr
