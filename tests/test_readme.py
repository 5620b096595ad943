"""The README states only what was measured: its figures are generated from reports/.

Every benchmark figure sits in a ``<!-- bench:NAME -->`` block that the benchmark
rewrites whenever it writes the repository's reports/ (osiris/harness/reports/readme_blocks.py),
so the README's two commands pass in either order: the benchmark first (new timings,
README regenerated with them) or the tests first.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from osiris.harness.reports.readme_blocks import BLOCK, blocks_in, render, update
from tests.conftest import REPO, run_cli

# A measurement outside the blocks: a figure with a unit, a price, or a counted quantity.
MEASUREMENT = re.compile(r"\d[\d,.]*\s?(?:ms|s|min|minutes?|%|×|(?:cl100k )?tokens|MB|KiB)\b"
                         r"|\d[\d,.]*[%×]|\$\d|\b\d{1,3}(?:,\d{3})+\b")
# Figures outside the blocks that are not benchmark output, each with its reason.
NOT_FROM_THE_BENCHMARK = {
    "8 minutes": "first-time installs and .ci/run, measured by hand with date and machine",
    "9 minutes": "nox -s notebooks, measured by hand with date and machine",
    "16 minutes": "nox -s notebooks before its venv was cached, measured by hand, dated",
    "17 minutes": ".ci/run from a clean clone, measured by hand with date and machine",
    "2 min": "bench --quick, timed by hand with `time`, dated (it writes no report)",
    "42 s": "the same measurement of bench --quick",
    "160 cl100k tokens": "the manifest's ceiling, enforced by osiris/core/manifest.py",
    "30,000": "what docs/dashboard.png shows (bench/dashboard_screenshot.py builds it)",
    "3 s": "the dashboard's refresh period, a constant",
    "100%": "the planted secret corpus, asserted by tests/core/test_redaction.py",
    "64 KiB": "what Codex 0.169.0 keeps of a command's output in its rollout, seen in the "
              "binary's records (tests/harness/test_routing_real_clients.py)",
    "32 KiB": "the head and tail Codex keeps past 64 KiB, the same records",
}


def _outside_blocks(text: str) -> str:
    return BLOCK.sub("", text)


def test_readme_blocks_are_what_the_committed_reports_render() -> None:
    readme = (REPO / "README.md").read_text()
    standing = blocks_in(readme)
    rendered = render(REPO / "reports")
    assert sorted(standing) == sorted(rendered)
    stale = [name for name in rendered if standing[name] != rendered[name]]
    assert not stale, (f"README blocks {stale} differ from what reports/ renders: run "
                       "`python -m osiris.harness.reports.readme_blocks` (or the benchmark)")


def test_no_measurement_outside_the_generated_blocks() -> None:
    prose = _outside_blocks((REPO / "README.md").read_text())
    found = {m.group(0) for m in MEASUREMENT.finditer(prose)}
    assert found - set(NOT_FROM_THE_BENCHMARK) == set()
    assert set(NOT_FROM_THE_BENCHMARK) <= found  # the allowances are still needed


def test_update_replaces_block_bodies_and_refuses_unknown_blocks() -> None:
    text = "a\n<!-- bench:hooks -->\nold\n<!-- /bench:hooks -->\nb\n"
    assert update(text, {"hooks": "new\n"}) == \
        "a\n<!-- bench:hooks -->\nnew\n<!-- /bench:hooks -->\nb\n"
    with pytest.raises(ValueError, match="no generator"):
        update(text.replace("hooks", "nope"), {"hooks": "new\n"})
    with pytest.raises(ValueError, match="twice"):
        blocks_in(text + text)


def test_readme_gives_the_two_set_up_commands() -> None:
    readme = (REPO / "README.md").read_text()
    assert "python3 -m pip install nox && python3 -m nox -s bench" in readme
    assert "python3 -m pip install nox && python3 -m nox -s tests lint" in readme
    ci = (REPO / ".ci" / "run").read_text()
    assert "nox -s tests lint" in ci


def _clone(tmp_path: Path) -> Path:
    """What the benchmark reads and writes of a clone: README, reports, datasets."""
    clone = tmp_path / "clone"
    clone.mkdir()
    shutil.copy(REPO / "README.md", clone / "README.md")
    shutil.copytree(REPO / "reports", clone / "reports")
    (clone / "datasets").symlink_to(REPO / "datasets")
    return clone


@pytest.mark.slow
def test_a_bench_run_into_reports_regenerates_the_readme(tmp_path: Path) -> None:
    clone = _clone(tmp_path)
    result = run_cli("bench", "--quick", "--stage", "hooks", "--repo", str(clone), "--out",
                     str(clone / "reports"), timeout=900)
    assert result.returncode == 0, result.stderr
    readme = (clone / "README.md").read_text()
    assert blocks_in(readme) == render(clone / "reports")
    # The run's own figures (a quick run measures 10 calls), not the committed ones.
    assert "Measured over the first 10 calls" in blocks_in(readme)["hooks"]
    assert "stages hooks" in blocks_in(readme)["duration"]


@pytest.mark.slow
def test_a_quick_run_leaves_reports_and_readme_alone(tmp_path: Path) -> None:
    clone = _clone(tmp_path)
    before = {p: p.read_bytes() for p in [clone / "README.md", *(clone / "reports").rglob("*")]
              if p.is_file()}
    result = run_cli("bench", "--quick", "--stage", "mcp", "--repo", str(clone), timeout=900)
    assert result.returncode == 0, result.stderr
    assert {p: p.read_bytes() for p in before} == before
    quick = clone / ".osiris-bench" / "quick"
    assert (quick / "PERF.md").exists()
    assert "## This run" in (quick / "PERF.md").read_text()
    assert render(quick)["duration"].startswith("The last run (quick, stages mcp) took ")


def test_the_replay_block_keeps_each_source_apart_in_words() -> None:
    traces = render(REPO / "reports")["traces"]
    table = [line for line in traces.splitlines() if line.startswith("| ")][1:]
    sources = {tuple(c.strip() for c in line.strip("|").split("|")[:2]) for line in table}
    for client in ("claude-code", "codex"):
        assert {(client, "tielec"), (client, "corpus")} <= sources
    # Every comparison says which way it goes: no bare signed percentage.
    assert not re.search(r"[|*(:] ?[+-]\d+\.\d+%", traces)
    assert re.search(r"\*\*\d+\.\d\d% (saved|more)\*\*", traces)
