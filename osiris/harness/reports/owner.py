"""The store owner's section of reports/PERF.md, rendered from the rows
:mod:`osiris.harness.bench.owner` measured (before and after, one run)."""

from __future__ import annotations

from typing import Any

from osiris.harness.stats import ms
from osiris.owner import FLUSH_AFTER_S

MODE_LABEL = {"before": "connection per call (OSIRIS_STORE_OWNER=off)",
              "after": "store owner"}

HOST_LOOP = "sum(i * i for i in range(100_000))"
"""A fixed pure-Python workload (:func:`_host_loop`): its time says how fast this run's
host ran."""


HOST_START = "host: python -S -c pass"


COLD_STARTS = (
    ("before", "before", "OSIRIS_STORE_OWNER=off, OSIRIS_EARLY_ANSWERS=off"),
    ("after", "after", "the owner runs (a client's hook started it) and the start cache "
     "holds the last start's answers"),
    ("after", "after, first start", "the owner runs, no start cache (a new home, a new "
     "OSIRIS, changed settings): answers built from OSIRIS's tool definitions"),
    ("after", "after, no owner yet", "a new home: no owner, no start cache, built answers"))


def _ratio_table(rows: list[dict[str, Any]]) -> list[str]:
    """One line per measure: before and after (p50, p99) and their ratio."""
    lines = ["| measure | n | before p50 ms | before p99 ms | after p50 ms | after p99 ms "
             "| before/after |", "|---|---|---|---|---|---|---|"]
    by = {(r["measure"], r["mode"]): r for r in rows}
    for measure in dict.fromkeys(r["measure"] for r in rows):
        old, new = by.get((measure, "before")), by.get((measure, "after"))
        if old is None or new is None:
            continue
        ratio = old["median_s"] / new["median_s"] if new["median_s"] else 0.0
        lines.append(f"| {measure} | {new['n']} | {ms(old['median_s'])} | "
                     f"{ms(old['p99_s'])} | {ms(new['median_s'])} | {ms(new['p99_s'])} | "
                     f"{ratio:.1f}x |")
    return lines


def _get(rows: list[dict[str, Any]], measure: str, mode: str) -> dict[str, Any]:
    for row in rows:
        if row["measure"] == measure and row["mode"] == mode:
            return row
    return {"median_s": 0.0, "p99_s": 0.0, "n": 0}


def render_hooks(rows: list[dict[str, Any]]) -> str:
    """The PERF.md section of the client hooks, before and after."""
    n = _get(rows, "command hook PreToolUse", "after")["n"]
    codex = _get(rows, "Codex command hook PreToolUse", "after")["n"]
    return "\n".join([
        "## Client hooks",
        "",
        f"Round trip of Claude Code hooks over the first {n} tool calls of the bundled "
        "Claude Code traces (one session per trace, each call prechecked then observed), "
        "in the traces' workspaces as a user's install runs them: the trace's paths mapped "
        "onto its unpacked workspace, that folder in `OSIRIS_ROOTS`, so a `Read` goes "
        "through the read routing (windows, re-reads, changed lines) and OSIRIS reads the "
        "file as in Claude Code, and each `tool_response` in the shape Claude Code gives "
        "that tool; timed at the caller. A command hook is a new process per call, as Claude Code "
        "runs it: before, `python -m osiris hook claude-code …` doing the work itself; "
        "after, the command `osiris install --hooks command` writes (`python -S -P "
        "…/osiris/launch.py hook claude-code …`: no `site`, and only `os`, `json` and "
        "the owner's client imported), which hands the call to the home's store owner. The "
        "mcp_tool rows are the hooks `osiris install claude-code` writes: a call of "
        "`osiris_hook` (the hook input's fields as Claude Code passes them) to a running "
        "stdio server, timed at the client; what Claude Code adds around it is in the "
        "real-client sessions of BENCHMARK.md."
        + (f" The Codex rows are Codex's command hooks (`hook codex`, both ways as above) "
           f"over the first {codex} shell calls of the bundled Codex traces, each call's "
           "record appended to its session's rollout before PostToolUse, as Codex writes "
           "it (the hook reads the whole output from there); what Codex adds around them "
           "is in BENCHMARK.md's real-client sessions (added ms per call)." if codex else ""),
        "",
        *_ratio_table(rows),
        ""])


def render(rows: list[dict[str, Any]], killed: dict[str, Any], n: int) -> str:
    """The PERF.md section: before and after, and the fault run."""
    engine = [r for r in rows if not r["measure"].startswith(("stdio", "command", "mcp_tool",
                                                              "observe 1", "3 processes",
                                                              "true", "osiris run"))]
    stdio = [r for r in rows if r["measure"].startswith("stdio ") and "cold" not in
             r["measure"]]
    large = [r for r in rows if r["measure"].startswith("observe 1")]
    load = {r["mode"]: r for r in rows if r["measure"].startswith("3 processes")}
    cold = {r["mode"]: r for r in rows if r["measure"] == "stdio cold start to tools/list"}
    first_call = {r["mode"]: r for r in rows
                  if r["measure"] == "stdio cold start to a first tool call"}
    added = _get(rows, "osiris run -- true, added", "after")
    true = _get(rows, "true", "bare")
    flush = _get(rows, "write-behind flush, per round of 10 calls", "after")
    lines = [
        "## The store owner: before and after, in this run",
        "",
        "Before: `OSIRIS_STORE_OWNER=off`, every call opens the database, locks the home, "
        "commits and closes (what OSIRIS did until now). After: the home's store owner "
        "(`osiris/owner.py`) holds the database open and serves every process of the home "
        "over its socket, and answers the statements of a hooked tool call from memory "
        "(write-behind, `osiris/store/write_behind.py`): a call is acknowledged once its "
        "writes are in the owner's fsync'd log, and the rows reach DuckDB in batches once "
        f"they have waited {FLUSH_AFTER_S * 1000:.0f} ms (or a read needs them). Both "
        "measured here, one after the other.",
        "",
        f"The host in this run: a Python process start (`python -S -c pass`, from "
        f"`subprocess.run`) took a median {ms(_get(rows, HOST_START, 'host')['median_s'])} "
        f"ms and `{HOST_LOOP}` {ms(_get(rows, f'host: {HOST_LOOP}', 'host')['median_s'])} "
        "ms. "
        "The goals below are absolute milliseconds; this sandbox's speed has varied 2.5x "
        "between runs, so compare runs beside these two figures, and before with after "
        "within a run.",
        "",
        f"### Engine operations, in process ({n} rounds)",
        "",
        "After = the owner's own configuration (one connection held open, write-behind); "
        "the store-held row is how long the call held the store. Operations outside the "
        "hooked path (plan start, status, checkpoint, recall's lookups) still run on DuckDB "
        "and first flush what is deferred. The flush row is the DuckDB work the owner's "
        "flusher does beside the calls, per round of ten operations: it takes the rows "
        "inside the store, then writes them on a connection of its own while calls go on, "
        "so it is not on a call's path (a call that needs DuckDB waits for it).",
        "",
        *_ratio_table(engine),
        "",
        f"The owner's flush of what these calls deferred took a median "
        f"{ms(flush['median_s'])} ms (p99 {ms(flush['p99_s'])} ms) per round of ten "
        "operations: DuckDB work done beside the calls, not on their path, but it is CPU "
        "the owner spends, and it bounds the rate in the many-process table below.",
        "",
        "### Over a live stdio MCP connection (timed at the client)",
        "",
        *_ratio_table(stdio),
        "",
        "### Large payloads",
        "",
        "Scrubbing, hashing, the blob write, counting and the preview now run before the "
        "transaction; store held = from taking the lock (or the owner's turn) to letting go.",
        "",
        *_ratio_table(large),
        "",
        f"`osiris run -- true` adds a median {ms(added['median_s'])} ms (p99 "
        f"{ms(added['p99_s'])} ms) to `true` itself ({ms(true['median_s'])} ms), over "
        f"{added['n']} alternating runs, started as a hook's rewrite starts it (`python -S "
        "-P …/osiris/launch.py run -- true`, which runs `bash -c true`): a small output "
        "never reaches the store.",
        "",
        "### Many processes, one home",
        "",
        "Three writer processes, each with one task, observe 2 KB results as fast as "
        "their owner answers. *Sustained* counts the acknowledgements while all three "
        "were writing (from the latest first to the earliest last acknowledgement), "
        "overall and in its first and last thirds; *whole run* divides every "
        "acknowledgement by the time from starting the three processes to their end, "
        "their Python and tokenizer start-up included.",
        "",
        "| mode | writers | acknowledged | lost | missing after | sustained per s | "
        "first third | last third | whole run per s | p50 ms | p99 ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *[f"| {MODE_LABEL[m]} | 3 | {r['acknowledged']} | {r['lost']} | {r['missing']} | "
          f"{r['sustained_per_s']:.1f} | {r['first_third_per_s']:.1f} | "
          f"{r['last_third_per_s']:.1f} | {r['per_s']:.1f} | {ms(r['median_s'])} | "
          f"{ms(r['p99_s'])} |"
          for m, r in load.items()],
        "",
        f"SIGKILL of the owner at random moments, {killed['kills']} times, under 3 writing "
        f"processes: {killed['acknowledged']} calls acknowledged, every one of them in the "
        f"database afterwards ({killed['missing']} missing), journal chain verified: "
        f"{killed['chain_ok']}, `osiris audit` lossless for every task: "
        f"{killed['audit_lossless']}; {killed['lost']} calls in flight got an error (never "
        f"a false success). Writers went on without any step of theirs after "
        f"{killed['recovered']} of the kills: from the kill to the next acknowledged call, "
        f"median {ms(killed['recovery_median_s'])} ms, p99 {ms(killed['recovery_p99_s'])} "
        f"ms, max {ms(killed['recovery_max_s'])} ms (a new owner's start).",
        "",
        "### Cold start",
        "",
        "A stdio server started by a real MCP client (the SDK's, 2025-11-25 handshake), "
        "timed at the client from the process start. After, it answers the handshake and "
        "the first tools/list while the MCP SDK loads, from its last start's answers or, "
        "without them, from answers built from its tool definitions (for the MCP SDK "
        "release a test compares them with; `osiris/server/early.py`); a tool call waits "
        "for the SDK, so the last columns "
        "are the time to the answer of a first tool call.",
        "",
        "| stdio server | n | tools/list p50 ms | p99 ms | first tool call p50 ms | p99 ms |",
        "|---|---|---|---|---|---|",
        *[f"| {mode}: {next(c[2] for c in COLD_STARTS if c[1] == mode)} | {r['n']} | "
          f"{ms(r['median_s'])} | {ms(r['p99_s'])} | "
          f"{ms(first_call.get(mode, r)['median_s'])} | {ms(first_call.get(mode, r)['p99_s'])} |"
          for mode, r in cold.items()],
        "",
    ]
    return "\n".join(lines)
