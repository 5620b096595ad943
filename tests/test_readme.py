"""The README and the pages of docs/ state only what was measured, and name only what exists.

Every benchmark figure sits in a ``<!-- bench:NAME -->`` block, in README.md or in one page
of docs/, that the benchmark rewrites whenever it writes the repository's reports/
(osiris/harness/reports/readme_blocks.py), so the README's two commands pass in either
order: the benchmark first (new timings, pages regenerated with them) or the tests first.
Every path, module and link the pages name is checked to exist (issue 40).
"""

from __future__ import annotations

import importlib
import re
import shutil
from pathlib import Path

import polars as pl
import pytest

from osiris.harness.reports.bill import saved, sections
from osiris.harness.reports.readme_blocks import (
    BLOCK,
    blocks_in,
    pages,
    placed,
    rebased,
    render,
    update,
    write_readme,
)
from tests.conftest import REPO, run_cli

PAGES = pages(REPO)
README_LINES = 250
"""Issue 40: a newcomer's README, the depth in docs/."""

# A measurement outside the blocks: a figure with a unit, a price, or a counted quantity.
MEASUREMENT = re.compile(r"\d[\d,.]*\s?(?:ms|s|min|minutes?|%|×|(?:cl100k )?tokens|MB|KiB)\b"
                         r"|\d[\d,.]*[%×]|\$\d|\b\d{1,3}(?:,\d{3})+\b")
# Figures outside the blocks that are not benchmark output, page by page, each with its
# reason.
NOT_FROM_THE_BENCHMARK: dict[str, dict[str, str]] = {
    "docs/development.md": {
        "8 minutes": "first-time installs, timed by hand with date and machine",
        "2 min": "bench --quick, timed by hand with `time`, dated (it writes no report)",
        "42 s": "the same measurement of bench --quick",
        "9 minutes": "nox -s notebooks, timed by hand with date and machine",
        "16 minutes": "nox -s notebooks before its venv was cached, timed by hand, dated",
        "10 minutes": ".ci/run from a clean clone, timed by hand with date and machine",
    },
    "docs/how-it-works.md": {
        "160 cl100k tokens": "the manifest's ceiling, enforced by osiris/core/manifest.py",
        "100%": "the planted secret corpus, asserted by tests/core/test_redaction.py",
    },
    "docs/agent-loops.md": {
        "160 cl100k tokens": "the manifest's ceiling, enforced by osiris/core/manifest.py",
        "300 tokens": "the default of OSIRIS_ENGAGE_LIGHT_TOKENS (osiris/config.py)",
        "40,000": "the default of OSIRIS_PRUNE_THRESHOLD_TOKENS (osiris/config.py)",
    },
    "docs/hooks.md": {
        "3 s": "the default of OSIRIS_HOOK_TIMEOUT_S (osiris/config.py)",
        "64 KiB": "what Codex 0.169.0 keeps of a command's output in its rollout, seen in "
                  "the binary's records (tests/harness/test_routing_real_clients.py)",
        "32 KiB": "the head and tail Codex keeps past 64 KiB, the same records",
    },
    "docs/commands.md": {
        "30,000": "what docs/dashboard.png shows (bench/dashboard_screenshot.py builds it)",
        "3 s": "the dashboard's refresh period, a constant",
    },
}


def _name(page: Path) -> str:
    return page.relative_to(REPO).as_posix()


def _outside_blocks(text: str) -> str:
    return BLOCK.sub("", text)


def test_the_readme_is_short() -> None:
    lines = (REPO / "README.md").read_text().count("\n")
    assert lines <= README_LINES, f"README.md has {lines} lines: move the depth to docs/"


def test_the_blocks_are_what_the_committed_reports_render() -> None:
    rendered = render(REPO / "reports")
    where = placed(REPO)  # raises when two pages hold one block
    assert sorted(where) == sorted(rendered), "every block stands in exactly one page"
    stale = [f"{_name(page)}: {name}" for name, page in where.items()
             if blocks_in(page.read_text())[name] != rebased(rendered[name],
                                                            page.relative_to(REPO))]
    assert not stale, (f"blocks {stale} differ from what reports/ renders: run "
                       "`python -m osiris.harness.reports.readme_blocks` (or the benchmark)")


def test_no_measurement_outside_the_generated_blocks() -> None:
    assert set(NOT_FROM_THE_BENCHMARK) <= {_name(p) for p in PAGES}
    for page in PAGES:
        prose = _outside_blocks(page.read_text())
        found = {m.group(0) for m in MEASUREMENT.finditer(prose)}
        allowed = NOT_FROM_THE_BENCHMARK.get(_name(page), {})
        assert found - set(allowed) == set(), _name(page)
        assert set(allowed) <= found, f"{_name(page)}: allowances no longer needed"


def test_update_replaces_block_bodies_and_refuses_unknown_blocks() -> None:
    text = "a\n<!-- bench:hooks -->\nold\n<!-- /bench:hooks -->\nb\n"
    assert update(text, {"hooks": "new\n"}) == \
        "a\n<!-- bench:hooks -->\nnew\n<!-- /bench:hooks -->\nb\n"
    with pytest.raises(ValueError, match="no generator"):
        update(text.replace("hooks", "nope"), {"hooks": "new\n"})
    with pytest.raises(ValueError, match="twice"):
        blocks_in(text + text)


def test_a_block_in_docs_links_from_docs() -> None:
    text = "<!-- bench:hooks -->\n<!-- /bench:hooks -->\n"
    body = ("[`reports/PERF.md`](reports/PERF.md), [web](https://example.org/x), "
            "[here](#a)\n")
    assert update(text, {"hooks": body}, Path("docs/hooks.md")) == (
        "<!-- bench:hooks -->\n[`reports/PERF.md`](../reports/PERF.md), "
        "[web](https://example.org/x), [here](#a)\n<!-- /bench:hooks -->\n")
    assert update(text, {"hooks": body}) == f"<!-- bench:hooks -->\n{body}<!-- /bench:hooks -->\n"


def test_the_writer_rewrites_every_page_and_refuses_a_block_in_two(tmp_path: Path) -> None:
    clone = _clone(tmp_path)
    where = placed(clone)
    page = where["owner"]
    assert page.parent.name == "docs"
    page.write_text(BLOCK.sub(lambda m: f"<!-- bench:{m['name']} -->\n<!-- /bench:"
                                        f"{m['name']} -->", page.read_text()))
    assert write_readme(clone / "README.md", clone / "reports")
    assert page.read_text() == (REPO / page.relative_to(clone)).read_text()
    assert not write_readme(clone / "README.md", clone / "reports")
    (clone / "docs" / "twice.md").write_text("<!-- bench:owner -->\n<!-- /bench:owner -->\n")
    before = page.read_text()
    with pytest.raises(ValueError, match="stands in both"):
        write_readme(clone / "README.md", clone / "reports")
    assert page.read_text() == before


def test_readme_gives_the_two_set_up_commands() -> None:
    readme = (REPO / "README.md").read_text()
    assert "python3 -m pip install nox && python3 -m nox -s bench" in readme
    assert "python3 -m pip install nox && python3 -m nox -s tests lint" in readme
    ci = (REPO / ".ci" / "run").read_text()
    assert "nox -s tests lint" in ci


def test_the_readme_leads_with_what_a_user_saves_in_words() -> None:
    readme = (REPO / "README.md").read_text()
    assert "summary" in blocks_in(readme)
    assert readme.index("<!-- bench:summary -->") < readme.index("## Install")
    summary = render(REPO / "reports")["summary"]
    assert not re.search(r"[|*(:] ?[+-]\d+\.\d+%", summary)  # no bare signed figure
    assert "*N% saved*" in summary and "*N% more*" in summary  # said what they mean
    # The same pooled figure as the full table in docs/benchmark.md, for each client and
    # source, OSIRIS and context-mode alike.
    clients = render(REPO / "reports")["clients"]
    rows = pl.read_parquet(REPO / "reports" / "data" / "clients_sessions.parquet").to_dicts()
    shown = 0
    for section in sections(rows):
        part = clients.split(f"**{section.client}, {section.source}** ")[1].split("\n\n**")[0]
        for configuration in ("osiris", "context-mode"):
            these = section.of(configuration)
            if not these:
                continue
            figure = saved(1 - section.cost(these) / section.base())
            assert f"| {configuration} | {figure} |" in summary
            assert re.search(rf"^\| {configuration} \| \$[\d,.]+ \| {figure} \|", part, re.M)
            shown += 1
    assert shown >= 8


# What the pages name: repository paths (in code spans, code blocks and links), dotted
# modules of OSIRIS (in code spans, and imported in code blocks), and links' anchors.
FENCE = re.compile(r"^ *```.*?^ *```", re.M | re.S)
SPAN = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
PATH = re.compile(r"(?<![\w./~$…-])(?:(?:osiris|tests|docs|reports|datasets|notebooks|bench"
                  r"|npm|\.ci)/[\w./*-]*|(?:noxfile\.py|pyproject\.toml|LICENSE)\b)")
MODULE = re.compile(r"(?<![\w./$-])osiris(?:\.[A-Za-z_]\w*)+")
IMPORT = re.compile(r"^\s*(?:from|import)\s+(osiris[\w.]*)", re.M)


def _not_paths() -> dict[str, str]:
    """Names shaped like a path or a module that are neither, each with what it is."""
    from osiris.server.definitions import TOOLS
    from osiris.server.resources import RESUME

    return {RESUME: "the MCP prompt's name (osiris/server/resources.py)",
            **{tool.title: "a tool's dotted name (osiris/server/definitions.py)"
               for tool in TOOLS}}


def _named(text: str) -> tuple[set[str], set[str]]:
    """The repository paths and the dotted OSIRIS names that ``text`` names."""
    fenced = "\n".join(m.group(0) for m in FENCE.finditer(text))
    spans = [m.group(1) for m in SPAN.finditer(FENCE.sub("", text))]
    paths = {p.rstrip(".") for part in [*spans, fenced] for p in PATH.findall(part)}
    paths |= {t.split("#")[0] for t in LINK.findall(text)
              if not re.match(r"[a-z][a-z+.-]*:|#", t)}
    modules = {m for span in spans for m in MODULE.findall(span)} | set(IMPORT.findall(fenced))
    return paths, modules


def _resolves(name: str) -> bool:
    """``osiris.a.b`` is a module, or a module's attribute (``osiris.agent.AgentSession``)."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


def _anchors(page: Path) -> set[str]:
    """The anchors GitHub gives ``page``'s headings."""
    headings = re.findall(r"^#+ (.+)$", FENCE.sub("", page.read_text()), re.M)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


def test_the_pages_name_only_paths_and_modules_that_exist() -> None:
    not_paths = _not_paths()
    missing, used = [], set()
    for page in PAGES:
        paths, modules = _named(page.read_text())
        for path in sorted(paths):
            if path in not_paths:
                used.add(path)
                continue
            linked = (page.parent / path).resolve()
            # A link is relative to its page; a named path, to the repository's root.
            there = (any(REPO.glob(path)) if "*" in path else
                     (REPO / path).exists() or (f"]({path}" in page.read_text()
                                                and linked.exists()))
            if not there:
                missing.append(f"{_name(page)}: {path}")
        for module in sorted(modules):
            if module in not_paths:
                used.add(module)
            elif not _resolves(module):
                missing.append(f"{_name(page)}: {module}")
    assert not missing, f"named but not in the repository: {missing}"
    assert used, "the names that are not paths are still named (else drop _not_paths)"


def test_every_link_between_the_pages_lands() -> None:
    broken = []
    for page in PAGES:
        for target in LINK.findall(page.read_text()):
            if re.match(r"[a-z][a-z+.-]*:", target):
                continue
            path, _, anchor = target.partition("#")
            landing = (page.parent / path).resolve() if path else page
            if not landing.exists():
                broken.append(f"{_name(page)}: {target}")
            elif anchor and landing.suffix == ".md" and anchor not in _anchors(landing):
                broken.append(f"{_name(page)}: {target} (no such heading)")
    assert not broken, broken


def test_the_docs_pages_are_all_linked_from_the_readme() -> None:
    readme = (REPO / "README.md").read_text()
    unlinked = [_name(p) for p in PAGES[1:] if f"]({_name(p)})" not in readme]
    assert not unlinked, f"docs pages the README does not lead to: {unlinked}"


def test_a_page_says_what_the_seed_is_before_it_compares_with_it() -> None:
    """The seed, the design documents OSIRIS was first specified in, is not in this
    repository: a page that compares with it says so the first time it names it."""
    for page in PAGES:
        text = " ".join(page.read_text().split())
        first = re.search(r"\bseed\b", text, re.I)
        if first is not None:
            said = text[first.start():first.start() + 30]
            assert said == "seed, the design documents OSI", \
                f"{_name(page)} names the seed before saying what it is"


def _clone(tmp_path: Path) -> Path:
    """What the benchmark reads and writes of a clone: the pages, reports, datasets."""
    clone = tmp_path / "clone"
    clone.mkdir()
    shutil.copy(REPO / "README.md", clone / "README.md")
    shutil.copytree(REPO / "docs", clone / "docs")
    shutil.copytree(REPO / "reports", clone / "reports")
    (clone / "datasets").symlink_to(REPO / "datasets")
    return clone


def _blocks(repo: Path) -> dict[str, str]:
    """Every block of the clone's pages, as its page holds it."""
    return {name: blocks_in(page.read_text())[name] for name, page in placed(repo).items()}


def _expected(repo: Path, reports: Path) -> dict[str, str]:
    rendered = render(reports)
    return {name: rebased(rendered[name], page.relative_to(repo))
            for name, page in placed(repo).items()}


@pytest.mark.slow
def test_a_bench_run_into_reports_regenerates_the_pages(tmp_path: Path) -> None:
    clone = _clone(tmp_path)
    result = run_cli("bench", "--quick", "--stage", "hooks", "--repo", str(clone), "--out",
                     str(clone / "reports"), timeout=900)
    assert result.returncode == 0, result.stderr
    blocks = _blocks(clone)
    assert blocks == _expected(clone, clone / "reports")
    # The run's own figures (a quick run measures 10 calls), not the committed ones.
    assert "Measured over the first 10 calls" in blocks["hooks"]
    assert "Codex's command hooks, over the first 10 shell calls" in " ".join(
        blocks["hooks"].split())  # the page wraps its lines
    perf = (clone / "reports" / "PERF.md").read_text("utf-8")
    assert re.search(r"^\| Codex command hook PostToolUse \| 10 \|", perf, re.MULTILINE)
    # The committed full run's durations stay, the stage re-run since after them.
    assert blocks["duration"].startswith("A full run took ")
    # (the block is wrapped for the page: where a line breaks depends on the durations)
    assert "re-ran stage hooks since (quick, " in " ".join(blocks["duration"].split())


@pytest.mark.slow
def test_a_quick_run_leaves_reports_and_pages_alone(tmp_path: Path) -> None:
    clone = _clone(tmp_path)
    before = {p: p.read_bytes() for p in [clone / "README.md", *(clone / "docs").rglob("*"),
                                          *(clone / "reports").rglob("*")] if p.is_file()}
    result = run_cli("bench", "--quick", "--stage", "mcp", "--repo", str(clone), timeout=900)
    assert result.returncode == 0, result.stderr
    assert {p: p.read_bytes() for p in before} == before
    quick = clone / ".osiris-bench" / "quick"
    assert (quick / "PERF.md").exists()
    assert "## This run" in (quick / "PERF.md").read_text()
    assert render(quick)["duration"].startswith("The last run (quick, stage mcp) took ")


def test_the_replay_block_keeps_each_source_apart_in_words() -> None:
    traces = render(REPO / "reports")["traces"]
    table = [line for line in traces.splitlines() if line.startswith("| ")][1:]
    sources = {tuple(c.strip() for c in line.strip("|").split("|")[:2]) for line in table}
    for client in ("claude-code", "codex"):
        assert {(client, "tielec"), (client, "corpus")} <= sources
    # Every comparison says which way it goes: no bare signed percentage.
    assert not re.search(r"[|*(:] ?[+-]\d+\.\d+%", traces)
    assert re.search(r"\*\*\d+\.\d\d% (saved|more)\*\*", traces)
