"""The benchmark through its real entry point: files, goals, identical figures twice."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import polars as pl
import pytest

from osiris.harness.bench.owner import sustained_rate
from osiris.harness.bench.speed import _hook_payloads
from osiris.harness.reports.report import body_of
from tests.conftest import REPO, release_owner_and_wait, run_cli

pytestmark = pytest.mark.slow  # runs the benchmark


def test_quick_bench_writes_every_report(tmp_path: Path) -> None:
    result = run_cli("bench", "--quick", "--repo", str(REPO), "--out", str(tmp_path),
                     timeout=900)
    assert result.returncode == 0, result.stderr
    assert "[bench" in result.stderr  # progress on stderr
    for name in ("BENCHMARK.md", "PERF.md", "SECRETS.md", "LOOPGUARD.md", "FOOTPRINT.json",
                 "sweep_net_gain.png", "traces_cumulative.png", "data/results.parquet",
                 "data/store_perf.parquet", "data/engine_throughput.parquet",
                 "data/owner_perf.parquet", "data/owner_kills.parquet",
                 "data/hook_perf.parquet", "data/payload_perf.parquet", "data/bench.duckdb"):
        assert (tmp_path / name).exists(), name
    # The store owner's stage measured both ways, and its kills lost nothing acknowledged.
    owner = pl.read_parquet(tmp_path / "data" / "owner_perf.parquet")
    assert set(owner["mode"].unique()) >= {"before", "after"}
    load = owner.filter(pl.col("measure") == "3 processes: observe 2 KB").to_dicts()
    assert {row["mode"] for row in load} == {"before", "after"}
    host = owner.filter(pl.col("mode") == "host")["median_s"].to_list()
    assert len(host) == 2 and all(value > 0 for value in host)  # the host's calibration
    for row in load:
        assert row["lost"] == 0 and row["missing"] == 0 and row["acknowledged"] > 0
        assert row["sustained_per_s"] > 0 and row["sustained_window_s"] > 0
    kills = pl.read_parquet(tmp_path / "data" / "owner_kills.parquet").to_dicts()[0]
    assert kills["kills"] == 10 and kills["acknowledged"] > 0
    assert kills["missing"] == 0 and kills["chain_ok"] and kills["audit_lossless"]
    assert "## The store owner: before and after" in (tmp_path / "PERF.md").read_text()
    rows = pl.read_parquet(tmp_path / "data" / "results.parquet")
    assert set(rows["system"].unique()) >= {"raw", "client-native", "oracle", "osiris-fixed",
                                            "osiris-adaptive"}
    for column in ("run_id", "commit", "versions", "encoding", "cost_model_version",
                   "params", "dataset_hashes", "billed_cost_anthropic-5m",
                   "billed_cost_openai-auto", "answer_preservation", "extra_calls"):
        assert column in rows.columns, column
    osiris = rows.filter(pl.col("system").str.starts_with("osiris"))
    assert (osiris["needs_found"] == osiris["needs_total"]).all()
    assert json.loads(rows["dataset_hashes"][0])
    report = (tmp_path / "BENCHMARK.md").read_text()
    assert "## The seed's table, reproduced" in report
    # A quick run replays the shortest public session, reported apart, in words.
    corpus = report.split("## Sessions from many projects", 1)[1].split("\n## ", 1)[0]
    assert "claude-code ccviewer-demo-1.0.108" in corpus
    assert re.search(r"\d\.\d\d% (saved|more)|\bsame\b", corpus)
    # What a hook can reach, counted in the recorded sessions themselves.
    assert "### What a hook can reach in the recorded sessions" in corpus
    reach = pl.read_parquet(tmp_path / "data" / "reach.parquet")
    assert "corpus/codex/agentv-ci-node24" in reach["session"].to_list()
    assert (tmp_path / "sweep_net_gain.png").stat().st_size > 10_000


def test_the_hook_timings_run_the_read_routing_a_users_install_runs(tmp_path: Path) -> None:
    """PERF.md's hook rows: each trace's calls in its unpacked workspace with the root set,
    so a re-read of an unchanged file is answered as in Claude Code (a pointer)."""
    calls, root = _hook_payloads(REPO, tmp_path)
    reads = [(pre, post) for pre, post in calls if pre["tool_name"] == "Read"]
    assert reads
    for pre, post in reads:
        path = Path(pre["tool_input"]["file_path"])
        assert path.is_file() and path.is_relative_to(root), path
        assert Path(pre["cwd"]).is_relative_to(root)
        if post["hook_event_name"] == "PostToolUse":
            assert post["tool_response"]["file"]["filePath"] == str(path)
    home = tmp_path / "home"
    env = {"OSIRIS_HOME": str(home), "OSIRIS_ROOTS": str(root), "HOME": str(tmp_path)}
    seen: set[str] = set()
    try:
        for pre, post in reads:
            path = pre["tool_input"]["file_path"]
            again = path in seen and set(pre["tool_input"]) == {"file_path"}
            answer = run_cli("hook", "claude-code", "pre-tool-use", stdin=json.dumps(pre),
                             env=env)
            assert answer.returncode == 0, answer.stderr
            if again:
                reason = json.loads(answer.stdout)["hookSpecificOutput"][
                    "permissionDecisionReason"]
                assert "unchanged since you read it" in reason
                return
            seen.add(path)
            assert run_cli("hook", "claude-code", "post-tool-use", stdin=json.dumps(post),
                           env=env).returncode == 0
        pytest.fail("no re-read of an unchanged file among the timed calls")
    finally:
        release_owner_and_wait(home)


def test_a_run_of_one_stage_keeps_the_other_speed_sections_and_says_whose(
        tmp_path: Path) -> None:
    committed = (REPO / "reports" / "PERF.md").read_text("utf-8")
    full_run = re.search(r"run `(\w+)`", committed)
    assert full_run
    (tmp_path / "PERF.md").write_text(committed, "utf-8")
    (tmp_path / "data").mkdir()
    shutil.copy(REPO / "reports" / "data" / "bench_stages.parquet", tmp_path / "data")
    for stage in ("engine", "payloads"):
        done = run_cli("bench", "--quick", "--stage", stage, "--repo", str(REPO), "--out",
                       str(tmp_path), timeout=600)
        assert done.returncode == 0, done.stderr
    perf = (tmp_path / "PERF.md").read_text("utf-8")
    sections = {s.split("\n", 1)[0]: s for s in re.split(r"(?m)^(?=## )", perf)[1:]}
    # Every section of the full run is still there, in its place, this run's last.
    assert list(sections) == [s.split("\n", 1)[0]
                              for s in re.split(r"(?m)^(?=## )", committed)[1:]]
    note = f"these figures are from run `{full_run[1]}`"
    for heading, text in sections.items():
        last_run = heading.startswith(("## Payloads", "## This run"))
        # A kept section names the run that measured it, once, even kept twice: the
        # engine's is the first of the two runs, the rest the full run's.
        assert text.count("*Not measured in this run") == (0 if last_run else 1), heading
        assert text.count(note) == (0 if last_run or heading.startswith("## Engine")
                                    else 1), heading
    assert "| payloads |" in sections["## This run"]
    assert "| store |" not in sections["## This run"]
    # How long a full run takes stays said: the full run's stage durations are kept after
    # the last run's (the engine-only run between them is not a full run: dropped).
    from osiris.harness.reports.readme_blocks import Reports, _duration, block_duration

    full = pl.read_parquet(REPO / "reports" / "data" / "bench_stages.parquet").filter(
        pl.col("all_stages") & ~pl.col("quick"))
    assert full["run_id"].n_unique() == 1 and full.height > 1
    stages = pl.read_parquet(tmp_path / "data" / "bench_stages.parquet")
    assert stages["stage"].to_list() == ["payloads", *full["stage"].to_list()]
    assert stages["run_id"].to_list()[1:] == full["run_id"].to_list()
    text = block_duration(Reports(tmp_path))
    assert text.startswith(f"A full run took {_duration(full['seconds'].sum())} on ")
    assert f"; run `{stages['run_id'][0]}` re-ran stage payloads since (quick, " in text


def test_a_second_run_gives_identical_token_figures(tmp_path: Path) -> None:
    """Twice the benchmark stage alone into reports that hold the real clients' rows of
    an earlier run: the same figures, and the clients' section says which run measured it
    (it was not this one)."""
    import polars as pl

    committed = pl.read_parquet(REPO / "reports" / "data" / "clients_sessions.parquet")
    earlier = committed.row(0, named=True)
    bodies = []
    for n in range(2):
        out = tmp_path / f"run{n}"
        (out / "data").mkdir(parents=True)
        for name in ("clients_sessions.parquet", "mini_sessions.parquet"):
            shutil.copy(REPO / "reports" / "data" / name, out / "data" / name)
        result = run_cli("bench", "--quick", "--stage", "benchmark", "--repo", str(REPO),
                         "--out", str(out), timeout=900)
        assert result.returncode == 0, result.stderr
        bodies.append(body_of((out / "BENCHMARK.md").read_text()))
    assert bodies[0] == bodies[1]
    assert "Run `" not in bodies[0]
    clients = bodies[0].split("## Inside the real clients", 1)[1]
    assert clients.lstrip("\n").startswith(
        f"*Not measured in this run: these figures are from run `{earlier['run_id']}` at "
        f"commit `{earlier['commit'][:12]}")
    assert bodies[0].count("*Not measured in this run") == 1


def test_unknown_stage_is_a_clear_error(tmp_path: Path) -> None:
    result = run_cli("bench", "--stage", "nope", "--repo", str(REPO), "--out", str(tmp_path))
    assert result.returncode == 2
    assert "unknown stage" in result.stderr


def test_the_sustained_rate_counts_only_while_every_writer_writes() -> None:
    # Writer a acknowledges at 0..10 s, b from 2 s, c until 8 s: the window is 2..8 s.
    a = [float(t) for t in range(11)]
    b = [2.0 + t / 2 for t in range(17)]  # 2 per second, 2..10
    c = [1.0, 8.0]
    rate = sustained_rate([a, b, c])
    assert rate["sustained_window_s"] == 6.0
    assert rate["sustained_per_s"] == (7 + 13 + 1) / 6  # a 2..8, b 2..8, c 8
    assert rate["first_third_per_s"] == (3 + 5) / 2  # 2..4
    assert rate["last_third_per_s"] == (3 + 5 + 1) / 2  # 6..8
    assert sustained_rate([a, [3.0]])["sustained_per_s"] == 0.0  # a writer never went on
