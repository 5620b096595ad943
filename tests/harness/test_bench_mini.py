"""``osiris bench clients``' mini-swe-agent profile on a small trajectory of its own: the
real ``mini`` in a checkout built from an sdist, bare and with OSIRIS, a need cut by
each and found again by the visible rule, measured from what the model received."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from osiris.harness.real_clients import mini
from osiris.harness.real_clients.sessions import session_rows
from osiris.harness.real_clients.workspaces import WorkspaceError
from tests.conftest import home_rows
from tests.loop_script import big_file

pytestmark = pytest.mark.slow  # real mini-swe-agent sessions

MARKER = "marker_5ab1e"
GHOST = "ghost_77c0d"


def _big() -> str:
    return big_file().replace("row 2500: value 17500", f"row 2500: {MARKER}")


def _sdist(folder: Path) -> mini.Source:
    """demo-1.0.tar.gz: big.txt and four small files under one top folder."""
    files = {"big.txt": _big(), **{f"part{k}.txt": "".join(
        f"part {k} line {i}: {i * k}\n" for i in range(60)) for k in range(4)}}
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"demo-1.0/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    (folder / "demo-1.0.tar.gz").write_bytes(buffer.getvalue())
    return mini.Source("demo", "1.0", "demo-1.0.tar.gz",
                       hashlib.sha256(buffer.getvalue()).hexdigest())


def _trajectory(traces: Path) -> Path:
    """A mini-swe-agent 1.x trajectory: its commands, and what its model saw of each."""
    # What the trajectory's model saw held GHOST too; the checkout's file does not.
    seen = _big().replace("row 100: value 700", f"row 100: {GHOST}")
    steps = [("cat big.txt", seen), ("wc -l big.txt", "4000 big.txt\n"),
             *[(f"cat part{k}.txt", "".join(f"part {k} line {i}: {i * k}\n"
                                            for i in range(60))) for k in range(4)],
             (f"grep -n {MARKER} big.txt", f"2501:row 2500: {MARKER}\n"),
             (f"echo {GHOST}", f"{GHOST}\n"),
             ("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached",
              "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n")]
    messages = [{"role": "system", "content": "You run one bash command per answer."},
                {"role": "user", "content": "<pr_description>Find the marker row."
                                            "</pr_description>"}]
    for command, output in steps:
        messages += [{"role": "assistant", "content": f"THOUGHT: next.\n\n```bash\n{command}"
                                                      "\n```"},
                     {"role": "user", "content": f"<returncode>0</returncode>\n<output>\n"
                                                 f"{output}</output>"}]
    path = traces / "mini-swe-agent__demo" / "demo__demo-1.traj.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"info": {"exit_status": "Submitted", "mini_version": "1.0"},
                                "messages": messages, "instance_id": "demo__demo-1"}))
    return path


def test_both_configurations_find_a_cut_need_again_and_osiris_through_its_recall(
        tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    trajectory = _trajectory(traces)
    sdists = tmp_path / "sdists"
    sdists.mkdir()
    source = _sdist(sdists)
    root = tmp_path / "scratch"
    measured, recalls = [], {}
    for configuration in mini.CONFIGURATIONS:
        done = mini.run_session(trajectory, traces, tmp_path, configuration, root=root,
                                source=source, sdists=sdists, timeout_s=300)
        assert done.status == "ok", done.row.get("stderr_tail")
        measured.append(done)
        if configuration == mini.OSIRIS:
            recalls[configuration] = home_rows(
                root / "osiris-home", "SELECT count(*) FROM events WHERE kind = 'recall'")
    bare, osiris = (m.row for m in measured)
    for row in (bare, osiris):  # mini's own cut and OSIRIS's preview both hide the need
        assert (row["needs_total"], row["needs_retrieved"], row["needs_lost"]) == (1, 1, 0)
        # GHOST: the live output never held it, so neither searches for it.
        assert row["needs_absent"] == 1 and row["trace_calls"] == 9
        assert 1 <= row["extra_calls"] <= 2
    assert recalls[mini.OSIRIS][0][0] >= 1  # found through `osiris recall`, in bash
    assert osiris["cumulative_input_tokens"] * 2 < bare["cumulative_input_tokens"]
    rows = session_rows(measured)
    assert rows[1]["net_gain_cumulative_input_tokens"] > 0.5
    section = mini.render(rows)
    assert "## Inside mini-swe-agent" in section and "Goal: at least 50% fewer" in section
    assert "Not met" not in section and "% fewer, with 100.0% of the needs kept" in section
    # How far the goal was reachable: the outputs' share of the bare input, and OSIRIS's cut.
    assert "Command outputs are" in section and "fewer output tokens" in section
    assert "| demo__demo-1 |" not in section  # sessions are named by their path
    assert "mini-swe-agent__demo/demo__demo-1 | osiris | ok |" in section


def test_a_missing_or_altered_sdist_is_reported_not_run(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    trajectory = _trajectory(traces)
    source = mini.Source("demo", "1.0", "demo-1.0.tar.gz", "0" * 64)
    missing = mini.run_session(trajectory, traces, tmp_path, mini.BARE, root=tmp_path / "s",
                               source=source, sdists=tmp_path)
    assert missing.status.startswith("not installed:") and "install-swe-sources" in \
        missing.status
    sdists = tmp_path / "sdists"
    sdists.mkdir()
    real = _sdist(sdists)
    altered = mini.run_session(trajectory, traces, tmp_path, mini.BARE, root=tmp_path / "s",
                               source=mini.Source(**{**real.__dict__, "sha256": "0" * 64}),
                               sdists=sdists)
    assert "sha256" in altered.status
    assert issubclass(WorkspaceError, RuntimeError)


def test_every_bundled_trajectory_has_a_pinned_source() -> None:
    repo = Path(__file__).resolve().parents[2]
    found = mini.trajectories(repo / "datasets" / "traces")
    assert {p.name.removesuffix(".traj.json") for p in found} == set(mini.SOURCES)
    assert all(len(s.sha256) == 64 for s in mini.SOURCES.values())
