"""What OSIRIS's hooks can reach in a recorded session, from the session file alone.

Each tool result's tokens (cl100k) are counted as many times as the client re-sent them:
once per model request after the result, up to the next compaction (the requests are the
model responses the log records, :attr:`TraceStep.response`). Every result falls in one of
three classes, by what the client lets a hook do with that tool's output:

* **routable** — OSIRIS may replace it when it is over the size the ``[routing]`` defaults
  act on (:class:`~osiris.core.routing.RoutingConfig`): Claude Code's ``Read`` (windowed from
  ``read_threshold_tokens``; a repeated read of an unchanged file at any size) and ``Bash``
  (a candidate from ``shell_min_tokens``), Codex's shell calls (from
  ``shell_preview_tokens``), another MCP server's output (from ``mcp_threshold_tokens``);
* **not routed** — a hook sees the call, OSIRIS leaves its output as the client shows it
  (edits, searches, sub-agents' answers, plans, images);
* **no hook** — no hook may replace it: the client runs none for the tool at all (Codex's
  ``write_stdin``, the output of a command still running, polled later; checked in Codex
  0.169.0, ``docs/hooks.md``), or only one that may not change the output (a call Claude
  Code counts as failed, its ``is_error`` results, comes to PostToolUseFailure).

And a ceiling no hook can pass: a *clairvoyant* hook that knew, when each routable output
arrived, every part of it the agent would use later (the session's needs, derived as the
replays derive them: :func:`~osiris.harness.replay.workloads.session_from_trace`) and
showed only the lines holding those, in a preview frame of OSIRIS's size, at no recall.
What that removes from the re-sent tokens, priced as the client's provider billed each
request that carried it (:data:`~osiris.harness.reports.bill.COST_OF_CLIENT`; where the
result sat in that request's prompt against the part the usage record says was read from
the cache, written to it or billed uncached — a cache that had expired bills it all
again), against the session's own bill from the same records, is the most any routing of
outputs could save on that session as its author ran it. The needs count only what the
agent later quoted, so the true ceiling is lower still.

The same needs also drive :mod:`osiris.harness.reports.bounds`: what hooks that know
less of the future could save, with the client compacting as it does (columns
:data:`BOUND_COLUMNS`).

Only counts leave this module: no text of a session.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from osiris.core.cost_models import CostModel, default_cost_models
from osiris.core.routing import (
    READ_TOOLS,
    SHELL_TOOLS,
    RoutingConfig,
    foreign_mcp_tool,
    sized_threshold,
)
from osiris.core.tokens import TokenCounter
from osiris.engine.routing import PREVIEW_FRAME_TOKENS
from osiris.harness.importers.records import Trace
from osiris.harness.importers.traces import find_traces, load_trace
from osiris.harness.replay.workloads import session_from_trace
from osiris.harness.reports import bounds as hooks_bounds
from osiris.harness.reports.bill import COST_OF_CLIENT

BOUND_COLUMNS = ("modelled_bare_cost", "modelled_bare_compactions",
                 "modelled_bare_tool_tokens_resent", "saving_clairvoyant_fixed",
                 *(f"{what}_{hook}" for hook in hooks_bounds.HOOKS
                   for what in ("saving", "compactions", "tool_tokens_resent")),
                 "saving_by_rule")
ROUTABLE, NOT_ROUTED, NO_HOOK = "routable", "not routed", "no hook"
CLASSES = (ROUTABLE, NOT_ROUTED, NO_HOOK)
NO_HOOK_TOOLS = {"codex-cli": frozenset({"write_stdin"})}
"""Tools whose output the client shows without running any hook (by trace format)."""
FAILURE_KEPT = frozenset({"claude-code"})
"""Clients whose hooks may not replace the output of a call that failed (by trace format):
Claude Code sends it to PostToolUseFailure, whose answer cannot change it."""


def reach_of(fmt: str, tool: str, *, failed: bool = False) -> str:
    """The class of a tool's output in a client (by the trace's format; ``failed``: the
    log marks the result an error)."""
    if tool in NO_HOOK_TOOLS.get(fmt, frozenset()) or (failed and fmt in FAILURE_KEPT):
        return NO_HOOK
    if tool in SHELL_TOOLS or foreign_mcp_tool(tool) or (
            fmt == "claude-code" and tool in READ_TOOLS):
        return ROUTABLE
    return NOT_ROUTED


def threshold_of(fmt: str, tool: str, config: RoutingConfig,
                 args: dict[str, Any] | None = None) -> int | None:
    """The size from which OSIRIS's defaults act on a routable output (None: never);
    ``args``: the call's (a shell command's kind picks Codex's threshold)."""
    if foreign_mcp_tool(tool):
        return config.mcp_threshold_tokens
    if tool in READ_TOOLS and fmt == "claude-code":
        return config.read_threshold_tokens
    if tool in SHELL_TOOLS:
        # Claude Code weighs a shell output from shell_min_tokens (the payoff decides);
        # Codex has no payoff: size alone, by the command's kind.
        if fmt == "claude-code":
            return config.shell_min_tokens
        command = (args or {}).get("command", (args or {}).get("cmd"))
        if isinstance(command, list):
            command = " ".join(str(word) for word in command)
        return sized_threshold(command if isinstance(command, str) else "", config)
    return None


@dataclass(frozen=True)
class Reach:
    """One session's re-sent tool-result tokens, by class and by tool."""

    session: str
    client: str
    requests: int
    compactions: int
    resent: Counter[str]
    """Class -> tokens re-sent."""
    over_threshold: int
    """Of the routable tokens: those of outputs over OSIRIS's size threshold."""
    by_tool: Counter[str]
    recorded_input: int | None
    """The provider's input tokens summed over the session's usage records (None: the log
    does not record them per request)."""
    removable: int = 0
    """Of the routable tokens: those a clairvoyant hook could have kept out (module
    docstring)."""
    recorded_cost: float | None = None
    """The session's bill (USD) from its usage records under the client's cost model
    (None: no usage per request)."""
    ceiling_saving: float = 0.0
    """What keeping the :attr:`removable` tokens out would have saved of that bill (USD)."""
    bounds: dict[str, Any] | None = None
    """The hooks of :mod:`osiris.harness.reports.bounds` with the client's compactions
    (None: no usage per request)."""

    @property
    def total(self) -> int:
        return sum(self.resent.values())

    def row(self) -> dict[str, Any]:
        """A flat row (``reach`` table of the benchmark's data)."""
        return {"session": self.session, "client": self.client, "requests": self.requests,
                "compactions": self.compactions, "tool_result_tokens_resent": self.total,
                **{_column(c): self.resent[c] for c in CLASSES},
                "resent_routable_over_threshold": self.over_threshold,
                "recorded_input_tokens": self.recorded_input,
                "resent_removable_keeping_needs": self.removable,
                "recorded_billed_cost": self.recorded_cost,
                "ceiling_billed_saving": (self.ceiling_saving if self.recorded_cost is not None
                                          else None),
                "by_tool": json.dumps(dict(self.by_tool.most_common())),
                **{key: (self.bounds or {}).get(key) for key in BOUND_COLUMNS}}


def _column(kind: str) -> str:
    return "resent_" + kind.replace(" ", "_")


def requests_of(trace: Trace) -> int:
    """How many model requests the session made: its usage records, or one more than the
    last response that issued a call (the answer after it), whichever is more."""
    last = max((s.response for s in trace.steps), default=-1)
    return max(len(trace.usage), last + 2)


def _per_request(trace: Trace) -> bool:
    """Whether the log records usage per request (``exec --json`` logs the total once)."""
    return not (trace.format == "codex-cli" and len(trace.usage) < requests_of(trace) - 1)


def _recorded_input(trace: Trace) -> int | None:
    if not _per_request(trace):
        return None
    total = 0
    for usage in trace.usage:
        total += sum(int(usage.get(key) or 0) for key in (
            "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
    return total or None


def recorded_cost(trace: Trace, model: CostModel) -> float | None:
    """The session's bill (USD) from its usage records: Anthropic's uncached input, cache
    writes and reads, or OpenAI's input with its cached part, and the output; None when
    the log has no usage per request."""
    if not trace.usage or not _per_request(trace):
        return None
    total = 0.0
    for usage in trace.usage:
        def get(key: str, usage: dict[str, Any] = usage) -> int:
            return int(usage.get(key) or 0)
        if trace.format == "codex-cli":  # input_tokens holds the cached part
            cached = get("cached_input_tokens")
            total += model.token_cost(get("input_tokens") - cached) \
                + model.token_cost(cached, model.read_multiplier)
        else:
            total += model.token_cost(get("input_tokens")) \
                + model.token_cost(get("cache_creation_input_tokens"), model.write_multiplier) \
                + model.token_cost(get("cache_read_input_tokens"), model.read_multiplier)
        total += model.output_cost(get("output_tokens"))
    return total


def usage_by_request(trace: Trace) -> dict[int, dict[str, Any]]:
    """Each request's usage record, by request index ({} without usage per request):
    Claude Code's records name their response; a Codex rollout logs one per request."""
    if not trace.usage or not _per_request(trace):
        return {}
    if all(isinstance(u.get("response"), int) for u in trace.usage):
        return {u["response"]: u for u in trace.usage}
    return dict(enumerate(trace.usage))


def _zones(fmt: str, usage: dict[str, Any]) -> tuple[int, int, int]:
    """Where a request's prompt was read from the cache, written to it, and billed
    uncached: the ends of the three zones, in the provider's tokens."""
    def get(key: str) -> int:
        return int(usage.get(key) or 0)
    if fmt == "codex-cli":  # a cached prefix, the rest billed as input
        return get("cached_input_tokens"), get("cached_input_tokens"), get("input_tokens")
    read = get("cache_read_input_tokens")
    written = read + get("cache_creation_input_tokens")
    return read, written, written + get("input_tokens")


def _result_ends(trace: Trace, usage: dict[int, dict[str, Any]], counter: TokenCounter,
                 ) -> dict[int, int]:
    """Where each result ends in the prompt of the request after it: that prompt's size
    less the results of the same response that follow it (0 without usage)."""
    ends: dict[int, int] = {}
    after: dict[int, int] = {}
    for step in reversed(trace.steps):
        record = usage.get(step.response + 1)
        if step.response < 0 or record is None:
            continue
        ends[step.i] = _zones(trace.format, record)[2] - after.get(step.response, 0)
        after[step.response] = after.get(step.response, 0) + counter.count(step.output)
    return ends


def _price(model: CostModel, fmt: str, usage: dict[str, Any] | None, span: tuple[int, int],
           *, first: bool) -> float:
    """The multiplier one request paid for a result at ``span`` of its prompt: read from
    the cache, written to it, or billed uncached (a result across zones pays each part's;
    a cache that expired or a compaction's summary request bill it all again). Without
    the request's usage: written by the first request that carries it, read after."""
    if usage is None or span[1] <= 0:
        return model.write_multiplier if first else model.read_multiplier
    read, written, _ = _zones(fmt, usage)
    start, end = max(0, span[0]), span[1]
    size = max(1, end - start)

    def part(low: int, high: int) -> float:
        return max(0, min(end, high) - max(start, low)) / size
    cached, wrote = part(0, read), part(read, written)
    return cached * model.read_multiplier + wrote * model.write_multiplier \
        + (1 - cached - wrote)


def needed_lines(output: str, needs: Sequence[str]) -> str:
    """The lines of ``output`` that hold a need: what a clairvoyant hook would show."""
    return "\n".join(line for line in output.split("\n")
                     if any(need in line for need in needs))


def reach(trace: Trace, session: str, counter: TokenCounter,
          config: RoutingConfig | None = None) -> Reach:
    """Count what OSIRIS's hooks can reach in ``trace`` (see the module docstring)."""
    config = config or RoutingConfig()
    client = "codex" if trace.format == "codex-cli" else trace.format
    model = default_cost_models().get(COST_OF_CLIENT.get(client, "anthropic-5m"))
    work = session_from_trace(trace, session, trace.source).steps
    needs = {s.i: [n.text for n in s.needs] for s in work}
    requests = requests_of(trace)
    # The request whose answer used each need (the final answer: the last request).
    used_in = [s.response for s in trace.steps] + [requests - 1]
    uses = {s.i: [(used_in[n.use_step], n.text) for n in s.needs] for s in work}
    outputs: list[hooks_bounds.Output] = []
    # The first response after each compaction: results of earlier steps are gone from it.
    cuts = sorted(trace.steps[c.step].response if c.step < len(trace.steps) else requests
                  for c in trace.compactions)
    resent: Counter[str] = Counter()
    by_tool: Counter[str] = Counter()
    over = removable = 0
    saving = 0.0
    usage = usage_by_request(trace)
    ends = _result_ends(trace, usage, counter)
    for step in trace.steps:
        if step.response < 0:
            continue
        end = next((cut for cut in cuts if cut > step.response), requests)
        times = max(0, end - step.response - 1)
        size = counter.count(step.output)
        tokens = size * times
        if not tokens:
            continue
        kind = reach_of(trace.format, step.tool, failed=step.is_error)
        resent[kind] += tokens
        by_tool[step.tool] += tokens
        if kind != ROUTABLE:
            continue
        outputs.append(hooks_bounds.Output(
            step.response + 1, end, size,
            [(max(r, step.response + 1), text) for r, text in uses.get(step.i, [])
             if 0 <= r < end], step.output, hooks_bounds.seen_as(step.tool, step.args)))
        threshold = threshold_of(trace.format, step.tool, config, step.args)
        if threshold is not None and size > threshold:
            over += tokens
        shown = counter.count(needed_lines(step.output, needs.get(step.i, []))) \
            + PREVIEW_FRAME_TOKENS
        if shown < size:
            removable += (size - shown) * times
            span = (ends.get(step.i, 0) - size, ends.get(step.i, 0))
            saving += model.token_cost(size - shown, sum(
                _price(model, trace.format, usage.get(j), span, first=j == step.response + 1)
                for j in range(step.response + 1, end)))
    line = hooks_bounds.timeline(trace, usage, _zones, counter, requests)
    return Reach(session, client, requests, len(trace.compactions), resent, over, by_tool,
                 _recorded_input(trace), removable, recorded_cost(trace, model), saving,
                 hooks_bounds.bounds(line, outputs, counter, model) if line else None)


def pooled(group: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Shares pooled over ``group``'s rows: of the re-sent tool-result tokens, each
    class's (``routable``, ``not_routed``, ``no_hook``), ``over`` (of the routable ones,
    over OSIRIS's thresholds; None without any), ``of_recorded`` (of the recorded input;
    None unless every session recorded it) and ``ceiling`` (the clairvoyant hook's saving
    of the recorded bill, over the sessions with a bill per request; None without any)."""
    total = sum(r["tool_result_tokens_resent"] for r in group)
    routable = sum(r[_column(ROUTABLE)] for r in group)
    recorded = [r["recorded_input_tokens"] for r in group]
    billed = [r for r in group if r.get("recorded_billed_cost")]
    return {"total": total,
            "routable": routable / total if total else 0.0,
            "not_routed": sum(r[_column(NOT_ROUTED)] for r in group) / total if total else 0.0,
            "no_hook": sum(r[_column(NO_HOOK)] for r in group) / total if total else 0.0,
            "over": (sum(r["resent_routable_over_threshold"] for r in group) / routable
                     if routable else None),
            "of_recorded": (total / sum(recorded) if all(recorded) and sum(recorded)
                            else None),
            "ceiling": (sum(r["ceiling_billed_saving"] for r in billed)
                        / sum(r["recorded_billed_cost"] for r in billed) if billed else None)}


def _line(name: str, client: str, group: list[dict[str, Any]]) -> str:
    p = pooled(group)
    total = p["total"]
    tools: Counter[str] = Counter()
    for r in group:
        tools.update(json.loads(r["by_tool"]))
    top = ", ".join(f"`{t}` {n / total:.0%}" for t, n in tools.most_common(3)) if total else ""
    recorded, over = ("—" if p[key] is None else f"{p[key]:.0%}"
                      for key in ("of_recorded", "over"))
    ceiling = "—" if p["ceiling"] is None else f"{p['ceiling']:.1%}"
    return (f"| {name} | {client} | {sum(r['requests'] for r in group):,} | "
            f"{sum(r['compactions'] for r in group)} | {total:,} | {recorded} | "
            f"{p['routable']:.0%} | {over} | {p['not_routed']:.0%} | "
            f"{p['no_hook']:.0%} | {ceiling} | {top} |")


def render(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The table of :meth:`Reach.row` rows, one line per session and each client pooled."""
    if not rows:
        return []
    lines = ["| session | client | requests | compactions | tool-result tokens re-sent | "
             "of the recorded input | routable | of it over OSIRIS's thresholds | "
             "not routed | no hook | clairvoyant ceiling, of the recorded bill | "
             "largest tools |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    lines += [_line(r["session"], r["client"], [r]) for r in rows]
    for client in sorted({r["client"] for r in rows}):
        mine = [r for r in rows if r["client"] == client]
        if len(mine) > 1:
            lines.append(_line(f"**pooled, {len(mine)} sessions**", client, mine))
    return lines


CLIENT_FORMATS = ("claude-code", "codex-cli")
"""The formats of the clients OSIRIS hooks into (the other traces are agent loops)."""


def reach_rows(datasets: Path, counter: TokenCounter) -> list[dict[str, Any]]:
    """:meth:`Reach.row` of every Claude Code and Codex session under ``datasets``'s
    ``traces/`` (named as the real-client tables name them) and ``corpus/``
    (``corpus/codex/agentv-spark``)."""
    rows = []
    for folder in ("traces", "corpus"):
        root = datasets / folder
        if not root.is_dir():
            continue
        for path in find_traces(root):
            trace = load_trace(path)
            if trace.format not in CLIENT_FORMATS or not trace.steps:
                continue
            relative = path.relative_to(root)
            name = (f"corpus/{relative.with_suffix('')}" if folder == "corpus"
                    else str(relative.parent))
            rows.append(reach(trace, name, counter).row())
    return rows
