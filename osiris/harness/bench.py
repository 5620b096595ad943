"""The benchmark runner: ``nox -s bench``, ``osiris bench``, ``python bench/run_bench.py``.

Each stage drives real OSIRIS code (the store, the scrubber, and as the project
grows the engine and the MCP server), returns rows, and contributes sections to
the reports. Rows go to Parquet under ``reports/data/``; the Markdown reports are
regenerated from them.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TextIO

from osiris.config import Settings
from osiris.harness import secrets_report
from osiris.harness.runmeta import RunMeta, new_run
from osiris.harness.stats import median, ms, percentile
from osiris.harness.store_load import run_load
from osiris.store.state import Store


@dataclass
class BenchContext:
    """What every stage gets: where to write, how big to go, whom to tell."""

    repo: Path
    out: Path
    quick: bool
    meta: RunMeta
    workdir: Path
    progress: TextIO = sys.stderr
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    perf_sections: list[str] = field(default_factory=list)
    documents: dict[str, str] = field(default_factory=dict)

    def say(self, message: str) -> None:
        """Progress line on stderr."""
        self.progress.write(f"[bench {time.strftime('%H:%M:%S')}] {message}\n")
        self.progress.flush()

    def add_rows(self, table: str, rows: list[dict[str, Any]]) -> None:
        """Rows for ``reports/data/<table>.parquet``, with the run's provenance."""
        meta = self.meta.as_row()
        self.tables.setdefault(table, []).extend({**meta, **row} for row in rows)


Stage = Callable[[BenchContext], None]


def stage_secrets(ctx: BenchContext) -> None:
    """Scrub every real trace output; report findings (false positives) and speed."""
    traces = ctx.repo / "datasets" / "traces"
    ctx.say(f"secrets: scrubbing every tool output under {traces}")
    rows, summary = secrets_report.scan_traces(traces)
    ctx.add_rows("secret_findings", rows or [{"trace": None, "step": None, "tool": None,
                                              "rule_id": None, "kind": None,
                                              "context_before": None, "secret_chars": None}])
    ctx.documents["SECRETS.md"] = secrets_report.render(summary, rows)
    ctx.say(f"secrets: {summary['findings']} findings in {summary['outputs']} outputs, "
            f"{summary['mb_per_s']:.1f} MB/s")


def stage_store(ctx: BenchContext) -> None:
    """Transaction latency in one process, then writers and a reader in several."""
    home = ctx.workdir / "store-home"
    store = Store(Settings(home=home))
    n = 30 if ctx.quick else 200
    ctx.say(f"store: {n} single-process write transactions")
    latencies = []
    with store.transaction() as tx:
        tx.insert_task("perf", objective="perf", state={})
    for i in range(n):
        started = time.perf_counter()
        with store.transaction() as tx:
            event = tx.event("perf.step", {"i": i}, task_id="perf")
            tx.ledger(kind="perf", task_id="perf", event_seq=event.seq, encoding="cl100k_base")
        latencies.append(time.perf_counter() - started)
    store.close()
    writers, per_writer = (2, 15) if ctx.quick else (3, 60)
    ctx.say(f"store: {writers} writer processes x {per_writer} payloads + 1 reader")
    load = run_load(home, writers=writers, per_writer=per_writer, size=2000,
                    read_seconds=2.0 if ctx.quick else 5.0)
    rows: list[dict[str, Any]] = [
            {"measure": "tx_single_process", "n": n, "median_s": median(latencies),
             "p99_s": percentile(latencies, 99), "max_s": max(latencies)},
            {"measure": "write_concurrent", "n": load.writes_acknowledged,
             "median_s": median(load.write_latencies_s),
             "p99_s": percentile(load.write_latencies_s, 99),
             "max_s": max(load.write_latencies_s, default=0.0)},
            {"measure": "lock_wait_concurrent", "n": load.writes_acknowledged,
             "median_s": median(load.lock_waits_s), "p99_s": percentile(load.lock_waits_s, 99),
             "max_s": max(load.lock_waits_s, default=0.0)},
            {"measure": "read_while_writing", "n": load.reads,
             "median_s": median(load.read_latencies_s),
             "p99_s": percentile(load.read_latencies_s, 99),
             "max_s": max(load.read_latencies_s, default=0.0)}]
    ctx.add_rows("store_perf", rows)
    lost = writers * per_writer - load.writes_acknowledged
    table = ["| measure | n | median ms | p99 ms | max ms |", "|---|---|---|---|---|"]
    table += [f"| {r['measure']} | {r['n']} | {ms(r['median_s'])} | {ms(r['p99_s'])} | "
              f"{ms(r['max_s'])} |" for r in rows]
    ctx.perf_sections.append("\n".join([
        "## Store: one DuckDB file, many processes",
        "",
        "Each write is one transaction (open, BEGIN, insert, COMMIT, close) under the "
        "store's `flock`; readers share the lock. A concurrent write stores one 2 KB payload "
        "(scrub, count, blob, metadata, journal event, ledger row).",
        "",
        *table,
        "",
        f"{writers} writers and 1 reader ran together for {load.wall_s:.1f} s: "
        f"{load.writes_acknowledged} writes acknowledged, {lost} failed, {load.events_in_db} "
        f"events in the database, chain verified: {load.chain_ok}, "
        f"{len(load.errors)} processes wrote to stderr.",
        "",
    ]))


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = fn()
    return time.perf_counter() - started, value


def stage_engine(ctx: BenchContext) -> None:
    """In-process latency of each engine operation and the manifest's size."""
    from osiris.engine import Engine

    engine = Engine(Settings(home=ctx.workdir / "engine-home"))
    n = 10 if ctx.quick else 60
    ctx.say(f"engine: {n} rounds of plan/observe operations")
    timings: dict[str, list[float]] = {}
    manifest_tokens = []
    head = "You are a coding agent working in a monorepo. Follow the rules.\n" * 40
    usage = {"input_tokens": 1000, "cache_read_input_tokens": 20_000, "output_tokens": 200}
    for i in range(n):
        dt, start = _timed(partial(
            engine.plan, "start", objective=f"benchmark task {i}: fix the flaky integration test",
            steps=["reproduce", "find cause", "fix", "test"], active_step=1,
            constraints=["no new dependencies"], decisions=["patch in place"]))
        timings.setdefault("plan.start", []).append(dt)
        manifest_tokens.append(start["manifest_tokens"])
        tid = start["task_id"]
        ops: list[tuple[str, Callable[[], Any]]] = [
            ("plan.update", partial(engine.plan, "update", task_id=tid, decisions=[f"d{i}"])),
            ("plan.status", partial(engine.plan, "status", task_id=tid)),
            ("plan.resume", partial(engine.plan, "resume", task_id=tid)),
            ("observe.head", partial(engine.observe, tid, "head", result=head)),
            ("observe.seal+usage", partial(engine.observe, tid, "action", seal=start["seal"],
                                           usage=usage)),
        ]
        for name, op in ops:
            timings.setdefault(name, []).append(_timed(op)[0])
    engine.close()
    rows: list[dict[str, Any]] = [
        {"operation": name, "n": len(values), "median_s": median(values),
         "p99_s": percentile(values, 99)} for name, values in timings.items()]
    ctx.add_rows("engine_perf", rows)
    table = ["| operation | n | median ms | p99 ms |", "|---|---|---|---|"]
    table += [f"| {r['operation']} | {r['n']} | {ms(r['median_s'])} | {ms(r['p99_s'])} |"
              for r in rows]
    ctx.perf_sections.append("\n".join([
        "## Engine operations, in process",
        "",
        "Each operation is one store transaction (open, lock, commit, close: about 30 ms of "
        "the figures below is that fixed cost, see the store section).",
        "",
        *table,
        "",
        f"Manifest size: median {median(manifest_tokens):.0f} cl100k tokens "
        f"(max {max(manifest_tokens)}; the ceiling is 160).",
        "",
    ]))


STAGES: dict[str, Stage] = {"secrets": stage_secrets, "store": stage_store,
                            "engine": stage_engine}


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
    return written


def run(repo: Path, out: Path, *, quick: bool = False, stages: list[str] | None = None,
        progress: TextIO = sys.stderr) -> list[Path]:
    """Run the benchmark stages and write the reports; return the files written."""
    unknown = set(stages or []) - set(STAGES)
    if unknown:
        raise ValueError(f"unknown stage(s) {sorted(unknown)}; known: {sorted(STAGES)}")
    workdir = Path(tempfile.mkdtemp(prefix="osiris-bench-"))
    ctx = BenchContext(repo=repo, out=out, quick=quick, meta=new_run(repo), workdir=workdir,
                       progress=progress)
    started = time.perf_counter()
    try:
        for name in stages or list(STAGES):
            ctx.say(f"stage {name}")
            STAGES[name](ctx)
        written = write_reports(ctx)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    ctx.say(f"done in {time.perf_counter() - started:.1f} s; wrote {len(written)} files "
            f"under {out}")
    return written
