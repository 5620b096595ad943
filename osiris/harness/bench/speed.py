"""Speed stages of the benchmark (reports/PERF.md): store, engine operations, payloads.

Speed is measured here, never asserted in tests: these machines are noisy, so the
report gives medians and p99 over repeated runs.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, cast

from osiris.config import Settings
from osiris.contracts.checkpoint import CheckpointSnapshot
from osiris.contracts.observe import ObserveStored
from osiris.contracts.plan import PlanStart
from osiris.harness.bench.context import BenchContext, StageResult
from osiris.harness.bench.store_load import run_load
from osiris.harness.importers.traces import real_text
from osiris.harness.stats import median, ms, percentile
from osiris.store.db import fetch_row
from osiris.store.state import Store


def stage_store(ctx: BenchContext) -> StageResult:
    """Transaction latency in one process, then writers and a reader in several."""
    result = StageResult()
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
    result.add_rows("store_perf", rows)
    lost = writers * per_writer - load.writes_acknowledged
    table = ["| measure | n | median ms | p99 ms | max ms |", "|---|---|---|---|---|"]
    table += [f"| {r['measure']} | {r['n']} | {ms(r['median_s'])} | {ms(r['p99_s'])} | "
              f"{ms(r['max_s'])} |" for r in rows]
    result.perf_sections.append("\n".join([
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
    return result


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = fn()
    return time.perf_counter() - started, value


def stage_engine(ctx: BenchContext) -> StageResult:
    """The manifest's size, sustained observe throughput and database growth (each
    operation's latency, before and after the store owner, is the owner stage's)."""
    result = StageResult()
    from osiris.engine import Engine

    engine = Engine(Settings(home=ctx.workdir / "engine-home"), exclusive=True)
    n = 10 if ctx.quick else 60
    ctx.say(f"engine: {n} plan starts (manifest size), sustained observes both ways")
    manifest_tokens = [cast(PlanStart, engine.plan(
        "start", objective=f"benchmark task {i}: fix the flaky integration test",
        steps=["reproduce", "find cause", "fix", "test"], active_step=1,
        constraints=["no new dependencies"], decisions=["patch in place"]))["manifest_tokens"]
        for i in range(n)]
    engine.close()
    sustained_n = 60 if ctx.quick else 400
    rates: dict[str, float] = {}
    for mode in ("before", "after"):  # after: the owner's configuration (held open)
        fresh = Engine(Settings(home=ctx.workdir / f"growth-home-{mode}"),
                       exclusive=mode == "after")
        task = cast(PlanStart, fresh.plan("start", objective="growth"))["task_id"]
        with fresh.store.read() as con:
            events_before = fetch_row(con, "SELECT count(*) FROM events")[0]
        used_before, file_before = _db_bytes(fresh.store.db)
        began = time.perf_counter()
        for k in range(sustained_n):
            fresh.observe(task, "result", tool="Bash", args={"k": k}, result=f"ok {k}\n" * 20)
        rates[mode] = sustained_n / (time.perf_counter() - began)
        with fresh.store.read() as con:
            events_after = fetch_row(con, "SELECT count(*) FROM events")[0]
        used_after, file_after = _db_bytes(fresh.store.db)
        fresh.close()
    per_k = 1000 / max(events_after - events_before, 1)
    growth = (used_after - used_before) * per_k
    file_growth = (file_after - file_before) * per_k
    result.perf_sections.append("\n".join([
        "## Engine: manifest, throughput, growth",
        "",
        f"Manifest size: median {median(manifest_tokens):.0f} cl100k tokens "
        f"(max {max(manifest_tokens)}; the ceiling is 160).",
        "",
        f"Sustained, one process, {sustained_n} small results in a row: "
        f"{rates['before']:.1f} observe calls per second with a connection per call, "
        f"{rates['after']:.1f} with the database held open (the store owner's way). "
        f"Database growth per 1,000 journal events: {growth / 1024:,.0f} KiB of used "
        f"blocks, {file_growth / 1024:,.0f} KiB of file (DuckDB allocates 256 KiB blocks "
        f"and reuses freed ones, so the file grows in steps and faster at first). "
        f"Resident memory of the benchmark process so far: {_rss_mib():,.0f} MiB (peak).",
        "",
    ]))
    result.add_rows("engine_throughput", [{"observe_per_s": rates["before"],
                                        "observe_per_s_held": rates["after"],
                                        "n": sustained_n,
                                        "db_bytes_per_1000_events": growth,
                                        "db_file_bytes_per_1000_events": file_growth,
                                        "peak_rss_mib": _rss_mib()}])
    return result


def _db_bytes(db: Any) -> tuple[int, int]:
    """(bytes in used blocks, file size) after a checkpoint folds the WAL in."""
    with db.write() as con:
        con.execute("COMMIT")  # CHECKPOINT cannot run inside a transaction
        con.execute("CHECKPOINT")
        row = con.execute("SELECT block_size * used_blocks FROM pragma_database_size()"
                          ).fetchone()
        con.execute("BEGIN TRANSACTION")
    return int(row[0]) if row else 0, int(db.path.stat().st_size)


def _rss_mib() -> float:
    """Peak resident memory of this process (Linux reports KiB)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def stage_payloads(ctx: BenchContext) -> StageResult:
    """observe of a 1 MB payload, recall(grep) over a 10 MB ref, bytes per snapshot."""
    result = StageResult()
    from osiris.engine import Engine

    engine = Engine(Settings(home=ctx.workdir / "payload-home"))
    traces = ctx.repo / "datasets" / "traces"
    base_1mb = real_text(traces, 1 << 20)
    base_10mb = real_text(traces, 10 << 20)
    rounds = 3 if ctx.quick else 10
    ctx.say(f"payloads: {rounds} x observe of a 1 MB payload, {rounds} x grep over 10 MB")
    tid = cast(PlanStart, engine.plan("start", objective="payload speed"))["task_id"]
    observe_1mb = []
    for i in range(rounds):  # a distinct payload each time: no dedup shortcut
        dt, _ = _timed(partial(engine.observe, tid, "result", tool="cat", args={"i": i},
                               result=f"round {i}\n{base_1mb}"))
        observe_1mb.append(dt)
    big = cast(ObserveStored, engine.observe(tid, "result", tool="cat", args={"big": True},
                                             result=base_10mb))
    grep_10mb = [_timed(partial(engine.recall, big["ref"], "grep", pattern=pattern, n=50))[0]
                 for pattern in ["Error|FAILED", "def \\w+", "import", "TODO|FIXME", "\\d{4}-"]
                 * max(rounds // 5, 1)]
    outline_10mb = [_timed(partial(engine.recall, big["ref"], "head", n=50))[0]
                    for _ in range(rounds)]
    snapshots: list[CheckpointSnapshot] = []
    steps = 5 if ctx.quick else 20
    for i in range(steps):
        engine.observe(tid, "result", tool="Bash", args={"step": i},
                       result=f"step {i}\n" + base_1mb[i * 3000:(i + 1) * 3000])
        snapshots.append(cast(CheckpointSnapshot, engine.checkpoint(tid, "snapshot")))
    idle = [cast(CheckpointSnapshot, engine.checkpoint(tid, "snapshot"))["bytes_new"]
            for _ in range(steps // 2)]
    engine.close()
    new_bytes = [s["bytes_new"] for s in snapshots]
    total_bytes = [s["bytes_total"] for s in snapshots]
    rows: list[dict[str, Any]] = [
        {"measure": "observe_1mb", "n": len(observe_1mb), "median_s": median(observe_1mb),
         "p99_s": percentile(observe_1mb, 99), "bytes": len(base_1mb.encode())},
        {"measure": "recall_grep_10mb", "n": len(grep_10mb), "median_s": median(grep_10mb),
         "p99_s": percentile(grep_10mb, 99), "bytes": len(base_10mb.encode())},
        {"measure": "recall_head_10mb", "n": len(outline_10mb),
         "median_s": median(outline_10mb), "p99_s": percentile(outline_10mb, 99),
         "bytes": len(base_10mb.encode())},
        {"measure": "snapshot_bytes_new", "n": len(new_bytes),
         "median_s": 0.0, "p99_s": 0.0, "bytes": int(median(new_bytes[1:] or new_bytes))},
        {"measure": "snapshot_bytes_total", "n": len(total_bytes),
         "median_s": 0.0, "p99_s": 0.0, "bytes": int(median(total_bytes))},
        {"measure": "snapshot_bytes_new_unchanged", "n": len(idle),
         "median_s": 0.0, "p99_s": 0.0, "bytes": int(median(idle))},
    ]
    result.add_rows("payload_perf", rows)
    result.perf_sections.append("\n".join([
        "## Payloads: externalize, recall, snapshot",
        "",
        "Real tool output from `datasets/traces/` concatenated to size; each observe gets a "
        "distinct payload (no dedup shortcut); it scrubs, counts (cl100k), stores, previews "
        "and journals.",
        "",
        "| measure | n | payload | median ms | p99 ms |",
        "|---|---|---|---|---|",
        *[f"| {r['measure']} | {r['n']} | {r['bytes'] / 1e6:.1f} MB | {ms(r['median_s'])} | "
          f"{ms(r['p99_s'])} |" for r in rows[:3]],
        "",
        f"Snapshots: taken after each new payload ({len(new_bytes)}), a median "
        f"{rows[3]['bytes']:,} bytes is newly stored per snapshot, for a state of "
        f"{rows[4]['bytes']:,} bytes (the tool-results part changes each time); taken with "
        f"nothing new in between ({len(idle)}), {rows[5]['bytes']:,} bytes (the index and "
        "the ledger-derived budget part). Unchanged parts are shared between snapshots.",
        "",
    ]))
    return result


def stage_mcp(ctx: BenchContext) -> StageResult:
    """Tool-definition footprint and the stdio server's cold start to its first tools/list."""
    result = StageResult()
    import asyncio
    import sys

    from mcp import Client, StdioServerParameters

    from osiris.server.footprint import footprint

    fp = footprint()
    home = ctx.workdir / "mcp-home"
    env = {"OSIRIS_HOME": str(home)}  # merged over the SDK's safe default environment
    runs = 3 if ctx.quick else 10
    ctx.say(f"mcp: footprint, and {runs} cold starts of the stdio server")

    async def cold_start() -> float:
        started = time.perf_counter()
        params = StdioServerParameters(command=sys.executable, args=["-m", "osiris"], env=env)
        async with Client(params, mode="legacy") as client:
            await client.list_tools()
            return time.perf_counter() - started

    starts = [asyncio.run(cold_start()) for _ in range(runs)]
    result.add_rows("mcp_perf", [
        {"measure": "footprint_total_tokens", "value": fp["total_tokens"], "n": 1},
        {"measure": "footprint_pretty_tokens", "value": fp["pretty_json_total_tokens"], "n": 1},
        {"measure": "dispatch_only_tokens", "value": fp["dispatch_only_tokens"], "n": 1},
        {"measure": "instructions_tokens", "value": fp["instructions_tokens"], "n": 1},
        {"measure": "stdio_cold_start_median_s", "value": median(starts), "n": runs},
        {"measure": "stdio_cold_start_p99_s", "value": percentile(starts, 99), "n": runs}])
    result.documents["FOOTPRINT.json"] = __import__("json").dumps(fp, indent=2)
    per_tool = ", ".join(f"{t['name']} {t['tokens']}" for t in fp["tools"])
    result.perf_sections.append("\n".join([
        "## MCP server",
        "",
        f"- Tool definitions: **{fp['total_tokens']} cl100k tokens** for the six tools "
        f"({per_tool}); {fp['pretty_json_total_tokens']} when a client pretty-prints the "
        f"JSON; {fp['dispatch_only_tokens']} with OSIRIS_DISPATCH_ONLY=1. The seed measured "
        f"{fp['seed_tokens']}.",
        f"- Instructions (doctrine): {fp['instructions_tokens']} tokens "
        f"({fp['instructions_chars']} characters).",
        f"- stdio cold start to the first tools/list answer (process start, imports, "
        f"handshake): median {ms(median(starts))} ms, p99 {ms(percentile(starts, 99))} ms "
        f"over {runs} starts in a new home: the first without a start cache (answers "
        "built from the tool definitions), the others answered from it (the store owner's "
        "cold-start table below has each case).",
        "",
    ]))
    return result


def _hook_payloads(repo: Any, workdir: Path) -> tuple[list[tuple[dict[str, Any], dict[str, Any]]],
                                                   Path]:
    """PreToolUse/PostToolUse payloads for the calls of the bundled Claude Code traces, as
    a user's install runs them: each trace's workspace unpacked (one session per trace),
    the trace's paths mapped onto it, its folder the hook's ``cwd`` and, with the root
    returned (``OSIRIS_ROOTS``), a file OSIRIS may read — so a ``Read`` goes through the
    read routing (large reads, re-reads, changed lines) as in Claude Code, and
    ``tool_response`` has the shape Claude Code gives each tool."""
    from osiris.harness.hook_payloads import tool_response
    from osiris.harness.importers.traces import load_trace
    from osiris.harness.real_clients.trace_plan import PathMap
    from osiris.harness.real_clients.workspaces import traces_with_workspaces, unpack

    traces = repo / "datasets" / "traces"
    root = workdir / "hook-workspaces"
    if root.exists():
        shutil.rmtree(root)
    out: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for n, (path, tarball) in enumerate(traces_with_workspaces(
            traces, repo / "datasets" / "workspaces")):
        trace = load_trace(path)
        if trace.format != "claude-code":
            continue
        project, tmp = root / f"{n}" / "project", root / f"{n}" / "tmp"
        project.mkdir(parents=True)
        tmp.mkdir()
        unpack(tarball, project, includes=path.parent / "prompt_includes")
        paths = PathMap(str(trace.meta.get("cwd") or "") or None, project, tmp)
        session = f"bench-{n}"
        for step in trace.steps:
            args = paths(step.args)
            pre = {"session_id": session, "cwd": str(project), "hook_event_name": "PreToolUse",
                   "tool_name": step.tool, "tool_input": args, "tool_use_id": step.call_id}
            post = {**pre, "hook_event_name": "PostToolUse",
                    "tool_response": tool_response(step.tool, args, paths.text(step.output))}
            if step.is_error:
                post = {**pre, "hook_event_name": "PostToolUseFailure",
                        "error": paths.text(step.output)}
            out.append((pre, post))
    return out, root


def _codex_hook_calls(repo: Any) -> list[Any]:
    """The shell calls of the bundled Codex traces as Codex's hooks see them (one session
    and one rollout per trace): ``Bash`` with the command, its output in the rollout
    record Codex writes when the command ends."""
    from osiris.core.routing import SHELL_TOOLS
    from osiris.harness.bench.owner import CodexCall
    from osiris.harness.importers.traces import find_traces, load_trace

    out: list[CodexCall] = []
    for n, path in enumerate(find_traces(repo / "datasets" / "traces")):
        trace = load_trace(path)
        if trace.format != "codex-cli":
            continue
        session, rollout = f"bench-codex-{n}", f"rollout-{n}.jsonl"
        for i, step in enumerate(trace.steps):
            command = step.args.get("command", step.args.get("cmd"))
            if step.tool not in SHELL_TOOLS or not isinstance(command, str):
                continue
            call_id = f"call_{n}_{i}"
            pre = {"session_id": session, "cwd": "/work", "hook_event_name": "PreToolUse",
                   "tool_name": "Bash", "tool_input": {"command": command},
                   "tool_use_id": call_id}
            # The hook reads the whole output from the rollout, not from tool_response.
            post = {**pre, "hook_event_name": "PostToolUse", "tool_response": step.output}
            record = {"type": "event_msg", "payload": {"type": "item_completed", "item": {
                "type": "CommandExecution", "id": call_id, "command": command,
                "status": "failed" if step.is_error else "completed",
                "aggregated_output": step.output, "exit_code": 1 if step.is_error else 0}}}
            out.append(CodexCall(pre, post, rollout, json.dumps(record)))
    return out


def stage_hooks(ctx: BenchContext) -> StageResult:
    """Client hooks, before and after the store owner: the command hook's round trip
    (process start included) and the in-server path of an ``mcp_tool`` hook."""
    result = StageResult()
    from osiris.harness.bench.owner import codex_hook_round_trips, hook_round_trips
    from osiris.harness.reports.owner import render_hooks

    n = 10 if ctx.quick else 100
    calls, root = _hook_payloads(ctx.repo, ctx.workdir)
    calls = calls[:n]
    ctx.say(f"hooks: {len(calls)} PreToolUse + PostToolUse command hooks and in-server "
            "prechecks, each way, in the traces' workspaces")
    rows = hook_round_trips(ctx, calls, roots=(root,))
    codex = _codex_hook_calls(ctx.repo)[:n]
    ctx.say(f"hooks: {len(codex)} Codex PreToolUse + PostToolUse command hooks, each way")
    rows += codex_hook_round_trips(ctx, codex)
    result.add_rows("hook_perf", rows)
    result.perf_sections.append(render_hooks(rows))
    return result
