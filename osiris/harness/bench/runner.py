"""The benchmark runner: ``nox -s bench``, ``osiris bench``, ``python bench/run_bench.py``.

Each stage drives real OSIRIS code (the store, the scrubber, and as the project
grows the engine and the MCP server), returns rows, and contributes sections to
the reports. Rows go to Parquet under ``reports/data/``; the Markdown reports are
regenerated from them, and so are README.md's measured blocks when the run writes the
repository's own ``reports/`` (:mod:`osiris.harness.reports.readme_blocks`).
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

from osiris.harness.bench import dashboard, loopguard, owner, secrets, speed
from osiris.harness.bench.context import BenchContext, Stage, StageResult
from osiris.harness.replay.retrieval import RETRIEVAL_MODELS
from osiris.harness.runmeta import UNCOMMITTED, commit_label, new_run

QUICK_CORPUS = ("ccviewer-demo",)
"""The corpus session of a ``--quick`` run: the shortest (13 calls)."""


def stage_secrets(ctx: BenchContext) -> StageResult:
    """Scrub every real trace output; report findings (false positives) and speed."""
    result = StageResult()
    traces = ctx.repo / "datasets" / "traces"
    ctx.say(f"secrets: scrubbing every tool output under {traces}")
    rows, summary = secrets.scan_traces(traces)
    result.add_rows("secret_findings", rows or [{"trace": None, "step": None, "tool": None,
                                              "field": None, "rule_id": None, "kind": None,
                                              "context_before": None, "secret_chars": None}])
    corpus_path = ctx.repo / "datasets" / "secrets" / "secret_corpus.toml"
    corpus = secrets.corpus_recall(corpus_path)
    fields = secrets.field_check(corpus_path, ctx.workdir / "secrets-home")
    result.add_rows("secret_corpus", corpus)
    result.add_rows("secret_fields", fields)
    result.documents["SECRETS.md"] = secrets.render(summary, rows, corpus, fields)
    ctx.say(f"secrets: {summary['findings']} findings in {summary['outputs']} outputs, "
            f"{summary['mb_per_s']:.1f} MB/s; corpus {sum(r['ok'] for r in corpus)}/"
            f"{len(corpus)}; {sum(r['in_answer'] or r['in_store'] for r in fields)} field "
            "leaks")
    return result


def stage_benchmark(ctx: BenchContext) -> StageResult:
    """The sweep, the real traces and the break-even sweep through every system; renders
    reports/BENCHMARK.md and its plots."""
    result = StageResult()
    from osiris.core.tokens import default_counter
    from osiris.harness.bench import tokens
    from osiris.harness.replay.turns import System
    from osiris.harness.reports import plots, reach, report
    from osiris.harness.systems import peers
    from osiris.server.footprint import footprint

    traces = ctx.repo / "datasets" / "traces"
    statuses: dict[str, dict[str, Any]] = {}

    throttled: dict[str, int] = {}

    def with_peers(tag: str) -> Sequence[System]:
        ready, missing = peers.build_peers(ctx.repo, ctx.workdir / f"peers-{tag}")
        for peer in ready:
            if isinstance(peer, peers.ContextModeSystem):
                searches[tag] = peer
        for row in peers.status_rows(ready, missing):
            # A peer counts as measured only if it ran in every workload.
            if statuses.get(row["peer"], {}).get("status") != "unavailable":
                statuses[row["peer"]] = row
        for m in missing:
            ctx.say(f"peer {m.name} not measured ({tag}): {m.error}")
        return ready

    searches: dict[str, peers.ContextModeSystem] = {}
    sizes = (200, 2_000) if ctx.quick else None
    rows = tokens.sweep_rows(traces, ctx.workdir, sizes=sizes, progress=ctx.say,
                                extra=with_peers)
    only = ("swe-agent__test-repo", "django__django") if ctx.quick else ()
    rows += tokens.trace_rows(traces, ctx.workdir, only=only, progress=ctx.say,
                                 extra=with_peers, client=ctx.client,
                                 retrievals=ctx.retrievals)
    heldout = ctx.repo / "datasets" / "traces-heldout"
    if heldout.is_dir() and not ctx.quick:
        # Sessions added after the rules were fixed: reported apart, never tuned on.
        rows += tokens.trace_rows(heldout, ctx.workdir, progress=ctx.say,
                                     extra=with_peers, client=ctx.client,
                                     retrievals=("visible",), workload="heldout")
    corpus = ctx.repo / "datasets" / "corpus"
    if corpus.is_dir():
        # Public sessions of many projects, each source reported apart; visible retrieval
        # only (the headline model), which keeps the stage within its time budget.
        rows += tokens.trace_rows(corpus, ctx.workdir, only=QUICK_CORPUS if ctx.quick else (),
                                  progress=ctx.say, extra=with_peers, client=ctx.client,
                                  retrievals=("visible",), workload="corpus")
    rows += tokens.break_even_rows(
        traces, ctx.workdir, sizes=(100, 400) if ctx.quick else tokens.BREAK_EVEN_SIZES,
        progress=ctx.say)
    even = tokens.break_even_summary(rows)
    result.add_rows("results", rows)
    for tag, peer in searches.items():
        throttled[tag] = peer.throttled_searches()
    if "context-mode" in statuses and throttled:
        statuses["context-mode"]["note"] = (
            "search throttle lifted (its default counts wall-clock time); at the default, "
            + ", ".join(f"{count} of the {len(searches[tag].search_times)} searches of the "
                        f"{tag} replays" for tag, count in throttled.items())
            + " would have been cut (counted in replay time)")
    peer_rows = [statuses[name] for name in peers.PEER_NAMES if name in statuses]
    if peer_rows:
        result.add_rows("peers", peer_rows)
    fp = footprint()
    meta = {**ctx.meta.as_row(), "cost_model_version": rows[0]["cost_model_version"]}
    real_clients = ctx.sections.get("clients") or report.clients_section_of(
        ctx.out, run_id=ctx.meta.run_id)
    # What the hooks can reach in the recorded sessions themselves (seconds).
    reach_rows = reach.reach_rows(ctx.repo / "datasets", default_counter())
    if reach_rows:
        result.add_rows("reach", reach_rows)
    result.documents["BENCHMARK.md"] = report.render(rows, fp, even, meta, peers=peer_rows,
                                                  real_clients=real_clients, reach=reach_rows)
    result.plot_jobs.append(lambda out: plots.plots(rows, out))
    return result


def stage_clients(ctx: BenchContext) -> StageResult:
    """The tielec traces inside the real Claude Code and Codex, in every configuration,
    and the mini-swe-agent trajectories inside the real mini-swe-agent, bare and with
    OSIRIS (``osiris bench clients``; quick: one short Codex trace, one trajectory)."""
    result = StageResult()
    from osiris.harness.real_clients import mini, sessions, tables

    # A fixed scratch root: its path reaches the prompts and, through OSIRIS's content
    # hashes of what it observed, more than the neutraliser can fix.
    measured = sessions.run_all(ctx.repo, quick=ctx.quick, say=ctx.say, root=sessions.ROOT)
    rows = sessions.session_rows(measured)
    turns = [t for m in measured for t in m.turns]
    result.add_rows("clients_sessions", rows)
    if turns:
        result.add_rows("clients_turns", turns)
    looped = mini.run_all(ctx.repo, quick=ctx.quick, say=ctx.say, root=mini.ROOT)
    mini_rows = sessions.session_rows(looped)
    result.add_rows("mini_sessions", mini_rows or [{"session": None}])
    if any(m.turns for m in looped):
        result.add_rows("mini_turns", [t for m in looped for t in m.turns])
    section = tables.render(rows) + "\n" + mini.render(mini_rows)
    result.sections["clients"] = section
    if "benchmark" not in ctx.stages:
        # Run alone: the section of the BENCHMARK.md already there is replaced in place.
        from osiris.harness.reports import report

        current = ctx.out / "BENCHMARK.md"
        if current.exists():
            result.documents["BENCHMARK.md"] = report.with_clients_section(
                current.read_text("utf-8"), section)
    return result


def stage_governance(ctx: BenchContext) -> StageResult:
    """Replay the real sessions through precheck + observe: what LoopGuard flags."""
    result = StageResult()
    traces = ctx.repo / "datasets" / "traces"
    ctx.say("governance: precheck + observe of every call of the real traces")
    results = loopguard.replay_all(traces, ctx.workdir / "governance-home",
                                           quick=ctx.quick)
    rows = [{"trace": r.trace, "format": r.format, "step": f["step"], "tool": f["tool"],
             "call": f["call"], "verdict": f["verdict"], "patterns": ",".join(f["patterns"])}
            for r in results for f in r.flags]
    result.add_rows("loopguard_flags", rows or [{"trace": None, "format": None, "step": None,
                                              "tool": None, "call": None, "verdict": None,
                                              "patterns": None}])
    result.documents["LOOPGUARD.md"] = loopguard.render(results)
    ctx.say(f"governance: {len(rows)} flags in {sum(r.calls for r in results)} calls")
    return result


STAGES: dict[str, Stage] = {"clients": stage_clients, "benchmark": stage_benchmark,
                            "secrets": stage_secrets,
                            "store": speed.stage_store,
                            "engine": speed.stage_engine, "payloads": speed.stage_payloads,
                            "governance": stage_governance, "mcp": speed.stage_mcp,
                            "hooks": speed.stage_hooks, "owner": owner.stage_owner,
                            "dashboard": dashboard.stage_dashboard}


@dataclass
class Gathered:
    """Every stage's result, gathered by the runner: the tables (each row with the run's
    provenance), PERF.md's sections in stage order, the documents and the plots."""

    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    perf_sections: list[str] = field(default_factory=list)
    documents: dict[str, str] = field(default_factory=dict)
    plot_jobs: list[Callable[[Path], list[Path]]] = field(default_factory=list)
    sections: dict[str, str] = field(default_factory=dict)

    def add(self, result: StageResult, provenance: dict[str, Any]) -> None:
        """One stage's result (a later document of the same name replaces an earlier)."""
        for table, rows in result.tables.items():
            self.tables.setdefault(table, []).extend({**provenance, **row} for row in rows)
        self.perf_sections += result.perf_sections
        self.documents.update(result.documents)
        self.plot_jobs += result.plot_jobs
        self.sections.update(result.sections)


def _with_full_run(ctx: BenchContext, rows: list[dict[str, Any]], path: Path,
                   ) -> list[dict[str, Any]]:
    """This run's stage durations, and after them, when this run measured some stages only,
    those of the last full run the reports hold (so the README keeps saying how long a
    full run takes)."""
    import polars as pl

    if not set(ctx.stages) < set(STAGES) or not path.exists():
        return rows
    earlier = pl.read_parquet(path).to_dicts()
    full = [r for r in earlier if r.get("all_stages") and not r.get("quick")]
    runs = {r["run_id"] for r in full}
    if len(runs) != 1:
        return rows
    return rows + full


def write_reports(ctx: BenchContext, run: Gathered) -> list[Path]:
    """Parquet tables and Markdown documents under ``ctx.out``."""
    import polars as pl

    written = []
    data = ctx.out / "data"
    data.mkdir(parents=True, exist_ok=True)
    for name, rows in run.tables.items():
        path = data / f"{name}.parquet"
        kept = _with_full_run(ctx, rows, path) if name == "bench_stages" else rows
        pl.DataFrame(kept, infer_schema_length=None).write_parquet(path)
        written.append(path)
    documents = dict(run.documents)
    if run.perf_sections:
        documents["PERF.md"] = perf_document(ctx, run.perf_sections)
    for name, text in documents.items():
        path = ctx.out / name
        path.write_text(text if text.endswith("\n") else text + "\n", "utf-8")
        written.append(path)
    for job in run.plot_jobs:
        written += job(ctx.out)
    _append_to_duckdb(ctx, run, data)
    return written


PERF_HEADER = "# OSIRIS speed"
_SECTION = re.compile(r"^## .*$", re.MULTILINE)
_RUN_OF = re.compile(r"commit `(?P<commit>[0-9a-f]+)`(?P<changed> with changes not committed "
                     r"yet)?, run `(?P<run>[\w-]+)`")


def _sections(text: str) -> dict[str, str]:
    """The ``## `` sections of a PERF.md by heading, in order (each with its text)."""
    starts = [m.start() for m in _SECTION.finditer(text)]
    return {text[a:].split("\n", 1)[0]: text[a:b].rstrip("\n") + "\n"
            for a, b in zip(starts, [*starts[1:], len(text)], strict=True)}


def _kept(heading: str, body: str, earlier: re.Match[str] | None) -> str:
    """A PERF.md section another run measured, saying which."""
    from osiris.harness.reports.report import kept_section

    which = (f"`{earlier['run']}` at commit "
             f"{commit_label(earlier['commit'] + (UNCOMMITTED if earlier['changed'] else ''))}"
             if earlier else "an earlier one")
    return kept_section(heading, body, which)


def perf_document(ctx: BenchContext, sections: list[str]) -> str:
    """reports/PERF.md: this run's sections. A run of some stages only, into a PERF.md a
    fuller run wrote, replaces the sections it measured and keeps the others, each kept
    one saying which run measured it (so ``osiris bench hooks`` does not drop the store's
    figures)."""
    header = (f"Machine: {ctx.meta.machine}, Python {ctx.meta.python}; commit "
              f"{commit_label(ctx.meta.commit)}, run `{ctx.meta.run_id}`"
              f"{' (quick)' if ctx.quick else ''}. Medians and p99 of repeated "
              "measurements; these machines are noisy, so compare ratios, not single "
              "timings.")
    mine = _sections("\n".join(sections))
    ordered = mine
    existing = ctx.out / "PERF.md"
    if set(ctx.stages) < set(STAGES) and existing.exists():
        text = existing.read_text("utf-8")
        earlier = _RUN_OF.search(text.split("\n## ", 1)[0])
        before = _sections(text)
        ordered = {h: mine[h] if h in mine else _kept(h, b, earlier)
                   for h, b in before.items()}
        ordered.update({h: b for h, b in mine.items() if h not in before})
    last = "## This run"
    body = [b for h, b in ordered.items() if h != last] + (
        [ordered[last]] if last in ordered else [])
    return "\n".join([PERF_HEADER, "", header, "", *body])


def _append_to_duckdb(ctx: BenchContext, run: Gathered, data: Path) -> None:
    """Every run's rows also go to reports/data/bench.duckdb (one table per kind)."""
    import duckdb
    import polars as pl

    from osiris.store.db import connect_duckdb

    con = connect_duckdb(data / "bench.duckdb")
    try:
        for name, rows in run.tables.items():
            frame = pl.DataFrame(rows, infer_schema_length=None)  # read by the SQL below
            exists = con.execute("SELECT count(*) FROM information_schema.tables WHERE"
                                 " table_name = ?", [name]).fetchone()
            if exists and exists[0]:
                # A run of a newer benchmark may add columns: older runs get NULL there.
                known = {r[0] for r in con.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_name = ?",
                    [name]).fetchall()}
                for column in frame.columns:
                    if column not in known:
                        found = con.execute(
                            f'SELECT typeof("{column}") FROM frame LIMIT 1').fetchone()  # noqa: S608
                        kind = str(found[0]) if found and found[0] != "NULL" else "VARCHAR"
                        con.execute(f'ALTER TABLE "{name}" ADD COLUMN "{column}" {kind}')
                con.execute(f'INSERT INTO "{name}" BY NAME SELECT * FROM frame')  # noqa: S608
            else:
                con.execute(f'CREATE TABLE "{name}" AS SELECT * FROM frame')  # noqa: S608
    except duckdb.Error as exc:
        ctx.say(f"bench.duckdb not updated ({exc}); the Parquet files are complete")
    finally:
        con.close()


def run(repo: Path, out: Path, *, quick: bool = False, stages: list[str] | None = None,
        progress: TextIO = sys.stderr, retrievals: tuple[str, ...] = (),
        client: str | None = None) -> list[Path]:
    """Run the benchmark stages and write the reports; return the files written.

    ``retrievals`` (default: all three models) and ``client`` (default: each trace in its
    own client) shape the trace replays of the ``benchmark`` stage."""
    unknown = set(stages or []) - set(STAGES)
    if unknown:
        raise ValueError(f"unknown stage(s) {sorted(unknown)}; known: {sorted(STAGES)}")
    workdir = Path(tempfile.mkdtemp(prefix="osiris-bench-"))
    ctx = BenchContext(repo=repo, out=out, quick=quick, meta=new_run(repo), workdir=workdir,
                       progress=progress, retrievals=retrievals or RETRIEVAL_MODELS,
                       client=client, stages=tuple(stages or STAGES))
    started = time.perf_counter()
    gathered, provenance = Gathered(), ctx.meta.as_row()
    try:
        durations = []
        for name in stages or list(STAGES):
            ctx.say(f"stage {name}")
            began = time.perf_counter()
            # Each stage sees the sections the earlier ones handed on, and changes nothing.
            gathered.add(STAGES[name](replace(ctx, sections=dict(gathered.sections))),
                         provenance)
            durations.append((name, time.perf_counter() - began))
        gathered.add(_durations(ctx, durations, every_stage=not stages
                                or set(stages) >= set(STAGES),
                                perf=bool(gathered.perf_sections)), provenance)
        written = write_reports(ctx, gathered)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    written += _regenerate_readme(ctx)
    ctx.say(f"done in {time.perf_counter() - started:.1f} s; wrote {len(written)} files "
            f"under {out}")
    return written


def _durations(ctx: BenchContext, durations: list[tuple[str, float]], *,
               every_stage: bool, perf: bool) -> StageResult:
    """Each stage's wall time, so that the README states how long the benchmark takes as
    measured (``reports/data/bench_stages.parquet``, and a PERF.md section)."""
    today = time.strftime("%Y-%m-%d", time.gmtime())
    result = StageResult()
    result.add_rows("bench_stages", [{"stage": name, "seconds": seconds, "quick": ctx.quick,
                                   "all_stages": every_stage, "date_utc": today}
                                  for name, seconds in durations])
    if perf:
        result.perf_sections.append("\n".join([
            "## This run", "", "Wall time of each stage (peer installs not included).", "",
            "| stage | seconds |", "|---|---|",
            *[f"| {name} | {seconds:,.1f} |" for name, seconds in durations], ""]))
    return result


def _regenerate_readme(ctx: BenchContext) -> list[Path]:
    """A run that writes the repository's own reports/ also rewrites the README's
    ``bench:`` blocks from them, so README and reports always agree (a run into another
    directory leaves the README alone)."""
    from osiris.harness.reports import readme_blocks

    readme = ctx.repo / "README.md"
    if ctx.out.resolve() != (ctx.repo / "reports").resolve() or not readme.exists():
        return []
    try:
        changed = readme_blocks.write_readme(readme, ctx.out)
    except ValueError as exc:  # a block the generator does not know: the reports stand
        ctx.say(f"README.md not updated: {exc}")
        return []
    ctx.say("README.md: measured blocks regenerated" if changed else
            "README.md: measured blocks unchanged")
    return [readme] if changed else []
