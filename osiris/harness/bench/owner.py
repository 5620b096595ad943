"""The store owner's stage of the benchmark (reports/PERF.md): before and after, one run.

"Before" is OSIRIS with ``OSIRIS_STORE_OWNER=off``: every process opens the database,
takes the home's lock, commits and closes for each call (what OSIRIS did until the
owner existed). "After" is the default: one owner per home (:mod:`osiris.owner`).
Each figure is measured both ways in the same run, on the same machine, and reported
as medians, p99 and their ratio.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from osiris.clients.hook_input import HOOK_FIELDS
from osiris.clients.launcher import launch_argv
from osiris.config import Settings
from osiris.environ import process_environment
from osiris.harness.bench.context import BenchContext, StageResult
from osiris.harness.bench.owner_load import (
    kill_owners,
    release_together,
    spawn_observer,
    verify,
)
from osiris.harness.reports.owner import COLD_STARTS, HOST_LOOP, HOST_START, render
from osiris.harness.stats import median, percentile
from osiris.store.db import ask_owner_to_release

MODES = ("before", "after")


def _env(home: Path, mode: str) -> dict[str, str]:
    return {"OSIRIS_HOME": str(home), "PATH": process_environment().get("PATH", "/usr/bin"),
            "OSIRIS_STORE_OWNER": "off" if mode == "before" else "on",
            "HOME": str(home.parent)}


def _row(measure: str, mode: str, values: list[float], **extra: Any) -> dict[str, Any]:
    return {"measure": measure, "mode": mode, "n": len(values), "median_s": median(values),
            "p99_s": percentile(values, 99), "max_s": max(values, default=0.0), **extra}


# -- engine operations in process ---------------------------------------------------------

def engine_ops(ctx: BenchContext, n: int) -> list[dict[str, Any]]:
    """Each engine operation, ``n`` rounds, in the owner's configuration (the database held
    open) and with a connection per call."""

    rows: list[dict[str, Any]] = []
    head = "You are a coding agent working in a monorepo. Follow the rules.\n" * 40
    usage = {"input_tokens": 1000, "cache_read_input_tokens": 20_000, "output_tokens": 200}
    for mode in MODES:
        engine = _engine(Settings(home=ctx.workdir / f"owner-engine-{mode}"), mode)
        timings: dict[str, list[float]] = {}
        held: list[float] = []
        for i in range(n):
            start = _time(timings, "plan.start", partial(
                engine.plan, "start", objective=f"benchmark task {i}",
                steps=["reproduce", "fix", "test"], active_step=1))
            tid = start["task_id"]
            ops: list[tuple[str, Callable[[], Any]]] = [
                ("plan.update", partial(engine.plan, "update", task_id=tid,
                                        decisions=[f"d{i}"])),
                ("plan.status", partial(engine.plan, "status", task_id=tid)),
                ("observe.head", partial(engine.observe, tid, "head", result=head)),
                ("observe.seal+usage", partial(engine.observe, tid, "action",
                                               seal=start["seal"], usage=usage)),
                ("observe.result 4k", partial(engine.observe, tid, "result", tool="Bash",
                                              args={"i": i}, result=f"run {i}\n" + head * 4)),
                ("precheck", partial(engine.precheck, tid, "Bash",
                                     args={"command": "git commit -m x"})),
                ("checkpoint.snapshot", partial(engine.checkpoint, tid, "snapshot")),
            ]
            for name, op in ops:
                answer = _time(timings, name, op)
                if name == "observe.result 4k":
                    held.append(engine.store.db.last_lock_held_s)
                    ref = answer["ref"]
            _time(timings, "recall.grep", partial(engine.recall, ref, "grep",
                                                  pattern="rules", n=5, task_id=tid))
            if engine.store.behind is not None:  # what the owner's flusher does meanwhile
                _time(timings, "write-behind flush, per round of 10 calls",
                      engine.store.flush)
        engine.close()
        rows += [_row(name, mode, values) for name, values in timings.items()]
        rows.append(_row("observe.result 4k: store held", mode, held))
    return rows


def _engine(settings: Settings, mode: str) -> Any:
    """An engine as the owner runs it (after: the database held open, the journal head
    kept), or as every process ran it before (a connection per call)."""
    from osiris.engine import Engine
    from osiris.store.state import Store

    if mode == "before":
        return Engine(settings)
    return Engine(settings, store=Store(settings, exclusive=True, sole_writer=True,
                                        write_behind=settings.write_behind))


def _time(timings: dict[str, list[float]], name: str, fn: Callable[[], Any]) -> Any:
    started = time.perf_counter()
    value = fn()
    timings.setdefault(name, []).append(time.perf_counter() - started)
    return value


def observe_large(ctx: BenchContext, text: str, rounds: int) -> list[dict[str, Any]]:
    """observe of a large payload, and how long it held the store, both ways."""

    rows = []
    for mode in MODES:
        engine = _engine(Settings(home=ctx.workdir / f"owner-1mb-{mode}"), mode)
        tid = engine.plan("start", objective="large payloads")["task_id"]
        took, held = [], []
        for i in range(rounds):
            started = time.perf_counter()
            engine.observe(tid, "result", tool="cat", args={"i": i},
                           result=f"round {i}\n{text}")
            took.append(time.perf_counter() - started)
            held.append(engine.store.db.last_lock_held_s)
            engine.store.flush()  # the owner's flusher, between calls
        engine.close()
        size = len(text.encode()) / 1e6
        rows += [_row(f"observe {size:.1f} MB", mode, took),
                 _row(f"observe {size:.1f} MB: store held", mode, held)]
    return rows


# -- real processes ------------------------------------------------------------------

def stdio_calls(ctx: BenchContext, n: int) -> list[dict[str, Any]]:
    """Engine operations over a live stdio MCP connection (timed at the client)."""
    from mcp import Client, StdioServerParameters

    head = "line of tool output from a test run\n" * 110
    rows: list[dict[str, Any]] = []
    for mode in MODES:
        home = ctx.workdir / f"owner-stdio-{mode}"

        async def run(home: Path = home, mode: str = mode) -> dict[str, list[float]]:
            params = StdioServerParameters(command=sys.executable, args=["-m", "osiris"],
                                           env=_env(home, mode))
            timings: dict[str, list[float]] = {}
            async with Client(params, mode="legacy") as client:
                started = await client.call_tool("osiris_plan", {
                    "mode": "start", "objective": "stdio timings", "steps": ["a", "b"]})
                tid = started.structured_content["task_id"]
                for i in range(n + 5):
                    calls = [("observe.result 4k", "osiris_observe", {
                                 "task_id": tid, "kind": "result", "tool": "Bash",
                                 "args": {"i": i}, "result": f"run {i}\n{head}"}),
                             ("precheck", "osiris_precheck", {
                                 "task_id": tid, "tool": "Bash",
                                 "args": {"command": f"ls {i}"}}),
                             ("plan.status", "osiris_plan", {"mode": "status",
                                                             "task_id": tid})]
                    for name, tool, arguments in calls:
                        began = time.perf_counter()
                        result = await client.call_tool(tool, arguments)
                        if result.is_error:
                            raise RuntimeError(f"{tool} failed: {result.content}")
                        if i >= 5:  # the first calls start the owner and warm caches
                            timings.setdefault(name, []).append(time.perf_counter() - began)
            return timings

        timings = asyncio.run(run())
        rows += [_row(f"stdio {name}", mode, values) for name, values in timings.items()]
        ask_owner_to_release(home)
    return rows


def cold_starts(ctx: BenchContext, runs: int) -> list[dict[str, Any]]:
    """Process start to the first tools/list answer, and to the answer of a first tool
    call (the MCP SDK loaded): before, and after in the cases of :data:`COLD_STARTS`."""
    from mcp import Client, StdioServerParameters

    from osiris.server.start_cache import CACHE_NAME

    rows = []
    for mode, label, _ in COLD_STARTS:
        home = ctx.workdir / f"owner-cold-{label.replace(' ', '-').replace(',', '')}"
        lists, calls = [], []
        env = {**_env(home, mode),
               "OSIRIS_EARLY_ANSWERS": "off" if mode == "before" else "on"}
        # Once, not timed: the owner runs, and the start cache is written (where it is on).
        asyncio.run(_start_once(Client, StdioServerParameters, env))
        for _ in range(runs):
            if label.endswith("no owner yet"):
                ask_owner_to_release(home)
                shutil.rmtree(home, ignore_errors=True)
            elif label.endswith("first start"):
                (home / CACHE_NAME).unlink(missing_ok=True)
            listed, called = asyncio.run(_start_once(Client, StdioServerParameters, env))
            lists.append(listed)
            calls.append(called)
        rows += [_row("stdio cold start to tools/list", label, lists),
                 _row("stdio cold start to a first tool call", label, calls)]
        ask_owner_to_release(home)
    return rows


async def _start_once(client_class: Any, params_class: Any, env: dict[str, str],
                      ) -> tuple[float, float]:
    """Seconds from the process start to the first tools/list answer, and to the answer
    of a first tool call (an invalid one: answered by the SDK, nothing stored)."""
    began = time.perf_counter()
    params = params_class(command=sys.executable, args=["-m", "osiris"], env=env)
    async with client_class(params, mode="legacy") as client:
        await client.list_tools()
        listed = time.perf_counter() - began
        result = await client.call_tool("osiris_plan", {})
        if not result.is_error:
            raise RuntimeError("a tool call without arguments was accepted")
        return listed, time.perf_counter() - began


def hook_round_trips(ctx: BenchContext, calls: list[tuple[dict[str, Any], dict[str, Any]]],
                     roots: Sequence[Path] = ()) -> list[dict[str, Any]]:
    """Claude Code command hooks as Claude Code runs them (a process per call), both
    ways; and the in-server path an ``mcp_tool`` hook takes. ``roots``: the folders
    OSIRIS may read files in (``OSIRIS_ROOTS``, as ``osiris install`` sets it)."""
    from mcp import Client, StdioServerParameters

    rows: list[dict[str, Any]] = []
    for mode in MODES:
        home = ctx.workdir / f"owner-hooks-{mode}"
        env = _env(home, mode)
        if roots:
            env["OSIRIS_ROOTS"] = ";".join(str(r) for r in roots)

        def command(event: str, payload: dict[str, Any], env: dict[str, str] = env,
                    mode: str = mode) -> float:
            return _command_hook("claude-code", event, payload, env, mode)

        command("pre-tool-use", calls[0][0])  # starts the owner (after): not timed
        pre = [command("pre-tool-use", p) for p, _ in calls]
        post = [command("post-tool-use", p) for _, p in calls]

        async def in_server(env: dict[str, str] = env) -> tuple[list[float], list[float]]:
            # As `osiris install claude-code` wires it: the server lists osiris_hook and
            # each hook passes the input's fields, as Claude Code fills "${field}".
            params = StdioServerParameters(command=sys.executable, args=["-m", "osiris"],
                                           env={**env, "OSIRIS_HOOK_TOOL": "on"})
            times: tuple[list[float], list[float]] = ([], [])
            async with Client(params, mode="legacy") as client:
                for i, (p, q) in enumerate([calls[0], *calls]):
                    for into, event, payload in ((times[0], "pre-tool-use", p),
                                                 (times[1], "post-tool-use", q)):
                        fields = {f: payload.get(f, "") for f in HOOK_FIELDS}
                        fields["session_id"] += "-mcp"
                        began = time.perf_counter()
                        result = await client.call_tool("osiris_hook",
                                                        {"event": event, **fields})
                        if i:
                            into.append(time.perf_counter() - began)
                        problem = (result.structured_content or {}).get("problem")
                        if result.is_error or problem:
                            raise RuntimeError(f"mcp_tool hook {event} failed: "
                                               f"{problem or result.content}")
            return times

        server_pre, server_post = asyncio.run(in_server())
        rows += [_row("command hook PreToolUse", mode, pre),
                 _row("command hook PostToolUse", mode, post),
                 _row("mcp_tool hook PreToolUse (in server)", mode, server_pre),
                 _row("mcp_tool hook PostToolUse (in server)", mode, server_post)]
        ask_owner_to_release(home)
    return rows


def _command_hook(client: str, event: str, payload: dict[str, Any], env: dict[str, str],
                  mode: str) -> float:
    """One command hook, a process as the client starts it; its wall time. After: the
    command `osiris install` writes (clients.launcher: python -S); before: `python -m
    osiris hook`, as OSIRIS ran its hooks until then."""
    argv = launch_argv(sys.executable, "hook", client, event) if mode == "after" \
        else [sys.executable, "-m", "osiris", "hook", client, event]
    began = time.perf_counter()
    done = subprocess.run(argv, input=json.dumps(payload), capture_output=True, text=True,
                          env=env, timeout=120, check=False)
    took = time.perf_counter() - began
    # A skip is the hook's own line on stderr (the command may say "skipped").
    if done.returncode != 0 or " skipped: " in done.stderr:
        raise RuntimeError(f"{client} hook {event} failed: {done.stdout} "
                           f"{done.stderr[-400:]}")
    return took


def codex_hook_round_trips(ctx: BenchContext, calls: list[CodexCall]) -> list[dict[str, Any]]:
    """Codex's command hooks as Codex 0.169.0 runs them (a process per call, the finished
    command's record already in the session's rollout when PostToolUse runs), both ways."""
    rows: list[dict[str, Any]] = []
    for mode in MODES:
        home = ctx.workdir / f"owner-codex-hooks-{mode}"
        env = _env(home, mode)
        rollouts = home.parent / f"codex-rollouts-{mode}"
        rollouts.mkdir(parents=True, exist_ok=True)
        _command_hook("codex", "pre-tool-use", calls[0].pre, env, mode)  # not timed
        pre, post = [], []
        for call in calls:
            pre.append(_command_hook("codex", "pre-tool-use", call.pre, env, mode))
            rollout = rollouts / call.rollout
            with rollout.open("a", encoding="utf-8") as fh:  # Codex writes it: not timed
                fh.write(call.record + "\n")
            post.append(_command_hook("codex", "post-tool-use",
                                      {**call.post, "transcript_path": str(rollout)}, env,
                                      mode))
        rows += [_row("Codex command hook PreToolUse", mode, pre),
                 _row("Codex command hook PostToolUse", mode, post)]
        ask_owner_to_release(home)
    return rows


@dataclass(frozen=True)
class CodexCall:
    """One shell call of a Codex trace as its hooks see it: the PreToolUse and
    PostToolUse inputs, and the line Codex appends to the session's rollout (file name
    ``rollout``) when the command ends."""

    pre: dict[str, Any]
    post: dict[str, Any]
    rollout: str
    record: str


def run_true(ctx: BenchContext, n: int) -> list[dict[str, Any]]:
    """``osiris run -- true`` against ``true`` itself (alternating, same environment)."""
    home = ctx.workdir / "owner-run"
    env = _env(home, "after")
    true = shutil.which("true") or "/bin/true"
    wrapped: list[float] = []
    bare: list[float] = []
    for _ in range(n):
        # As a hook wraps a command (clients.launcher), the output left to the command.
        for argv, into in ((launch_argv(sys.executable, "run", "--", "true"), wrapped),
                           ([true], bare)):
            began = time.perf_counter()
            subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
            into.append(time.perf_counter() - began)
    added = [w - b for w, b in zip(wrapped, bare, strict=True)]
    return [_row("true", "bare", bare), _row("osiris run -- true", "after", wrapped),
            _row("osiris run -- true, added", "after", added)]


def throughput(ctx: BenchContext, per_writer: dict[str, int]) -> list[dict[str, Any]]:
    """observe calls per second from 3 processes on one home, nothing lost."""
    rows = []
    for mode in MODES:
        home = ctx.workdir / f"owner-load-{mode}"
        env = {**process_environment(), **_env(home, mode)}
        count = per_writer[mode]
        # Warm: the task rows exist, the owner runs (after); not timed.
        warm = spawn_observer(home, "warm", 1, 200, env=env)
        warm.communicate(timeout=120)
        go = home.parent / f"{home.name}.go"
        names = [f"w{n}" for n in range(3)]
        for stale in (go, *(go.with_name(f"{go.name}.{n}.ready") for n in names)):
            stale.unlink(missing_ok=True)
        procs = [spawn_observer(home, name, count, 2000, env=env, go=go) for name in names]
        release_together(go, names)  # started, tasks made: not timed
        began = time.perf_counter()
        outs = [p.communicate(timeout=900) for p in procs]
        wall = time.perf_counter() - began
        lines = [json.loads(line) for out, _ in outs for line in out.splitlines() if line]
        acked = [line for line in lines if "ack" in line]
        latencies = [float(a["latency_s"]) for a in acked]
        ask_owner_to_release(home)
        missing = verify(home, acked).missing
        rows.append(_row("3 processes: observe 2 KB", mode, latencies,
                         per_s=len(acked) / wall, acknowledged=len(acked),
                         lost=3 * count - len(acked), missing=missing, wall_s=wall,
                         **sustained_rate([[float(line["at"]) for line in out.splitlines()
                                            for line in [json.loads(line)] if "ack" in line]
                                           for out, _ in outs])))
    return rows


def sustained_rate(acks_per_writer: list[list[float]]) -> dict[str, float]:
    """Acknowledgements per second while every writer was writing: from the latest of
    their first acknowledgements to the earliest of their last (a writer's process start
    and its tokenizer's load are outside it, as a long-running client's are), over
    that window's acknowledgements of all writers; and the rate over its first and last
    thirds, which shows whether it holds as the tasks grow."""
    if not acks_per_writer or any(len(acks) < 2 for acks in acks_per_writer):
        return {"sustained_per_s": 0.0, "first_third_per_s": 0.0, "last_third_per_s": 0.0,
                "sustained_window_s": 0.0}
    start = max(min(acks) for acks in acks_per_writer)
    end = min(max(acks) for acks in acks_per_writer)
    window = max(end - start, 1e-9)
    times = [t for acks in acks_per_writer for t in acks]

    def rate(lo: float, hi: float) -> float:
        return sum(1 for t in times if lo <= t <= hi) / max(hi - lo, 1e-9)

    third = window / 3
    return {"sustained_per_s": rate(start, end), "sustained_window_s": window,
            "first_third_per_s": rate(start, start + third),
            "last_third_per_s": rate(end - third, end)}


def kills(ctx: BenchContext, count: int) -> dict[str, Any]:
    """SIGKILL the owner ``count`` times under 3 writers; what was acknowledged survives."""
    home = ctx.workdir / "owner-kills"
    run = kill_owners(home, kills=count, writers=3, size=2000, timeout_s=900)
    verdict = verify(home, run.acknowledged)
    return {"kills": run.kills, "acknowledged": len(run.acknowledged), "lost": run.lost,
            "missing": verdict.missing, "chain_ok": verdict.chain_ok,
            "audit_lossless": verdict.audit_lossless,
            "recovery_median_s": median(run.recoveries_s),
            "recovery_p99_s": percentile(run.recoveries_s, 99),
            "recovery_max_s": max(run.recoveries_s, default=0.0),
            "recovered": len(run.recoveries_s), "stderr": len(run.errors)}


# -- the stage -----------------------------------------------------------------------

def stage_owner(ctx: BenchContext) -> StageResult:
    """Before and after the store owner, every goal of the milliseconds issue."""
    result = StageResult()
    from osiris.harness.importers.traces import real_text

    n = 10 if ctx.quick else 100
    host = host_calibration(10 if ctx.quick else 30)
    ctx.say(f"owner: engine operations in process, {n} rounds each way")
    engine_rows = engine_ops(ctx, n)
    ctx.say("owner: observe of 1 MB each way")
    large = observe_large(ctx, real_text(ctx.repo / "datasets" / "traces", 1 << 20),
                          5 if ctx.quick else 20)
    ctx.say(f"owner: {n} stdio calls each way, cold starts")
    stdio = stdio_calls(ctx, n)
    starts = cold_starts(ctx, 3 if ctx.quick else 10)
    ctx.say(f"owner: osiris run -- true, {n} times")
    runs = run_true(ctx, n)
    ctx.say("owner: 3 writer processes each way")
    load = throughput(ctx, {"before": 20 if ctx.quick else 60,
                            "after": 60 if ctx.quick else 600})
    count = 10 if ctx.quick else 100
    ctx.say(f"owner: {count} SIGKILLs under 3 writers")
    killed = kills(ctx, count)
    rows = host + engine_rows + large + stdio + starts + runs + load
    result.add_rows("owner_perf", [dict(r) for r in rows])
    result.add_rows("owner_kills", [killed])
    result.perf_sections.append(render(rows, killed, n))
    return result


def _host_loop() -> int:
    return sum(i * i for i in range(100_000))


def host_calibration(runs: int = 30) -> list[dict[str, Any]]:
    """How fast the host was in this run (its speed varies from day to day: the
    milliseconds goals are absolute, so two runs compare only beside these): a Python
    process start without ``site``, and :data:`HOST_LOOP`, medians of ``runs``."""
    starts, loops = [], []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run([sys.executable, "-S", "-c", "pass"], check=True)
        starts.append(time.perf_counter() - began)
        began = time.perf_counter()
        _host_loop()
        loops.append(time.perf_counter() - began)
    return [_row(HOST_START, "host", starts),
            _row(f"host: {HOST_LOOP}", "host", loops)]


__all__ = ["stage_owner"]
