"""The real-client stage's tables: the section that leads ``reports/BENCHMARK.md`` and
the README (:func:`render`), rendered from the rows :mod:`.sessions` measured (the
``clients_sessions`` Parquet table)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping
from typing import Any

from osiris.harness.real_clients.configs import BARE, OSIRIS, SESSION_CONFIGURATIONS
from osiris.harness.real_clients.run import CLAUDE_CODE, CODEX, VERSIONS
from osiris.harness.real_clients.sessions import (
    AUTO_COMPACT_WINDOW,
    CONTEXT_WINDOW,
    COST_MODEL_OF_CLIENT,
    REPLAY_ONLY,
)


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:+.2f}%"


def render(rows: list[dict[str, Any]]) -> str:
    """The real-client section (Markdown): per session, then pooled per client."""
    if not rows:
        return ("## Inside the real clients\n\nNot measured in this run "
                "(`osiris bench clients`).\n")
    lines = ["## Inside the real clients", "",
             "Each tielec trace replayed inside the client that produced it — the real "
             "binaries (" + ", ".join(f"{c} {VERSIONS[c]}" for c in (CLAUDE_CODE, CODEX))
             + "), offline against the scripted model (`osiris/harness/real_clients/`): the "
             "model issues the trace's tool calls in order in the trace's workspace "
             "(`datasets/workspaces/`), retrieves a need the prompt no longer shows by the "
             "visible rule (with `osiris_recall` where the client lists it and a preview names a "
             "ref, else with the client's own tools; the needs of one output due at the same call "
             "in one search, as in the replay), and every figure is counted from the request "
             "bodies the client sent (cl100k, dates, scratch paths, random ids and `ls -l` times "
             "neutralised). *vs bare* is the gain against the bare client (negative: more "
             "tokens); *added ms* is the median, over tool calls, of the client's time between "
             "the tool call and its next prompt minus the bare client's for the same call (its "
             "hooks, mostly); *head* is the first prompt without the typed task (system, tool "
             "definitions, the files its `@` mentions attached, reminders); *failed calls* are "
             "the trace's calls the client "
             "answered with an error (the workspace differs; npm runs offline).", "",
             "| session | client | configuration | status | prompts | cumulative input | "
             "vs bare | cost | vs bare (cost) | tool results | head | needs kept | "
             "extra calls | failed calls | compactions | added ms per call |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    replay_only = sorted(r["session"] for r in rows if r["status"] == REPLAY_ONLY)
    rows = [r for r in rows if r["status"] != REPLAY_ONLY]
    for r in rows:
        if not str(r["status"]).startswith(("ok", "exit", "timed")):
            lines.append(f"| {r['session']} | {r['client']} | {r['configuration']} | "
                         f"{r['status']} | | | | | | | | | | | | |")
            continue
        model = COST_MODEL_OF_CLIENT[r["client"]]
        needs = r["needs_total"]
        kept = r["needs_kept"] + r["needs_retrieved"]
        added = r.get("added_ms_per_call")
        lines.append(
            f"| {r['session']} | {r['client']} | {r['configuration']} | {r['status']} | "
            f"{r['requests']} | {r['cumulative_input_tokens']:,} | "
            f"{_pct(r.get('net_gain_cumulative_input_tokens'))} | "
            f"${r[f'billed_cost_{model}']:.4f} ({model}) | "
            f"{_pct(r.get(f'net_gain_billed_cost_{model}'))} | {r['tool_result_tokens']:,} | "
            f"{r.get('head_tokens', 0):,} | {kept}/{needs} | {r['extra_calls']} | "
            f"{r['failed_calls']} | {_compactions(r)} | "
            f"{'—' if added is None else f'{added:+,.0f}'} |")
    fixed: dict[str, int] = {}
    for r in rows:
        for kind, count in json.loads(r.get("neutralised") or "{}").items():
            fixed[kind] = fixed.get(kind, 0) + int(count)
    refused = sum(int(r.get("refused_requests") or 0) for r in rows)
    compactions = sum(int(r.get("compactions") or 0) for r in rows)
    needed = sorted({f"{r['session']} ({r['configuration']})" for r in rows
                     if r.get("needed_refusal")})
    lines += ["", "Pooled over the sessions every configuration ran:", "", *pooled(rows), "",
              "What changes from run to run was fixed before counting: "
              + ", ".join(f"{kind} ×{count:,}" for kind, count in sorted(fixed.items()))
              + " (plus `ls -l` times and Claude Code's remaining-token notes); the scratch "
              "root is the same path on every run, because OSIRIS's refs hash outputs that name"
              " it; every client's commands run ripgrep with `--sort=path` (its threads print "
              "files in the order they finish, so a long search that Codex cuts showed other "
              "lines each run), commit at a fixed date (a popped stash names its commit's hash)"
              " and without npm's update notice. The trace's `ps` and `pgrep` commands are not "
              "replayed: they would list the replaying machine's processes (the session run "
              "beside it included). Left as they come, because only changing the command "
              "would fix them: what a command's background job prints before or after the command "
              "returns, and the order in which Codex merges a command's stdout and stderr: a "
              "few tokens in one result, re-sent until the next compaction. The "
              f"scripted model refuses a prompt over the model's window as the "
              f"provider does ({CONTEXT_WINDOW[CLAUDE_CODE]:,} tokens for Claude Code, "
              f"{CONTEXT_WINDOW[CODEX]:,} for Codex), but both clients know the window and "
              "compact on their own before it, as a user's do (Claude Code told it by "
              f"`CLAUDE_CODE_AUTO_COMPACT_WINDOW={AUTO_COMPACT_WINDOW[CLAUDE_CODE]}`, which "
              "its account bootstrap sets against Anthropic's endpoint; Codex from its model "
              f"catalog): {compactions} proactive compactions (answered with the trace's own "
              f"summaries, billed like any request); {refused} prompts were refused"
              + (f", in {'; '.join(needed)}: these sessions needed the refusal to compact."
                 if needed else ": no session needed the refusal."), "",
              *_corpus_note(rows, replay_only),
              *shares(rows), "",
              "OSIRIS runs with all its routing (*osiris*, the default `[routing]`), with "
              "none (*osiris-observe*: its hooks only watch, as before routing), and with one "
              "feature at a time (*osiris-read*: large reads windowed, re-reads answered with "
              "a pointer, or with the changed lines when the file changed since; "
              "*osiris-shell*: large shell outputs replaced by a preview and ref "
              "after they ran); Codex has no `Read`, so there *osiris* is its shell "
              "routing. The features are switched by an invariants file in a root of its "
              "own, so the project tree is the trace's. "
              "The scripted model follows the trace, not an installed tool's advice: it retrieves "
              "what a window or preview left out with `osiris_recall` only where the client lists "
              "it (Codex; Claude Code defers MCP tools behind its tool search, so there with its "
              "own `Grep` and `Read`) and else issues only the trace's calls, so savings that "
              "depend on the model choosing a tool's own commands (context-mode's `ctx_execute`) "
              "are not counted. *Compactions* (the table above) matter: a bare client that "
              "compacts drops its history, prompt head included, and re-sends far less "
              "afterwards; a configuration whose prompts grow more slowly may not "
              "reach the window before the trace ends.",
              "", *_changed_rereads(rows)]
    return "\n".join(lines)


def _changed_rereads(rows: list[dict[str, Any]]) -> list[str]:
    """How often the *osiris* configuration showed a re-read as its changed lines, and
    the tokens that kept out of the prompt at that moment (from each session's
    journal, ``osiris_routes``)."""
    mine = [r for r in rows if r["configuration"] == OSIRIS and r["client"] == CLAUDE_CODE
            and r["status"] == "ok" and r.get("osiris_routes")]
    if not mine:
        return []
    routes = [(r["session"], json.loads(r["osiris_routes"])) for r in mine]
    changed = [(s, d) for s, d in routes if d.get("route.read_changed")]
    pointers = sum(int(d.get("route.reread") or 0) for _, d in routes)
    count = sum(int(d["route.read_changed"]) for _, d in changed)
    kept_out = sum(int(d.get("read_changed_tokens_kept_out") or 0) for _, d in changed)
    where = ", ".join(f"`{s}` {d['route.read_changed']}" for s, d in changed)
    return [f"Re-reads in Claude Code with *osiris* ({len(mine)} sessions): {pointers} "
            "repeated reads of unchanged files answered with a pointer; "
            f"{count} whole-file reads of a file changed since it was read shown as their "
            f"changed lines" + (f" ({where}), keeping {kept_out:,} tokens of file out of "
                                "the prompt when they were read" if count else "")
            + ".", ""]


def _corpus_note(rows: list[dict[str, Any]], replay_only: list[str]) -> list[str]:
    """What the note says of the corpus's interactive sessions (:mod:`.corpus`)."""
    played = sorted({r["session"] for r in rows if str(r["session"]).startswith("corpus/")})
    if not played and not replay_only:
        return []
    text = ("The `corpus/` sessions are public interactive sessions (`datasets/corpus/`), "
            "played prompt by prompt: each later typed prompt is sent once the client has "
            "ended the turn before, and the model issues the calls the author's session "
            "made after it; they run bare, with OSIRIS and with context-mode (not the per-feature "
            "configurations), two sessions at a time, so their added milliseconds are not "
            "timed.")
    if replay_only:
        text += (" Without a workspace, replay only (not played here): "
                 + ", ".join(f"`{name}`" for name in replay_only) + ".")
    return [text, ""]


def _compactions(row: Mapping[str, Any]) -> str:
    """Proactive compactions, and the reactive ones (after a refusal) when any."""
    reactive = int(row.get("reactive_compactions") or 0)
    own = int(row.get("compactions") or 0)
    return f"{own} + {reactive} after a refusal" if reactive else str(own)


def shares(rows: list[dict[str, Any]]) -> list[str]:
    """What each configuration adds to the first prompt, and how its MCP tools arrive:
    *vs bare* is the median, over the sessions the configuration ran, of its first prompt
    minus the bare client's in the same session (the per-feature configurations run on
    fewer sessions than bare, so their medians alone would compare other sessions)."""
    out = ["| client | configuration | sessions | first prompt (median) | vs bare (same "
           "sessions, median) | MCP tool definitions | hook texts in tool results |",
           "|---|---|---|---|---|---|---|"]
    for client in (CLAUDE_CODE, CODEX):
        ok = [r for r in rows if r["client"] == client and r["status"] == "ok"]
        bare = {r["session"]: r["first_prompt_tokens"] for r in ok
                if r["configuration"] == BARE}
        for configuration in SESSION_CONFIGURATIONS:
            mine = [r for r in ok if r["configuration"] == configuration]
            if not mine:
                continue
            first = statistics.median(r["first_prompt_tokens"] for r in mine)
            paired = [r["first_prompt_tokens"] - bare[r["session"]] for r in mine
                      if r["session"] in bare]
            delta = statistics.median(paired) if paired else None
            defined = max(int(r.get("mcp_tools_defined") or 0) for r in mine)
            deferred = any(r.get("mcp_tools_deferred") for r in mine)
            how = ("none" if configuration == BARE else "deferred (names only, behind tool "
                   "search)" if deferred else f"{defined} sent in full" if defined else
                   "sent in full")
            notes = sum(int(r.get("osiris_hook_notes") or 0) for r in mine)
            out.append(f"| {client} | {configuration} | {len(mine)} | {first:,.0f} | "
                       f"{'—' if delta is None else f'{delta:+,.0f}'} | {how} | "
                       f"{notes if configuration.startswith('osiris') else '—'} |")
    return out


def _source(session: str) -> str:
    """Where a session comes from: ``corpus`` (:mod:`.corpus`) or the bundled traces."""
    return "corpus" if session.startswith("corpus/") else "traces"


def pooled(rows: list[dict[str, Any]]) -> list[str]:
    """Totals per client, source and configuration over the sessions every configuration
    of that source ran (the corpus runs fewer configurations: :mod:`.corpus`)."""
    out = ["| client | source | configuration | sessions | cumulative input | vs bare | cost | "
           "vs bare (cost) | needs kept | extra calls | added ms per call (median) |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for client in (CLAUDE_CODE, CODEX):
        for source in ("traces", "corpus"):
            mine = [r for r in rows if r["client"] == client
                    and _source(str(r["session"])) == source]
            out += _pooled_rows(client, source, mine)
    return out


def _pooled_rows(client: str, source: str, mine: list[dict[str, Any]]) -> list[str]:
    out: list[str] = []
    present = [c for c in SESSION_CONFIGURATIONS if any(r["configuration"] == c for r in mine)]
    sessions = sorted({r["session"] for r in mine})
    complete = [s for s in sessions if all(
        any(r["session"] == s and r["configuration"] == c and r["status"] == "ok"
            for r in mine) for c in present)]
    if not complete:
        return out
    model = COST_MODEL_OF_CLIENT[client]
    base_tokens = sum(r["cumulative_input_tokens"] for r in mine
                      if r["configuration"] == BARE and r["session"] in complete)
    base_cost = sum(r[f"billed_cost_{model}"] for r in mine
                    if r["configuration"] == BARE and r["session"] in complete)
    for configuration in present:
        chosen = [r for r in mine if r["configuration"] == configuration
                  and r["session"] in complete]
        tokens = sum(r["cumulative_input_tokens"] for r in chosen)
        cost = sum(r[f"billed_cost_{model}"] for r in chosen)
        kept = sum(r["needs_kept"] + r["needs_retrieved"] for r in chosen)
        total = sum(r["needs_total"] for r in chosen)
        added = [r["added_ms_per_call"] for r in chosen
                 if r.get("added_ms_per_call") is not None]
        out.append(
            f"| {client} | {source} | {configuration} | {len(chosen)} | {tokens:,} | "
            f"{_pct(1 - tokens / base_tokens if base_tokens else None)} | ${cost:.4f} | "
            f"{_pct(1 - cost / base_cost if base_cost else None)} | {kept}/{total} | "
            f"{sum(r['extra_calls'] for r in chosen)} | "
            f"{f'{statistics.median(added):+,.0f}' if added else '—'} |")
    return out
