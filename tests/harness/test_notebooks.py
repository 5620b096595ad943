"""The notebooks execute headless (nbclient) on the quick workload."""

from __future__ import annotations

from pathlib import Path

import pytest

from osiris.harness.notebooks import NOTEBOOKS, drift, execute, main, sync
from tests.conftest import REPO, run_cli

pytestmark = pytest.mark.slow  # a quick benchmark, then every notebook


@pytest.fixture(scope="module")
def quick_reports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("quick-reports")
    result = run_cli("bench", "--quick", "--stage", "benchmark", "--repo", str(REPO),
                     "--out", str(out), timeout=900)
    assert result.returncode == 0, result.stderr
    return out


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_on_the_quick_workload(name: str, quick_reports: Path) -> None:
    notebook = execute(REPO / "notebooks" / name,
                       {"QUICK": True, "REPORTS": str(quick_reports), "REPO": str(REPO)})
    errors = [o for c in notebook.cells if c.cell_type == "code"
              for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors


def test_report_notebook_fails_when_the_report_drifts(quick_reports: Path,
                                                      tmp_path: Path) -> None:
    import shutil

    drifted = tmp_path / "reports"
    shutil.copytree(quick_reports, drifted)
    report = drifted / "BENCHMARK.md"
    report.write_text(report.read_text().replace("| raw |", "| RAW |", 1))
    with pytest.raises(Exception, match="differ"):
        execute(REPO / "notebooks" / "01_report_tables.ipynb",
                {"QUICK": True, "REPORTS": str(drifted), "REPO": str(REPO)})


def test_the_ipynb_files_are_their_py_sources(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    assert drift() == []
    folder = tmp_path / "notebooks"
    shutil.copytree(REPO / "notebooks", folder)
    source = folder / "02_prune_thresholds.py"
    source.write_text(source.read_text().replace("QUICK = False", "QUICK = True", 1))
    assert drift(folder) == ["02_prune_thresholds.ipynb"]
    (folder / "04_traces.ipynb").unlink()
    assert drift(folder) == ["02_prune_thresholds.ipynb", "04_traces.ipynb"]
    sync(folder)
    assert drift(folder) == []
    assert (folder / "04_traces.ipynb").read_bytes() == (REPO / "notebooks" /
                                                          "04_traces.ipynb").read_bytes()
    assert main(["--check"]) == 0
