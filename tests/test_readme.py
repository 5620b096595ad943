"""The README states only what was measured: its benchmark figures are in the report."""

from __future__ import annotations

import re

from tests.conftest import REPO


def test_readme_figures_come_from_the_committed_report() -> None:
    readme = (REPO / "README.md").read_text()
    report = (REPO / "reports" / "BENCHMARK.md").read_text().replace("−", "-")
    section = readme.split("## What it measured", 1)[1].split("\n## ", 1)[0]
    section = section.replace("−", "-")
    figures = re.findall(r"[+-]?\d[\d,]*\.\d+%|\d{1,3}(?:,\d{3})+", section)
    assert len(figures) > 10
    missing = [f for f in figures if f not in report and f.lstrip("+") not in report]
    # Seed figures quoted for comparison are in the report's seed columns too.
    assert not missing, f"README figures not in reports/BENCHMARK.md: {missing}"


def test_readme_gives_the_two_set_up_commands() -> None:
    readme = (REPO / "README.md").read_text()
    assert "python3 -m pip install nox && python3 -m nox -s bench" in readme
    assert "python3 -m pip install nox && python3 -m nox -s tests lint" in readme
    ci = (REPO / ".ci" / "run").read_text()
    assert "nox -s tests lint" in ci


def test_readme_speed_figures_come_from_the_committed_perf_report() -> None:
    readme = (REPO / "README.md").read_text()
    perf = (REPO / "reports" / "PERF.md").read_text()
    paragraphs = [p for p in readme.split("\n\n") if p.startswith("Measured o")]
    assert len(paragraphs) >= 2  # the dashboard's and the hooks'
    for paragraph in paragraphs:
        text = " ".join(paragraph.split())
        figures = re.findall(r"(\d[\d,]*(?:\.\d+)?) (?:and \d[\d,.]* )?ms", text)
        figures += re.findall(r"and (\d[\d,]*(?:\.\d+)?) ms", text)
        figures += re.findall(r"\d{1,3}(?:,\d{3})+", text)
        assert len(figures) >= 4, text
        missing = [f for f in figures if f"| {f} |" not in perf and f" {f} " not in perf
                   and f"{f} " not in perf]
        assert not missing, f"README speed figures not in reports/PERF.md: {missing}"
