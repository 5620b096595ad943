"""What a user pays, first: the real-client sessions (``clients_sessions`` rows) per client
and per source of sessions, each configuration against the bare client.

Every comparison is said in words a newcomer cannot misread: ``12.30% saved`` (the
configuration costs or sends less than the bare client), ``0.35% more`` (it costs or sends
more), ``same``. A figure is given pooled (the sum over the sessions every configuration
of the client ran), for the median session and for the worst session (the one where the
configuration does worst against the bare client, named).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from osiris.harness.tuning import half_of

__all__ = ["COST_MODELS", "bill_tables", "saved", "source_of"]

BARE = "bare"
CLIENTS = ("claude-code", "codex")
COST_OF_CLIENT = {"claude-code": "anthropic-5m", "codex": "openai-auto"}
"""The cost model of each client's provider: the headline bill."""
COST_MODELS = ("anthropic-5m", "anthropic-1h", "openai-auto", "no-cache")
"""Every cache model a bill is read under (``osiris/core/data/cost_models.toml``)."""


def saved(gain: float | None) -> str:
    """``12.30% saved``, ``0.35% more`` or ``same`` for a gain against the bare client."""
    if gain is None:
        return "—"
    if round(gain * 100, 2) == 0:
        return "same"
    return f"{gain * 100:.2f}% saved" if gain > 0 else f"{-gain * 100:.2f}% more"


def source_of(row: dict[str, Any]) -> str:
    """The source of a session: its row's ``source``, else the dataset folder it came from
    (``tielec-ai-workflow-agent`` for ``claude-code__tielec-ai-workflow-agent/…``); the
    corpus's Claude Code sessions by half (:mod:`osiris.harness.tuning`)."""
    if row.get("source"):
        return str(row["source"])
    first = str(row["session"]).split("/", 1)[0]
    half = half_of(str(row["session"]))
    if half is not None:  # the corpus sessions routing was tuned on, and the others
        return f"{first}, {half} half"
    return first.split("__", 1)[1] if "__" in first else first


def _short(session: str) -> str:
    parts = session.split("/")
    return "/".join(parts[1:3]) if len(parts) >= 3 else parts[-1].rsplit(".", 1)[0]


def _gain(value: float, base: float) -> float | None:
    return 1 - value / base if base else None


def _complete(rows: list[dict[str, Any]]) -> list[str]:
    """The sessions every configuration present ran to the end (``ok``)."""
    configurations = {r["configuration"] for r in rows}
    sessions = sorted({r["session"] for r in rows})
    ok = {(r["session"], r["configuration"]) for r in rows if r["status"] == "ok"}
    return [s for s in sessions if all((s, c) in ok for c in configurations)]


def _spread(mine: list[dict[str, Any]], bare: dict[str, dict[str, Any]],
            measure: str) -> tuple[str, str]:
    """The median session's and the worst session's gain on ``measure``."""
    gains = [(g, r["session"]) for r in mine
             if (g := _gain(r[measure], bare[r["session"]][measure])) is not None]
    if not gains:
        return "—", "—"
    worst, session = min(gains)
    return saved(statistics.median(g for g, _ in gains)), f"{saved(worst)} ({_short(session)})"


def _added(added: list[float], rows: list[dict[str, Any]], configuration: str) -> str:
    """The median milliseconds added per call, or why there is none."""
    if added:
        return f"{statistics.median(added):+,.0f}"
    if configuration != BARE and any(r.get("timed") is False for r in rows):
        return "not timed (ran 2 at a time)"
    return "—"


def _configurations(rows: list[dict[str, Any]], order: Sequence[str]) -> list[str]:
    present = {r["configuration"] for r in rows}
    return [c for c in order if c in present] + sorted(present - set(order))


def bill_tables(rows: list[dict[str, Any]], order: Sequence[str]) -> list[str]:
    """The first table (per client and source: billed cost under the client's provider,
    pooled, median and worst session; cumulative input; compactions and refusals per
    session; tool-result tokens re-sent; needs kept; extra calls; added ms per call), then
    the billed cost pooled under every cache model. ``order``: configurations' order."""
    out: list[str] = []
    every: list[str] = ["| client | source | configuration | " + " | ".join(COST_MODELS)
                        + " |", "|---|---|---|" + "---|" * len(COST_MODELS)]
    for client in CLIENTS:
        mine = [r for r in rows if r["client"] == client]
        model = COST_OF_CLIENT[client]
        for source in sorted({source_of(r) for r in mine}):
            part = [r for r in mine if source_of(r) == source]
            sessions = _complete(part)
            if not sessions:
                continue
            chosen = [r for r in part if r["session"] in sessions]
            bare = {r["session"]: r for r in chosen if r["configuration"] == BARE}
            if not bare:
                continue
            written = ("output tokens included" if all(
                r.get("output_tokens") is not None for r in chosen) else
                "input tokens only: these rows predate output pricing")
            out += [f"**{client}, {source}** ({len(sessions)} session"
                    f"{'s' if len(sessions) > 1 else ''}; billed under {model}, the "
                    f"provider's own cache, {written})", "",
                    "| configuration | billed cost | pooled | median session | worst session "
                    "| cumulative input | compactions per session | refused prompts | "
                    "tool-result tokens re-sent | needs kept | extra calls | added ms per "
                    "call (median) |",
                    "|---|---|---|---|---|---|---|---|---|---|---|---|"]
            base = {m: sum(r[f"billed_cost_{m}"] for r in bare.values()) for m in COST_MODELS}
            base_tokens = sum(r["cumulative_input_tokens"] for r in bare.values())
            for configuration in _configurations(chosen, order):
                these = [r for r in chosen if r["configuration"] == configuration]
                cost = sum(r[f"billed_cost_{model}"] for r in these)
                tokens = sum(r["cumulative_input_tokens"] for r in these)
                if configuration == BARE:
                    pooled = median = worst = "baseline"
                    tokens_cell = f"{tokens:,}"
                else:
                    pooled = saved(_gain(cost, base[model]))
                    median, worst = _spread(these, bare, f"billed_cost_{model}")
                    tokens_cell = f"{tokens:,} ({saved(_gain(tokens, base_tokens))})"
                compactions = sum(int(r.get("compaction_requests") or 0) for r in these)
                refused = sum(int(r.get("refused_requests") or 0) for r in these)
                kept = sum(int(r["needs_kept"]) + int(r["needs_retrieved"]) for r in these)
                needs = sum(int(r["needs_total"]) for r in these)
                added = [float(r["added_ms_per_call"]) for r in these
                         if r.get("added_ms_per_call") is not None]
                out.append(
                    f"| {configuration} | ${cost:,.4f} | {pooled} | {median} | {worst} | "
                    f"{tokens_cell} | {compactions / len(these):.1f} | {refused} | "
                    f"{sum(int(r['tool_result_tokens']) for r in these):,} | "
                    f"{kept}/{needs} | {sum(int(r['extra_calls']) for r in these)} | "
                    f"{_added(added, these, configuration)} |")
                cells = [saved(_gain(sum(r[f"billed_cost_{m}"] for r in these), base[m]))
                         if configuration != BARE else f"${base[m]:,.4f}"
                         for m in COST_MODELS]
                every.append(f"| {client} | {source} | {configuration} | "
                             + " | ".join(cells) + " |")
            out.append("")
    if not out:
        return []
    return [*out, "The same sessions billed under every cache model (the bare client's bill, "
            "and each configuration against it):", "", *every, ""]
