"""The measured figures of the README and of ``docs/``, generated from ``reports/`` (cog's
habit).

The README and the pages of ``docs/`` quote the benchmark: token figures, identical from
run to run, and timings, different on every run. So that they can never disagree with
the reports, they quote them only inside marked blocks::

    <!-- bench:NAME -->
    ...
    <!-- /bench:NAME -->

whose text :func:`render` produces from the files under ``reports/`` (the Parquet rows
and ``FOOTPRINT.json``). Each block stands in exactly one page (:func:`pages`: README.md
and ``docs/*.md``); its links are written from the repository's root and rebased for the
page that holds it (:func:`rebased`). A benchmark run that writes the repository's own
``reports/`` rewrites the blocks of every page (:func:`write_readme`), and
``tests/test_readme.py`` checks that the committed pages' blocks are what the committed
reports render. Text outside the blocks carries no measurement.
"""

from __future__ import annotations

import json
import re
import statistics
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from osiris.harness.reports.bill import COST_OF_CLIENT, saved
from osiris.harness.reports.report import (
    CLIENT_COST_MODEL,
    CLIENT_ORDER,
    SEED,
    _n,
    _pct,
    _pool,
    select_rows,
    session_median,
)
from osiris.harness.stats import ms

BLOCK = re.compile(r"<!-- bench:(?P<name>[a-z-]+) -->\n(?P<body>.*?)<!-- /bench:(?P=name) -->",
                   re.DOTALL)
CLIENT_TITLES = {"claude-code": "Claude Code", "codex": "Codex"}
AGENTS = {"claude-code": "Claude Code", "codex-cli": "Codex CLI",
          "mini-swe-agent": "mini-swe-agent", "swe-agent": "SWE-agent"}
LABELS = {"raw": "raw (every output kept)",
          "client-native": "client-native (Claude Code spill + context editing)",
          "osiris-adaptive": "OSIRIS adaptive", "oracle": "oracle (only the needed strings)"}
WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
PERF_LINK = "[`reports/PERF.md`](reports/PERF.md)"
LINK = re.compile(r"\]\((?![a-z][a-z+.-]*:|#|/)([^)\s]+)\)")
"""A markdown link to a path in the repository (no scheme, anchor or absolute path)."""
THE_SEED = ("the seed, the design documents OSIRIS was first specified in (they are not "
            "in this repository)")
"""What "the seed" is, said wherever a block compares with it."""
NO_CLIENTS = "The real-client stage (`osiris bench clients`) has not run into these reports.\n"


class Reports:
    """The files of one ``reports/`` directory, read on demand."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._tables: dict[str, list[dict[str, Any]]] = {}

    def rows(self, table: str) -> list[dict[str, Any]]:
        """The rows of ``data/<table>.parquet`` ([] when that stage never ran)."""
        if table not in self._tables:
            path = self.root / "data" / f"{table}.parquet"
            if path.exists():
                import polars as pl

                self._tables[table] = pl.read_parquet(path).to_dicts()
            else:
                self._tables[table] = []
        return self._tables[table]

    def footprint(self) -> dict[str, Any] | None:
        """``FOOTPRINT.json`` (None when the MCP stage never ran)."""
        path = self.root / "FOOTPRINT.json"
        return dict(json.loads(path.read_text("utf-8"))) if path.exists() else None

    def measure(self, table: str, prefix: str) -> dict[str, Any] | None:
        """The first row of ``table`` whose ``measure`` starts with ``prefix``."""
        return next((r for r in self.rows(table) if str(r["measure"]).startswith(prefix)),
                    None)


def _word(k: int) -> str:
    return WORDS[k] if 0 <= k < len(WORDS) else f"{k:,}"


def _listing(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return f"{', '.join(items[:-1])} and {items[-1]}" if len(items) > 1 else "".join(items)


def _fixed_cost(rows: list[dict[str, Any]], system: str) -> int | None:
    """What ``system`` re-sends with every prompt, as the sweep measured it."""
    return next((int(r["fixed_overhead_tokens"]) for r in rows
                 if r["workload"] == "sweep" and r["system"] == system), None)


def _peer_labels(reports: Reports) -> dict[str, str]:
    """``headroom-ai 0.42.0 (peer)`` from the peer's status row (package and version)."""
    labels = {}
    for peer in reports.rows("peers"):
        found = re.match(r"(?:PyPI|npm) `([^`]+)`", str(peer["interface"] or ""))
        package = found.group(1) if found else peer["peer"]
        kind = ", MCP server" if "MCP server" in str(peer["interface"]) else ""
        labels[peer["peer"]] = f"{package} {peer['version'] or ''} (peer{kind})".replace(
            "  ", " ")
    return labels


def block_traces(reports: Reports) -> str:
    """The real agent sessions inside their clients: one row per client and source (the
    tielec traces, the public corpus), OSIRIS against the bare client, with the best peer,
    under visible retrieval, every comparison in words; then what it means."""
    rows = reports.rows("results")
    sources = [("tielec", select_rows(rows, "traces")), ("corpus", select_rows(rows, "corpus"))]
    if not any(part for _, part in sources):
        return "The committed reports hold no replay of real agent sessions.\n"
    peers = _peer_labels(reports)
    lines = ["Real agent sessions replayed inside the client that produced them, as that "
             "client really behaves (its measured prompt head, its cuts of large outputs, its "
             "compaction) and with only the routing OSIRIS really has there; every need a "
             "later call used had to come back through what the agent could see "
             "(`visible` retrieval, each call charged). *tielec* is one team's automated "
             "agent (`datasets/traces/`), *corpus* public interactive sessions from other "
             "projects (`datasets/corpus/`):", "",
             "| client | source | sessions | bare client: tokens re-sent | OSIRIS | "
             "vs bare client | median session | billed cost vs bare | needs kept | "
             "best peer |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    notes = []
    for client in CLIENT_ORDER:
        for source, chosen in sources:
            part = [r for r in chosen if r.get("client") == client]
            totals = _pool(part)
            base, ours = totals.get("client-native"), totals.get("osiris-adaptive")
            if not (base and ours):
                continue
            model = CLIENT_COST_MODEL[client]
            gain = 1 - ours["cumulative"] / base["cumulative"]
            cost = 1 - ours[model] / base[model] if base[model] else None
            ranked = sorted((s for s in totals if s in peers),
                            key=lambda s: totals[s]["cumulative"])
            best = "—"
            if ranked:
                leader = totals[ranked[0]]["cumulative"]
                best = f"{peers[ranked[0]]}: {saved(1 - leader / base['cumulative'])}"
            sessions = len({r["session"] for r in part})
            lines.append(f"| {client} | {source} | {sessions} | {_n(base['cumulative'])} | "
                         f"{_n(ours['cumulative'])} | **{saved(gain)}** | "
                         f"{saved(session_median(part, 'osiris-adaptive'))} | "
                         f"{saved(cost)} ({model}) | "
                         f"{int(ours['found'])}/{int(ours['needs'])} | {best} |")
            if gain < 0:
                notes.append(f"inside {client} ({source}) OSIRIS re-sends {saved(gain)} "
                             "than the bare client")
    exact = select_rows(rows, "traces", retrieval="exact")
    upper = []
    for client in CLIENT_ORDER:
        totals = _pool([r for r in exact if r.get("client") == client])
        base, ours = totals.get("client-native"), totals.get("osiris-adaptive")
        if base and ours:
            upper.append(f"{client} {saved(1 - ours['cumulative'] / base['cumulative'])}")
    text = []
    if notes:
        text.append("Where OSIRIS loses: " + "; ".join(notes)
                    + " (the replay models its shell routing only — read windows and "
                    "re-read pointers need the files, which the real-client table above "
                    "measures — and its tool listing and instructions ride along in every "
                    "prompt).")
    if upper:
        text.append("On the tielec sessions, an agent that searched for the exact string it "
                    "needs (an upper bound no agent reaches) would give " + ", ".join(upper)
                    + ".")
    if text:
        lines += ["", " ".join(text)]
    return "\n".join(lines) + "\n"


def block_peers(reports: Reports) -> str:
    """Each system's fixed cost, and the peers that could not be measured."""
    rows = reports.rows("results")
    fixed: dict[str, int] = {}
    for row in rows:
        if row["workload"] == "sweep" and row["fixed_overhead_tokens"]:
            fixed.setdefault(row["system"], int(row["fixed_overhead_tokens"]))
    if not fixed:
        return "The committed reports hold no fixed-cost figures.\n"
    ours = fixed.pop("osiris-adaptive", None)
    fixed.pop("osiris-fixed", None)
    parts = ([f"OSIRIS {ours:,}"] if ours is not None else []) + [
        f"{s} {v:,}" for s, v in sorted(fixed.items(), key=lambda kv: -kv[1])]
    text = ("Fixed cost re-sent with every prompt (tool definitions and instructions, cl100k "
            "tokens): " + ", ".join(parts) + ".")
    missing = [p["peer"] for p in reports.rows("peers") if p["status"] != "measured"]
    if missing:
        text += (f" Not measured in this run: {', '.join(missing)} (the error is in "
                 "`reports/BENCHMARK.md`).")
    return text + "\n"


def block_sweep(reports: Reports) -> str:
    """The seed's payload sweep against the seed's own figures (:data:`THE_SEED` says what the
    seed is)."""
    sweep = {(r["size"], r["system"]): r for r in reports.rows("results")
             if r["workload"] == "sweep"}
    sizes = [s for s in SEED if (s, "osiris-adaptive") in sweep]
    if not sizes:
        return "The committed reports hold no payload sweep.\n"
    ours = []
    for size in sizes:
        row = sweep[(size, "osiris-adaptive")]
        figure = f"**{_pct(row['net_gain_final_excluding_fixed'])}** at {size:,}"
        modes = json.loads(row["modes"]) if row.get("modes") else {}
        if set(modes) == {"bystander"}:
            figure += " (every payload left inline)"
        ours.append(figure)
    ours[0] = ours[0].replace(f"at {sizes[0]:,}", f"at {sizes[0]:,} tokens", 1)
    seed = [f"{SEED[s][3]:+.2f}%" for s in sizes]
    per_session = sweep[(sizes[0], "osiris-adaptive")]["steps"]
    return (f"The payload sweep of {THE_SEED}: {_word(per_session)} payloads per session, fixed "
            "cost amortised as the seed reports it. Net gain on the final context "
            f"{_listing(ours)}, against the seed's {_listing(seed)}.\n")


def _duration(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if minutes else f"{rest} s"


def block_duration(reports: Reports) -> str:
    """How long the run that wrote the reports took, stage by stage; after a run of some
    stages, the last full run's durations first and the stages re-run since."""
    stages = reports.rows("bench_stages")
    if not stages:
        return ("The committed reports do not record how long the benchmark took yet (every "
                "run now records it, per stage, in `reports/data/bench_stages.parquet`).\n")
    latest = stages[0]
    mine = [r for r in stages if r["run_id"] == latest["run_id"]]
    full = [r for r in stages if r["run_id"] != latest["run_id"]]
    if full:
        return (_durations_of("A full run", full) + f"; run `{latest['run_id']}` re-ran "
                f"{_stage_list(mine)} since ({'quick, ' if latest['quick'] else ''}"
                f"{latest['date_utc']}; "
                + ", ".join(f"{r['stage']} {_duration(float(r['seconds']))}" for r in mine)
                + ").\n")
    which = "A full run" if latest["all_stages"] and not latest["quick"] else \
        f"The last run ({'quick, ' if latest['quick'] else ''}{_stage_list(mine)})"
    return _durations_of(which, mine) + ".\n"


def _stage_list(rows: list[dict[str, Any]]) -> str:
    return ("stage " if len(rows) == 1 else "stages ") + ", ".join(r["stage"] for r in rows)


def _durations_of(which: str, rows: list[dict[str, Any]]) -> str:
    first = rows[0]
    total = sum(float(r["seconds"]) for r in rows)
    return (f"{which} took {_duration(total)} on {first['machine']} ({first['date_utc']}; "
            + ", ".join(f"{r['stage']} {_duration(float(r['seconds']))}" for r in rows)
            + "), installs not included")


def block_footprint(reports: Reports) -> str:
    """What OSIRIS's tool definitions and built-in instructions cost a client."""
    fp = reports.footprint()
    if fp is None:
        return "**Footprint.** Not measured in the committed reports.\n"
    return (f"**Footprint.** The {_word(len(fp['tools']))} tools' model-facing definitions "
            "(name, description, input schema, as compact JSON) cost "
            f"**{fp['total_tokens']:,} cl100k tokens** (`osiris footprint`; "
            f"{fp['pretty_json_total_tokens']:,} if a client pretty-prints them; "
            f"{fp['dispatch_only_tokens']:,} in dispatch-only mode), against "
            f"{fp['seed_tokens']:,} for the tools of {THE_SEED}. A test keeps them at or "
            f"under {fp['budget_tokens']:,}. The "
            f"built-in doctrine of the server's instructions adds {fp['instructions_tokens']:,} "
            f"tokens ({fp['instructions_chars']:,} characters).\n")


def _row_of(reports: Reports, table: str, measure: str, mode: str) -> dict[str, Any] | None:
    return next((r for r in reports.rows(table) if r.get("measure") == measure
                 and r.get("mode") == mode), None)


def block_hooks(reports: Reports) -> str:
    """The client hooks' round trip, before and after the store owner."""
    names = ("command hook PreToolUse", "command hook PostToolUse",
             "mcp_tool hook PreToolUse (in server)", "mcp_tool hook PostToolUse (in server)")
    found = [_row_of(reports, "hook_perf", m, mode) for m in names
             for mode in ("before", "after")]
    rows = [r for r in found if r is not None]
    if len(rows) != len(found):
        return "The hooks' round trip is not measured in the committed reports.\n"
    pre_old, pre, post_old, post, srv_pre_old, srv_pre, srv_post_old, srv_post = rows
    return (f"Measured over the first {pre['n']} calls of the bundled Claude Code traces, in "
            f"their workspaces with `OSIRIS_ROOTS` set as `osiris install` sets it "
            f"({PERF_LINK}): the `mcp_tool` hooks, a call to the running server, take a "
            f"median of {ms(srv_pre['median_s'])} ms for PreToolUse and "
            f"{ms(srv_post['median_s'])} ms for PostToolUse (p99 {ms(srv_pre['p99_s'])} "
            f"and {ms(srv_post['p99_s'])} ms; {ms(srv_pre_old['median_s'])} and "
            f"{ms(srv_post_old['median_s'])} ms without the store owner). A command hook, "
            f"a new process per call, takes {ms(pre['median_s'])} and "
            f"{ms(post['median_s'])} ms (p99 {ms(pre['p99_s'])} and {ms(post['p99_s'])} "
            f"ms) through the store owner, against {ms(pre_old['median_s'])} and "
            f"{ms(post_old['median_s'])} ms when each hook opens the database itself."
            + _codex_hooks(reports) + "\n")


def _codex_hooks(reports: Reports) -> str:
    """Codex's command hooks, before and after, as a sentence (empty: not measured)."""
    rows = [_row_of(reports, "hook_perf", f"Codex command hook {event}", mode)
            for event in ("PreToolUse", "PostToolUse") for mode in ("before", "after")]
    if any(r is None for r in rows):
        return ""
    pre_old, pre, post_old, post = cast(list[dict[str, Any]], rows)
    return (f" Codex's command hooks, over the first {pre['n']} shell calls of the bundled "
            f"Codex traces: {ms(pre['median_s'])} ms for PreToolUse and "
            f"{ms(post['median_s'])} ms for PostToolUse (p99 {ms(pre['p99_s'])} and "
            f"{ms(post['p99_s'])} ms), against {ms(pre_old['median_s'])} and "
            f"{ms(post_old['median_s'])} ms without the store owner.")


def block_owner(reports: Reports) -> str:
    """The store owner's goals: before, after, and whether each was met."""
    def get(measure: str, mode: str = "after") -> dict[str, Any] | None:
        return _row_of(reports, "owner_perf", measure, mode) or \
            _row_of(reports, "hook_perf", measure, mode)

    kills = reports.rows("owner_kills")
    load_old, load_new = get("3 processes: observe 2 KB", "before"), \
        get("3 processes: observe 2 KB")
    if not kills or not load_old or not load_new:
        return "The store owner is not measured in the committed reports.\n"
    killed = kills[0]
    ops = [r for r in reports.rows("owner_perf") if r["mode"] == "after" and
           not str(r["measure"]).startswith(("stdio", "observe 1", "3 processes", "true",
                                             "osiris run", "write-behind flush")) and
           "held" not in str(r["measure"])]
    slowest = max(ops, key=lambda r: r["median_s"])
    fastest = min(ops, key=lambda r: r["median_s"])
    lines = ["| goal | target | before | after | met |", "|---|---|---|---|---|"]

    def line(goal: str, target: float, old: float | None, new: float, unit: str = "ms",
             higher: bool = False, kept: bool = True) -> None:
        ok = kept and (new >= target if higher else new <= target)

        def fmt(v: float) -> str:
            return f"{v:.0f}/s" if unit == "/s" else f"{ms(v)} ms"

        shown_target = fmt(target)
        lines.append(f"| {goal} | {'≥' if higher else '≤'} {shown_target} | "
                     f"{fmt(old) if old is not None else '—'} | {fmt(new)} | "
                     f"{'yes' if ok else 'no'} |")

    def pair(measure: str) -> tuple[float | None, float]:
        old, new = get(measure, "before"), get(measure)
        return (old["median_s"] if old else None), (new["median_s"] if new else 0.0)

    for measure, goal in (("precheck", "precheck, in process (p50)"),
                          ("observe.result 4k", "observe 4 KB, in process (p50)")):
        line(goal, 0.003, *pair(measure))
    line(f"slowest operation, in process: {slowest['measure']} (p50)", 0.003,
         pair(str(slowest["measure"]))[0], slowest["median_s"])
    for measure, goal in (("stdio precheck", "precheck over stdio (p50)"),
                          ("stdio observe.result 4k", "observe 4 KB over stdio (p50)")):
        line(goal, 0.006, *pair(measure))
    large = next((r for r in reports.rows("owner_perf") if r["mode"] == "after" and
                  str(r["measure"]).startswith("observe 1") and "held" not in
                  str(r["measure"])), None)
    held = next((r for r in reports.rows("owner_perf") if r["mode"] == "after" and
                 str(r["measure"]).startswith("observe 1") and "held" in
                 str(r["measure"])), None)
    if large and held:
        line(f"{large['measure']}", 0.060, pair(str(large["measure"]))[0], large["median_s"])
        line(f"{held['measure']}", 0.005, pair(str(held["measure"]))[0], held["median_s"])
    line("observes per second, 3 processes, sustained, nothing lost", 300,
         load_old["sustained_per_s"], load_new["sustained_per_s"], "/s", higher=True,
         kept=not load_new["lost"] and not load_new["missing"])
    for measure, goal in (("command hook PreToolUse", "command hook PreToolUse (p50)"),
                          ("command hook PostToolUse", "command hook PostToolUse (p50)")):
        line(goal, 0.030, *pair(measure))
    for measure, goal in (("mcp_tool hook PreToolUse (in server)",
                           "mcp_tool hook PreToolUse (p50)"),
                          ("mcp_tool hook PostToolUse (in server)",
                           "mcp_tool hook PostToolUse (p50)")):
        line(goal, 0.010, *pair(measure))
    # What a user sees: the real Claude Code's time per tool call over the bare client's
    # (its hooks, and osiris run for wrapped commands), the median of the sessions.
    real = [float(r["added_ms_per_call"]) / 1000 for r in reports.rows("clients_sessions")
            if r.get("client") == "claude-code" and r.get("configuration") == "osiris"
            and r.get("added_ms_per_call") is not None]
    if real:
        line("added to a real Claude Code tool call, median of sessions", 0.010, None,
             statistics.median(real))
    added = get("osiris run -- true, added")
    if added:
        line("`osiris run -- true` over `true` (p50)", 0.040, None, added["median_s"])
    cold_old = _row_of(reports, "owner_perf", "stdio cold start to tools/list", "before")
    cold_new = _row_of(reports, "owner_perf", "stdio cold start to tools/list", "after")
    if cold_old and cold_new:
        line("stdio cold start to tools/list, from the start cache (p50)", 0.500,
             cold_old["median_s"], cold_new["median_s"])
    cold_first = _row_of(reports, "owner_perf", "stdio cold start to tools/list",
                         "after, first start")
    if cold_old and cold_first:  # the same goal, where no earlier start left its answers
        line("stdio cold start to tools/list, first start (p50)", 0.500,
             cold_old["median_s"], cold_first["median_s"])
    met = sum(1 for row in lines[2:] if row.endswith("| yes |"))
    return ("\n".join(lines) + "\n\n" +
            f"{met} of {len(lines) - 2} goals met ({PERF_LINK}, medians; the fastest "
            f"operation in process is {fastest['measure']} at {ms(fastest['median_s'])} ms). "
            f"SIGKILL of the owner {killed['kills']} times under 3 writing processes: "
            f"{killed['acknowledged']} calls acknowledged, {killed['missing']} of them "
            f"missing afterwards, journal chain verified: {killed['chain_ok']}, audit "
            f"lossless: {killed['audit_lossless']}; writers went on by themselves, a median "
            f"{ms(killed['recovery_median_s'])} ms after a kill (max "
            f"{ms(killed['recovery_max_s'])} ms).\n")


def block_dashboard(reports: Reports) -> str:
    """The dashboard on a large home, and what it costs a writer beside it."""
    rows = reports.rows("dashboard_perf")
    # Whole pages only: the live fragment is a part of the overview, timed apart.
    pages = [r for r in rows if str(r["measure"]).startswith("page ")
             and "fragment" not in str(r["measure"])]
    journal = reports.measure("dashboard_perf", "journal pages")
    audit = reports.measure("dashboard_perf", "audit of one task")
    alone = reports.measure("dashboard_perf", "writer observe, alone")
    beside = reports.measure("dashboard_perf", "writer observe, dashboard polled")
    if not (pages and journal and audit and alone and beside):
        return "The dashboard is not measured in the committed reports.\n"
    fastest = min(pages, key=lambda r: float(r["median_s"]))
    slowest = max(pages, key=lambda r: float(r["median_s"]))
    cached = statistics.median(float(r["cached_median_s"]) for r in pages
                               if r.get("cached_median_s"))
    first = rows[0]
    details = [PERF_LINK]
    if first.get("ledger_rows") and first.get("db_bytes"):  # recorded since issue 16
        details.insert(0, f"{first['ledger_rows']:,} ledger rows, a "
                          f"{first['db_bytes'] / 1e6:,.0f} MB DuckDB file")
    # Every write of the writer beside the dashboard completed: it was slowed, not starved.
    starved = ": readers never starve a writer" if beside["n"] == alone["n"] else ""
    return (f"Measured on a home of {first['tasks']:,} tasks and {first['events']:,} journal "
            f"events ({'; '.join(details)}): pages computed from the database "
            f"take a median of {ms(fastest['median_s'])} ms ({fastest['measure'][5:]}) to "
            f"{ms(slowest['median_s'])} ms ({slowest['measure'][5:]}), a journal page "
            f"{ms(journal['median_s'])} ms however deep (keyset), and a repeat until the next "
            f"write {ms(cached)} ms (the median over the pages: they are cached by the journal "
            f"head). A separate process's `observe` took a median of {ms(alone['median_s'])} ms "
            f"alone and {ms(beside['median_s'])} ms while two clients polled the live page "
            f"back to back (p99 {ms(alone['p99_s'])} and {ms(beside['p99_s'])} ms){starved}. "
            f"Re-verifying one task's audit, whole journal chain included, took "
            f"{ms(audit['median_s'])} ms.\n")


def _versions() -> str:
    """``claude-code 2.1.328, codex 0.169.0``: the real clients the sessions ran in."""
    from osiris.harness.real_clients.run import VERSIONS

    return ", ".join(f"{c} {v}" for c, v in VERSIONS.items())


def block_summary(reports: Reports) -> str:
    """What a user pays, first: the clients block's rows, pooled per client and source,
    OSIRIS and context-mode against the bare client, in words."""
    from osiris.harness.real_clients.configs import CONTEXT_MODE, OSIRIS
    from osiris.harness.reports.bill import summary_table

    table = summary_table(reports.rows("clients_sessions"), (OSIRIS, CONTEXT_MODE))
    if not table:
        return NO_CLIENTS
    models = _listing([f"{c} under {m}" for c, m in COST_OF_CLIENT.items()])
    return "\n".join([
        f"Real sessions played again inside the real clients ({_versions()}), offline "
        "against a scripted model; each configuration installed as its own documentation "
        f"says; billed as each client's provider bills ({models}, prompt cache included) "
        "and pooled over the sessions of each source:", "", *table, "",
        "*N% saved*: that configuration's bill for the same sessions came to N% less than "
        "the bare client's; *N% more*: N% more. *osiris* is OSIRIS as `osiris install` sets "
        "it up; *context-mode* a peer tool. *Needs kept*: of the facts a later call used, "
        "those the agent still had or got back; *extra calls*: the calls it made to get them "
        "back. *tielec-ai-workflow-agent* is one team's automated agent "
        "(`datasets/traces/`), *corpus* public interactive sessions from other projects "
        "(`datasets/corpus/`). OSIRIS's routing was tuned on the tielec sessions and on "
        "the *tuning half* of each client's corpus; the *unseen half* is what to expect "
        f"on sessions it was not tuned on.{_unhooked(reports)}{_ceiling(reports)}"]) + "\n"


def _unhooked(reports: Reports) -> str:
    """The share of the Codex sessions' re-sent tool output no hook can reach, said
    where the savings are (a sentence; "" before it was counted)."""
    codex = [r for r in reports.rows("reach") if r["client"] == "codex"]
    total = sum(r["tool_result_tokens_resent"] for r in codex)
    unhooked = sum(r["resent_no_hook"] for r in codex)
    if not total or not unhooked:
        return ""
    worst = max(codex, key=lambda r: r["resent_no_hook"] / r["tool_result_tokens_resent"])
    return (" Codex runs no hook for the output of a command still running, read later "
            "with `write_stdin`: in the recorded Codex sessions it is "
            f"{unhooked / total:.0%} of the tool output re-sent "
            f"({worst['resent_no_hook'] / worst['tool_result_tokens_resent']:.0%} in "
            f"{worst['session']}), which the sessions played here leave out; on a session "
            "like that a user saves a smaller share "
            "([docs/benchmark.md](docs/benchmark.md), what a hook can reach).")


def _ceiling(reports: Reports) -> str:
    """The most any routing of outputs could have saved of the recorded sessions' own
    bills, each client pooled (a sentence; "" before it was counted)."""
    from osiris.engine.routing import PREVIEW_FRAME_TOKENS
    from osiris.harness.reports.bounds import pooled as pooled_bounds
    from osiris.harness.reports.reach import pooled

    parts, moved = [], []
    for client in CLIENT_ORDER:
        billed = [r for r in reports.rows("reach") if r["client"] == client
                  and r.get("recorded_billed_cost")]
        if billed:
            title = CLIENT_TITLES.get(client, client)
            parts.append(f"{pooled(billed)['ceiling']:.1%} of what the {len(billed)} "
                         f"recorded {title} sessions with usage per request were billed")
            shares = pooled_bounds(billed)
            if shares:
                moved.append(f"in {title} {shares['clairvoyant']:.1%} for that hook, "
                             f"{shares['knows_outputs']:.1%} for one that knew whether and "
                             "when the agent would use each output but not which lines, "
                             f"{shares['no_foresight']:.1%} for one routing every output "
                             "without knowing")
    if not parts:
        return ""
    return (" A hook that knew in advance every line the agent would quote later, showed "
            f"only those in a {PREVIEW_FRAME_TOKENS}-token frame as OSIRIS's previews have, "
            "and never had to recall, would have saved at most " + " and ".join(parts)
            + ": the ceiling for replacing outputs as OSIRIS does, on sessions as their "
            "authors ran them (per session in [docs/benchmark.md](docs/benchmark.md), what "
            "a hook can reach)." + (
                " That ceiling keeps each compaction where it was made; a client compacts "
                "later when less is kept, and until it does carries the whole history. "
                "Modelled with the client's own compaction, the savings pooled are "
                + "; ".join(moved) + " ([reports/BENCHMARK.md]"
                "(reports/BENCHMARK.md), what a hook could save, by what it knows of the "
                "future)." if moved else ""))


def block_clients(reports: Reports) -> str:
    """The real Claude Code and Codex running the traces, per configuration."""
    from osiris.harness.real_clients.configs import SESSION_CONFIGURATIONS
    from osiris.harness.reports.bill import bill_tables

    rows = reports.rows("clients_sessions")
    table = bill_tables(rows, SESSION_CONFIGURATIONS)
    if not table:
        return NO_CLIENTS
    lines = [f"Real sessions run again inside the real clients ({_versions()}), offline "
             "against a scripted model that issues each session's calls in its workspace "
             "and retrieves what the prompt lost by what it can see (with the client's own "
             "tools, or `osiris_recall` where the client lists it; the needs of one output "
             "due at the same call in one search); every figure is counted from the "
             "requests the client sent, and billed as the provider "
             "bills them (cache writes and reads, compaction requests included). "
             "*Saved*: OSIRIS or a peer costs or sends less than the bare client; "
             "*more*: it costs or sends more. *osiris* has every routing feature on "
             "(the default), *osiris-observe* none (its hooks only watch), *osiris-read* "
             "and *osiris-shell* one each; *context-mode* is a peer tool, installed as its "
             "README says:", "", *table]
    lines += _clients_findings(rows, reports.rows("clients_turns"))
    return "\n".join(lines) + "\n"


def block_mini(reports: Reports) -> str:
    """mini-swe-agent bare and with OSIRIS, pooled (the loop that owns its history)."""
    from osiris.harness.real_clients import mini

    rows = [r for r in reports.rows("mini_sessions") if r.get("session")]
    if not any(r.get("status") == "ok" for r in rows):
        return ("The mini-swe-agent profile (`osiris bench clients`) has not run into these "
                "reports.\n")
    version = next((r.get("client_version") for r in rows if r.get("client_version")), "")
    lines = [f"The bundled mini-swe-agent trajectories run again in the real mini-swe-agent "
             f"({version}, `mini.yaml`), bare and with OSIRIS's agent class, each in a "
             "checkout built from its task's package sdist, against the same scripted "
             "model; the one profile where OSIRIS may take outputs out of the history "
             "(cost: `openai-auto`):", "", *mini.pooled(rows), ""]
    return "\n".join(lines)


def _first_compaction(turns: list[dict[str, Any]]) -> dict[tuple[str, str], int]:
    """(session, configuration) -> the turn of its first compaction request."""
    first: dict[tuple[str, str], int] = {}
    for t in turns:
        if t.get("kind") == "compaction":
            key = (t["session"], t["configuration"])
            first[key] = min(first.get(key, t["turn"]), t["turn"])
    return first


def _clients_findings(rows: list[dict[str, Any]], turns: list[dict[str, Any]]) -> list[str]:
    """What the table shows, in sentences computed from the same rows."""
    first = _first_compaction(turns)
    out = []
    for client in ("claude-code", "codex"):
        ok = [r for r in rows if r["client"] == client and r["status"] == "ok"]
        bare = {r["session"]: r for r in ok if r["configuration"] == "bare"}
        mine = [r for r in ok if r["configuration"] == "osiris" and r["session"] in bare]
        if not mine:
            continue
        added = [r["added_ms_per_call"] for r in mine if r.get("added_ms_per_call") is not None]
        results = sum(int(r["tool_result_tokens"]) for r in mine)
        base = sum(int(bare[r["session"]]["tool_result_tokens"]) for r in mine)
        text = (f"In {client} a tool call takes a median "
                f"{statistics.median(added):,.0f} ms longer with OSIRIS" if added else
                f"In {client}")
        if base:
            change = 1 - results / base
            text += (f"; the tool results it re-sends are {change:.1%} fewer than the bare "
                     "client's" if change >= 0 else f"; the tool results it re-sends are "
                     f"{-change:.1%} more than the bare client's")
        later = [r for r in mine if (r["session"], "bare") in first and first.get(
            (r["session"], "osiris"), 10**9) > first[(r["session"], "bare")]]
        if later:
            text += (f". In {len(later)} of {len(mine)} sessions the bare client compacted "
                     "its history earlier than OSIRIS, whose prompts grew more slowly: the "
                     "turns in between re-send a full prompt with OSIRIS and a compacted one "
                     "without it, which is where those sessions lose")
        out += [text + ".", ""]
    return out[:-1] if out else out


def block_reach(reports: Reports) -> str:
    """What OSIRIS's hooks can reach, counted in the recorded sessions themselves
    (:mod:`osiris.harness.reports.reach`), each client pooled."""
    from osiris.harness.reports.bounds import pooled as pooled_bounds
    from osiris.harness.reports.reach import pooled

    rows = reports.rows("reach")
    if not rows:
        return "What a hook can reach is not counted in the committed reports.\n"
    parts = []
    for client in CLIENT_ORDER:
        mine = [r for r in rows if r["client"] == client]
        if not mine:
            continue
        p = pooled(mine)
        share = (f"tool results were {p['of_recorded']:.0%} of the input the provider "
                 "counted (the results in cl100k); " if p["of_recorded"] is not None else "")
        text = (f"in the {len(mine)} {CLIENT_TITLES.get(client, client)} sessions, {share}"
                f"{p['routable']:.0%} of the re-sent tool-result tokens came from tools whose "
                f"output OSIRIS may replace, {p['over'] or 0:.0%} of those from outputs over "
                "the sizes its default routing acts on; "
                f"{p['not_routed']:.0%} from tools it passes as they are")
        if p["no_hook"]:
            worst = max(mine, key=lambda r: r["resent_no_hook"] / r["tool_result_tokens_resent"])
            at = (f"{worst['resent_no_hook'] / worst['tool_result_tokens_resent']:.0%} in "
                  f"{worst['session']}")
            text += (f", and {p['no_hook']:.0%} from `write_stdin`, the output of a command "
                     f"still running, which Codex runs no hook for ({at}); the replays leave "
                     "those polls out in every configuration, so on a session like that one "
                     "a user saves a smaller share of the bill than the replay shows"
                     if client == "codex" else
                     f", and {p['no_hook']:.0%} from calls the client counted as failed "
                     "(a command's non-zero exit), which it sends to a hook that may not "
                     f"replace them ({at})")
        if p["ceiling"] is not None:
            billed = sorted((r for r in mine if r.get("recorded_billed_cost")),
                            key=lambda r: r["ceiling_billed_saving"] / r["recorded_billed_cost"])
            low, high = (f"{r['ceiling_billed_saving'] / r['recorded_billed_cost']:.1%} in "
                         f"{r['session']}" for r in (billed[0], billed[-1]))
            text += (f"; a clairvoyant hook, showing of each routable output only the lines "
                     f"the agent quoted later and never recalling, would have saved at most "
                     f"{p['ceiling']:.1%} of the bill of the {len(billed)} with usage per "
                     f"request (from {low} to {high})")
            shares = pooled_bounds(billed)
            if shares:
                text += (", and with the client's own compaction modelled (it compacts later "
                         f"when less is kept) {shares['clairvoyant']:.1%}; a hook that knew "
                         "whether and when the agent would use each output, but not which "
                         f"lines, {shares['knows_outputs']:.1%}; one routing every output "
                         f"without knowing, {shares['no_foresight']:.1%}")
        parts.append(text)
    return ("Counted in the session files themselves, as their authors' clients sent them "
            "(each tool result's tokens times the requests that re-sent it before the next "
            "compaction; every session in [reports/BENCHMARK.md](reports/BENCHMARK.md), "
            "What a hook can reach): " + "; ".join(parts) + ".\n")


BLOCKS: dict[str, Callable[[Reports], str]] = {
    "summary": block_summary, "clients": block_clients, "traces": block_traces,
    "peers": block_peers, "sweep": block_sweep, "duration": block_duration,
    "footprint": block_footprint, "hooks": block_hooks, "owner": block_owner,
    "mini": block_mini, "dashboard": block_dashboard, "reach": block_reach}


def render(reports: Path) -> dict[str, str]:
    """The text of every block, from the reports under ``reports``; links written from the
    repository's root (:func:`rebased` moves them to the page that holds the block)."""
    source = Reports(reports)
    return {name: _wrapped(make(source)) for name, make in BLOCKS.items()}


def _wrapped(text: str) -> str:
    """Prose paragraphs wrapped as the rest of the README is (tables left whole)."""
    paragraphs = text.rstrip("\n").split("\n\n")
    return "\n\n".join(p if p.startswith("|") else _fill(p) for p in paragraphs) + "\n"


def _fill(paragraph: str) -> str:
    # A figure stays on the line of its unit ("235 ms", not "235" then "ms").
    glued = re.sub(r"(\d) (ms|s|min|tokens|calls)\b", "\\1\u00a0\\2", paragraph)
    return textwrap.fill(glued, width=88, break_long_words=False,
                         break_on_hyphens=False).replace("\u00a0", " ")


def blocks_in(text: str) -> dict[str, str]:
    """The blocks of a page as they stand: name → text between the markers."""
    found: dict[str, str] = {}
    for match in BLOCK.finditer(text):
        if match["name"] in found:
            raise ValueError(f"block bench:{match['name']} appears twice")
        found[match["name"]] = match["body"]
    return found


def rebased(text: str, page: Path) -> str:
    """``text``'s links to paths of the repository, written from its root, as seen from
    ``page`` (the page's path inside the repository: ``docs/benchmark.md``)."""
    up = "../" * (len(page.parts) - 1)
    return LINK.sub(lambda m: f"]({up}{m[1]})", text) if up else text


def update(text: str, rendered: dict[str, str], page: Path = Path("README.md")) -> str:
    """``text`` (the page at ``page`` in the repository) with each block's body replaced
    by its rendering."""
    unknown = sorted(set(blocks_in(text)) - set(rendered))
    if unknown:
        raise ValueError(f"{page}: blocks with no generator: {unknown}; known: "
                         f"{sorted(rendered)}")
    return BLOCK.sub(lambda m: f"<!-- bench:{m['name']} -->\n"
                               f"{rebased(rendered[m['name']], page)}"
                               f"<!-- /bench:{m['name']} -->", text)


def pages(repo: Path) -> list[Path]:
    """The pages that may hold blocks: ``README.md`` and ``docs/*.md``."""
    return [repo / "README.md", *sorted((repo / "docs").glob("*.md"))]


def placed(repo: Path) -> dict[str, Path]:
    """Block name → the page that holds it; ValueError when two pages hold one block."""
    where: dict[str, Path] = {}
    for page in pages(repo):
        if not page.exists():
            continue
        for name in blocks_in(page.read_text("utf-8")):
            if name in where:
                raise ValueError(f"block bench:{name} stands in both "
                                 f"{where[name].relative_to(repo)} and "
                                 f"{page.relative_to(repo)}")
            where[name] = page
    return where


def write_readme(readme: Path, reports: Path) -> bool:
    """Regenerate the blocks of ``readme`` and of the pages of ``docs/`` beside it from
    ``reports``, each block rendered once; True if a page changed. Nothing is written
    when a page holds a block with no generator or two pages hold the same block."""
    repo = readme.parent
    placed(repo)
    rendered = render(reports)
    changed = {}
    for page in pages(repo):
        if page.exists():
            text = page.read_text("utf-8")
            new = update(text, rendered, page.relative_to(repo))
            if new != text:
                changed[page] = new
    for page, new in changed.items():
        page.write_text(new, "utf-8")
    return bool(changed)


def main(argv: list[str] | None = None) -> int:
    """``python -m osiris.harness.reports.readme_blocks [REPO]``: rewrite the blocks of
    REPO/README.md and REPO/docs/*.md from REPO/reports without running the benchmark
    (after editing a block's wording, or moving a block to another page)."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    repo = Path(args[0] if args else ".").resolve()
    changed = write_readme(repo / "README.md", repo / "reports")
    sys.stderr.write(f"{repo}: README.md and docs/ blocks "
                     f"{'rewritten' if changed else 'unchanged'}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
