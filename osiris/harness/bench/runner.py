"""The benchmark runner: ``nox -s bench``, ``osiris bench``, ``python bench/run_bench.py``.

Each stage drives real OSIRIS code (the store, the scrubber, and as the project
grows the engine and the MCP server), returns rows, and contributes sections to
the reports. Rows go to Parquet under ``reports/data/``; the Markdown reports are
regenerated from them, and so are README.md's measured blocks when the run writes the
repository's own ``reports/`` (:mod:`osiris.harness.readme_blocks`).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from osiris.harness import (
    dashboard_perf,
    governance_replay,
    owner_perf,
    perf,
    secrets_report,
)
from osiris.harness.context import BenchContext, Stage
from osiris.harness.retrieval import RETRIEVAL_MODELS
from osiris.harness.runmeta import new_run


def stage_secrets(ctx: BenchContext) -> None:
    """Scrub every real trace output; report findings (false positives) and speed."""
    traces = ctx.repo / "datasets" / "traces"
    ctx.say(f"secrets: scrubbing every tool output under {traces}")
    rows, summary = secrets_report.scan_traces(traces)
    ctx.add_rows("secret_findings", rows or [{"trace": None, "step": None, "tool": None,
                                              "field": None, "rule_id": None, "kind": None,
                                              "context_before": None, "secret_chars": None}])
    corpus_path = ctx.repo / "datasets" / "secrets" / "secret_corpus.toml"
    corpus = secrets_report.corpus_recall(corpus_path)
    fields = secrets_report.field_check(corpus_path, ctx.workdir / "secrets-home")
    ctx.add_rows("secret_corpus", corpus)
    ctx.add_rows("secret_fields", fields)
    ctx.documents["SECRETS.md"] = secrets_report.render(summary, rows, corpus, fields)
    ctx.say(f"secrets: {summary['findings']} findings in {summary['outputs']} outputs, "
            f"{summary['mb_per_s']:.1f} MB/s; corpus {sum(r['ok'] for r in corpus)}/"
            f"{len(corpus)}; {sum(r['in_answer'] or r['in_store'] for r in fields)} field "
            "leaks")


def stage_benchmark(ctx: BenchContext) -> None:
    """The sweep, the real traces and the break-even sweep through every system; renders
    reports/BENCHMARK.md and its plots."""
    from osiris.harness import benchmark, peers, report, report_plots
    from osiris.harness.replay import System
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
    rows = benchmark.sweep_rows(traces, ctx.workdir, sizes=sizes, progress=ctx.say,
                                extra=with_peers)
    only = ("swe-agent__test-repo", "django__django") if ctx.quick else ()
    rows += benchmark.trace_rows(traces, ctx.workdir, only=only, progress=ctx.say,
                                 extra=with_peers, client=ctx.client,
                                 retrievals=ctx.retrievals)
    heldout = ctx.repo / "datasets" / "traces-heldout"
    if heldout.is_dir() and not ctx.quick:
        # Sessions added after the rules were fixed: reported apart, never tuned on.
        rows += benchmark.trace_rows(heldout, ctx.workdir, progress=ctx.say,
                                     extra=with_peers, client=ctx.client,
                                     retrievals=("visible",), workload="heldout")
    rows += benchmark.break_even_rows(
        traces, ctx.workdir, sizes=(100, 400) if ctx.quick else benchmark.BREAK_EVEN_SIZES,
        progress=ctx.say)
    even = benchmark.break_even_summary(rows)
    ctx.add_rows("results", rows)
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
        ctx.add_rows("peers", peer_rows)
    fp = footprint()
    meta = {**ctx.meta.as_row(), "cost_model_version": rows[0]["cost_model_version"]}
    real_clients = ctx.sections.get("clients") or report.clients_section_of(ctx.out)
    ctx.documents["BENCHMARK.md"] = report.render(rows, fp, even, meta, peers=peer_rows,
                                                  real_clients=real_clients)
    ctx.plot_jobs.append(lambda out: report_plots.plots(rows, out))


def stage_clients(ctx: BenchContext) -> None:
    """The tielec traces inside the real Claude Code and Codex, in every configuration,
    and the mini-swe-agent trajectories inside the real mini-swe-agent, bare and with
    OSIRIS (``osiris bench clients``; quick: one short Codex trace, one trajectory)."""
    from osiris.harness.clients import mini, sessions

    # A fixed scratch root: its path reaches the prompts and, through OSIRIS's content
    # hashes of what it observed, more than the neutraliser can fix.
    measured = sessions.run_all(ctx.repo, quick=ctx.quick, say=ctx.say, root=sessions.ROOT)
    rows = sessions.session_rows(measured)
    turns = [t for m in measured for t in m.turns]
    ctx.add_rows("clients_sessions", rows)
    if turns:
        ctx.add_rows("clients_turns", turns)
    looped = mini.run_all(ctx.repo, quick=ctx.quick, say=ctx.say, root=mini.ROOT)
    mini_rows = sessions.session_rows(looped)
    ctx.add_rows("mini_sessions", mini_rows or [{"session": None}])
    if any(m.turns for m in looped):
        ctx.add_rows("mini_turns", [t for m in looped for t in m.turns])
    section = sessions.render(rows) + "\n" + mini.render(mini_rows)
    ctx.sections["clients"] = section
    if "benchmark" not in ctx.stages:
        # Run alone: the section of the BENCHMARK.md already there is replaced in place.
        from osiris.harness import report

        current = ctx.out / "BENCHMARK.md"
        if current.exists():
            ctx.documents["BENCHMARK.md"] = report.with_clients_section(
                current.read_text("utf-8"), section)


def stage_governance(ctx: BenchContext) -> None:
    """Replay the real sessions through precheck + observe: what LoopGuard flags."""
    traces = ctx.repo / "datasets" / "traces"
    ctx.say("governance: precheck + observe of every call of the real traces")
    results = governance_replay.replay_all(traces, ctx.workdir / "governance-home",
                                           quick=ctx.quick)
    rows = [{"trace": r.trace, "format": r.format, "step": f["step"], "tool": f["tool"],
             "call": f["call"], "verdict": f["verdict"], "patterns": ",".join(f["patterns"])}
            for r in results for f in r.flags]
    ctx.add_rows("loopguard_flags", rows or [{"trace": None, "format": None, "step": None,
                                              "tool": None, "call": None, "verdict": None,
                                              "patterns": None}])
    ctx.documents["LOOPGUARD.md"] = governance_replay.render(results)
    ctx.say(f"governance: {len(rows)} flags in {sum(r.calls for r in results)} calls")


STAGES: dict[str, Stage] = {"clients": stage_clients, "benchmark": stage_benchmark,
                            "secrets": stage_secrets,
                            "store": perf.stage_store,
                            "engine": perf.stage_engine, "payloads": perf.stage_payloads,
                            "governance": stage_governance, "mcp": perf.stage_mcp,
                            "hooks": perf.stage_hooks, "owner": owner_perf.stage_owner,
                            "dashboard": dashboard_perf.stage_dashboard}


def write_reports(ctx: BenchContext) -> list[Path]:
    """Parquet tables and Markdown documents under ``ctx.out``."""
    import polars as pl

    written = []
    data = ctx.out / "data"
    data.mkdir(parents=True, exist_ok=True)
    for name, rows in ctx.tables.items():
        path = data / f"{name}.parquet"
        pl.DataFrame(rows, infer_schema_length=None).write_parquet(path)
        written.append(path)
    if ctx.perf_sections:
        perf = ["# OSIRIS speed", "",
                f"Machine: {ctx.meta.machine}, Python {ctx.meta.python}; commit "
                f"`{ctx.meta.commit[:12]}`, run `{ctx.meta.run_id}`"
                f"{' (quick)' if ctx.quick else ''}. Medians and p99 of repeated "
                "measurements; these machines are noisy, so compare ratios, not single "
                "timings.", "", *ctx.perf_sections]
        ctx.documents["PERF.md"] = "\n".join(perf)
    for name, text in ctx.documents.items():
        path = ctx.out / name
        path.write_text(text if text.endswith("\n") else text + "\n", "utf-8")
        written.append(path)
    for job in ctx.plot_jobs:
        written += job(ctx.out)
    _append_to_duckdb(ctx, data)
    return written


def _append_to_duckdb(ctx: BenchContext, data: Path) -> None:
    """Every run's rows also go to reports/data/bench.duckdb (one table per kind)."""
    import duckdb
    import polars as pl

    from osiris.store.db import connect_duckdb

    con = connect_duckdb(data / "bench.duckdb")
    try:
        for name, rows in ctx.tables.items():
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
    try:
        durations = []
        for name in stages or list(STAGES):
            ctx.say(f"stage {name}")
            began = time.perf_counter()
            STAGES[name](ctx)
            durations.append((name, time.perf_counter() - began))
        _record_durations(ctx, durations, every_stage=not stages or set(stages) >= set(STAGES))
        written = write_reports(ctx)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    written += _regenerate_readme(ctx)
    ctx.say(f"done in {time.perf_counter() - started:.1f} s; wrote {len(written)} files "
            f"under {out}")
    return written


def _record_durations(ctx: BenchContext, durations: list[tuple[str, float]], *,
                      every_stage: bool) -> None:
    """Each stage's wall time, so that the README states how long the benchmark takes as
    measured (``reports/data/bench_stages.parquet``, and a PERF.md section)."""
    today = time.strftime("%Y-%m-%d", time.gmtime())
    ctx.add_rows("bench_stages", [{"stage": name, "seconds": seconds, "quick": ctx.quick,
                                   "all_stages": every_stage, "date_utc": today}
                                  for name, seconds in durations])
    if ctx.perf_sections:
        ctx.perf_sections.append("\n".join([
            "## This run", "", "Wall time of each stage (peer installs not included).", "",
            "| stage | seconds |", "|---|---|",
            *[f"| {name} | {seconds:,.1f} |" for name, seconds in durations], ""]))


def _regenerate_readme(ctx: BenchContext) -> list[Path]:
    """A run that writes the repository's own reports/ also rewrites the README's
    ``bench:`` blocks from them, so README and reports always agree (a run into another
    directory leaves the README alone)."""
    from osiris.harness import readme_blocks

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
