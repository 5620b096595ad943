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
from dataclasses import dataclass
from typing import Any

from osiris.harness.tuning import half_of

__all__ = ["COST_MODELS", "Section", "bill_tables", "extra_calls", "needs_kept", "saved",
           "sections", "source_of", "summary_table"]

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


@dataclass(frozen=True)
class Section:
    """One client and one source of sessions: the sessions every configuration present ran
    to the end, billed under the client's provider's cost model."""

    client: str
    source: str
    model: str
    sessions: list[str]
    rows: list[dict[str, Any]]
    bare: dict[str, dict[str, Any]]

    def of(self, configuration: str) -> list[dict[str, Any]]:
        """The rows of ``configuration``."""
        return [r for r in self.rows if r["configuration"] == configuration]

    def cost(self, these: list[dict[str, Any]], model: str | None = None) -> float:
        """``these`` rows' billed cost, pooled, under ``model`` (the provider's by default)."""
        return float(sum(r[f"billed_cost_{model or self.model}"] for r in these))

    def base(self, model: str | None = None) -> float:
        """The bare client's billed cost, pooled."""
        return self.cost(list(self.bare.values()), model)


def sections(rows: list[dict[str, Any]]) -> list[Section]:
    """Per client (``claude-code``, then ``codex``) and source, the sessions to compare."""
    out = []
    for client in CLIENTS:
        mine = [r for r in rows if r["client"] == client]
        for source in sorted({source_of(r) for r in mine}):
            part = [r for r in mine if source_of(r) == source]
            sessions = _complete(part)
            chosen = [r for r in part if r["session"] in sessions]
            bare = {r["session"]: r for r in chosen if r["configuration"] == BARE}
            if sessions and bare:
                out.append(Section(client, source, COST_OF_CLIENT[client], sessions, chosen,
                                   bare))
    return out


def needs_kept(these: list[dict[str, Any]]) -> str:
    """``kept/needs``: the needs the agent still had or got back, of those it had."""
    kept = sum(int(r["needs_kept"]) + int(r["needs_retrieved"]) for r in these)
    return f"{kept}/{sum(int(r['needs_total']) for r in these)}"


def extra_calls(these: list[dict[str, Any]]) -> int:
    """The calls the agent made to get back what the prompt had lost."""
    return sum(int(r["extra_calls"]) for r in these)


def bill_tables(rows: list[dict[str, Any]], order: Sequence[str]) -> list[str]:
    """The first table (per client and source: billed cost under the client's provider,
    pooled, median and worst session; cumulative input; compactions and refusals per
    session; tool-result tokens re-sent; needs kept; extra calls; added ms per call), then
    the billed cost pooled under every cache model. ``order``: configurations' order."""
    out: list[str] = []
    every: list[str] = ["| client | source | configuration | " + " | ".join(COST_MODELS)
                        + " |", "|---|---|---|" + "---|" * len(COST_MODELS)]
    for section in sections(rows):
        client, source, model, chosen = section.client, section.source, section.model, \
            section.rows
        written = ("output tokens included" if all(
            r.get("output_tokens") is not None for r in chosen) else
            "input tokens only: these rows predate output pricing")
        count = len(section.sessions)
        out += [f"**{client}, {source}** ({count} session{'s' if count > 1 else ''}; billed "
                f"under {model}, the provider's own cache, {written})", "",
                "| configuration | billed cost | pooled | median session | worst session "
                "| cumulative input | compactions per session | refused prompts | "
                "tool-result tokens re-sent | needs kept | extra calls | added ms per "
                "call (median) |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        base_tokens = sum(r["cumulative_input_tokens"] for r in section.bare.values())
        for configuration in _configurations(chosen, order):
            these = section.of(configuration)
            cost = section.cost(these)
            tokens = sum(r["cumulative_input_tokens"] for r in these)
            if configuration == BARE:
                pooled = median = worst = "baseline"
                tokens_cell = f"{tokens:,}"
            else:
                pooled = saved(_gain(cost, section.base()))
                median, worst = _spread(these, section.bare, f"billed_cost_{model}")
                tokens_cell = f"{tokens:,} ({saved(_gain(tokens, base_tokens))})"
            compactions = sum(int(r.get("compaction_requests") or 0) for r in these)
            refused = sum(int(r.get("refused_requests") or 0) for r in these)
            added = [float(r["added_ms_per_call"]) for r in these
                     if r.get("added_ms_per_call") is not None]
            out.append(
                f"| {configuration} | ${cost:,.4f} | {pooled} | {median} | {worst} | "
                f"{tokens_cell} | {compactions / len(these):.1f} | {refused} | "
                f"{sum(int(r['tool_result_tokens']) for r in these):,} | "
                f"{needs_kept(these)} | {extra_calls(these)} | "
                f"{_added(added, these, configuration)} |")
            cells = [saved(_gain(section.cost(these, m), section.base(m)))
                     if configuration != BARE else f"${section.base(m):,.4f}"
                     for m in COST_MODELS]
            every.append(f"| {client} | {source} | {configuration} | "
                         + " | ".join(cells) + " |")
        out.append("")
    if not out:
        return []
    return [*out, "The same sessions billed under every cache model (the bare client's bill, "
            "and each configuration against it):", "", *every, ""]


def summary_table(rows: list[dict[str, Any]], shown: Sequence[str]) -> list[str]:
    """The short table a newcomer reads first: per client and source, the bare client's
    bill under its provider, then each configuration of ``shown`` against it, pooled, in
    words; needs kept and extra calls beside each. Client and source are named on the
    first row of their section only."""
    out = ["| client | source (sessions) | configuration | billed cost | needs kept | "
           "extra calls |", "|---|---|---|---|---|---|"]
    for section in sections(rows):
        named = f"{section.client} | {section.source} ({len(section.sessions)})"
        for configuration in [BARE, *shown]:
            these = section.of(configuration)
            if not these:
                continue
            cost = (f"${section.base():,.4f}" if configuration == BARE else
                    saved(_gain(section.cost(these), section.base())))
            out.append(f"| {named} | {configuration} | {cost} | {needs_kept(these)} | "
                       f"{extra_calls(these)} |")
            named = " | "
    return out if len(out) > 2 else []
