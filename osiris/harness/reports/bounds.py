"""What a hook could save on a recorded session when the client compacts as it really
does, by how much the hook knows of the session's future.

The clairvoyant ceiling of :mod:`osiris.harness.reports.reach` keeps every compaction
where the author's client made it. A client that compacts when its prompt reaches a
threshold (Claude Code proactively, Codex at its limit) compacts *later* when a hook keeps
tokens out, and until it does every request carries the whole history where the author's
carried a summary. Here each session's requests are replayed as sizes, with the client's
compaction rule, under three hooks:

* **clairvoyant** — as in ``reach``: each routable output shown as the lines the agent
  later quoted, in OSIRIS's preview frame, never recalled;
* **knows the outputs** — knows, when an output arrives, whether and when the agent will
  use it, but not which lines: it keeps out only the outputs where that pays (counted
  with the compactions where they were recorded), shows the frame alone or its first
  :data:`PREVIEW_LINES` lines, whichever saves more, and recalls the lines each later
  response uses (an extra request, and the lines back in the prompt);
* **no foresight** — every routable output over the frame shown as its first
  :data:`PREVIEW_LINES` lines in the frame, with the same recalls;
* **by rule** — a hook that decides by what it sees when an output arrives (its tool and
  size, a command's kind, a read's range or file type: :data:`RULES`), with the same
  previews and recalls: each rule's saving, for a report to choose one on the tuning
  sessions and show it on the unseen ones (:func:`chosen_rule`).

The model, per request ``j`` of the session's usage records: the prompt ``P[j]`` (the
provider's input tokens), the answer ``O[j]``, the part read from the cache. Between two
requests the prompt grows by ``P[j] - P[j-1]``; across a compaction of the record (where
the history was replaced) by the answer before it and the session's median growth. The
client compacts after an answer when its prompt and that answer reach the threshold
(:func:`threshold`); the compaction is a request that reads the prompt from the cache and
writes the summary (its recorded size, at the output price), after which the prompt is the
recorded post-compaction size and results before it are gone. Each request reads the
previous prompt from the cache (only the client's head after a compaction, or where the
recorded request found its cache expired), writes the rest, and pays its answer. The bare
session is priced by the same model, under the same rule (the savings are against it).
Sizes mix the provider's counts (prompts) with cl100k's (results), as ``reach`` does.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from osiris.core.cost_models import CostModel
from osiris.core.routing import READ_TOOLS, SHELL_TOOLS
from osiris.core.shell import output_kind
from osiris.core.tokens import TokenCounter
from osiris.engine.routing import PREVIEW_FRAME_TOKENS
from osiris.harness.importers.records import Trace

PREVIEW_LINES = 20
"""The head a hook without foresight shows (of 0, 10, 20, 40 and 100 lines, 20 saved the
most on the Claude Code sessions with compactions kept where recorded)."""
RECALL_TOKENS = 100
"""A recall request's own tokens written to the prompt: the call and its answer's frame."""
RECALL_OUTPUT_TOKENS = 60
"""The tokens the model writes to ask for a recall."""
CLIENT_THRESHOLD = {"claude-code": 167_000, "codex-cli": 245_000}
"""Where each client compacts at the latest (FACTS.md): Claude Code 2.1 proactively on a
200k-token window, Codex at ``model_auto_compact_token_limit`` of a 272k window."""


@dataclass(frozen=True)
class Timeline:
    """A session's requests as sizes (see the module docstring)."""

    prompt: list[int]
    output: list[int]
    growth: list[int]
    arriving: list[int]
    """Tool-result tokens that first appear in request ``j``."""
    cuts: frozenset[int]
    """The first request after each recorded compaction."""
    expired: list[bool]
    head: int
    base: int
    summary: int
    threshold: int

    @property
    def requests(self) -> int:
        return len(self.prompt)


@dataclass
class Plan:
    """What a hook does: ``(start, arrival, tokens)`` kept out of the prompt from request
    ``start`` on (negative: put back by a recall) for a result that arrived in request
    ``arrival`` (gone with it at a compaction), and extra recall requests before ``j``."""

    kept_out: list[tuple[int, int, int]] = field(default_factory=list)
    recalls: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Run:
    """A priced replay of a timeline under a plan."""

    cost: float
    compactions: int
    tool_tokens_resent: int


def threshold(prompt: Sequence[int], output: Sequence[int], cuts: frozenset[int],
              cap: int) -> int:
    """Where the client compacts: after the answer whose prompt and answer reach the lowest
    that a recorded compaction followed, at most ``cap`` (the client's own rule), and above
    every prompt and answer that did not compact (so that the bare session compacts where
    its author's did)."""
    before = [p + o for j, (p, o) in enumerate(zip(prompt, output, strict=True))
              if j + 1 not in cuts]
    made = [prompt[c - 1] + output[c - 1] for c in cuts if 0 < c <= len(prompt)]
    return max(max(before, default=0) + 1, min([*made, cap]))


def timeline(trace: Trace, usage: dict[int, dict[str, Any]], zones: Any,
             counter: TokenCounter, requests: int) -> Timeline | None:
    """``trace``'s requests as sizes, from its usage records by request (``zones``:
    :func:`osiris.harness.reports.reach._zones`); None without usage per request."""
    if not usage or requests < 2:
        return None
    prompt: list[int] = []
    output: list[int] = []
    cached: list[int] = []
    for j in range(requests):
        record = usage.get(j)
        if record is None:  # not logged: as the request before it
            prompt.append(prompt[-1] if prompt else 0)
            output.append(0)
            cached.append(prompt[-1])
            continue
        read, _, total = zones(trace.format, record)
        prompt.append(total)
        output.append(int(record.get("output_tokens") or 0))
        cached.append(read)
    cuts = frozenset(trace.steps[c.step].response if c.step < len(trace.steps) else requests
                     for c in trace.compactions)
    steps = [p - prompt[j - 1] for j, p in enumerate(prompt)
             if j > 0 and j not in cuts and j in usage and j - 1 in usage]
    median = int(statistics.median(steps)) if steps else 0
    growth = [0] + [output[j - 1] + median if j in cuts else prompt[j] - prompt[j - 1]
                    for j in range(1, requests)]
    arriving = [0] * requests
    for step in trace.steps:
        if 0 <= step.response < requests - 1:
            arriving[step.response + 1] += counter.count(step.output)
    after = [c for c in sorted(cuts) if c < requests]
    head = min([cached[c] for c in after] + [cached[0]])
    summaries = [counter.count(c.summary) for c in trace.compactions if c.summary]
    return Timeline(
        prompt, output, growth, arriving, cuts,
        expired=[j > 0 and j not in cuts and cached[j] < prompt[j - 1] / 2
                 for j in range(requests)],
        head=head,
        base=int(statistics.mean(prompt[c] for c in after)) if after else 0,
        summary=int(statistics.mean(summaries)) if summaries else 0,
        threshold=threshold(prompt, output, cuts,
                            CLIENT_THRESHOLD.get(trace.format, CLIENT_THRESHOLD["claude-code"])))


def simulate(line: Timeline, plan: Plan, model: CostModel, *, moved: bool) -> Run:
    """Price ``plan`` on ``line``: compactions where the client makes them (``moved``) or
    where the author's client made them."""
    cost = 0.0
    compactions = resent = 0
    previous = growing = start = out = arrived = 0
    due = False
    starting: dict[int, list[tuple[int, int]]] = {}
    for first, arrival, tokens in plan.kept_out:
        starting.setdefault(first, []).append((arrival, tokens))
    for j in range(line.requests):
        fresh = j == 0
        if j and ((moved and due) or (not moved and j in line.cuts)):
            cost += model.token_cost(previous, model.read_multiplier) \
                + model.output_cost(line.summary)
            compactions += 1
            growing = line.prompt[j] if j in line.cuts else line.base + line.growth[j]
            start, fresh, out, arrived = j, True, 0, 0
        elif j:
            growing += line.growth[j]
        else:
            growing = line.prompt[0]
        if j and plan.recalls.get(j):
            cost += plan.recalls[j] * (
                model.token_cost(previous, model.read_multiplier)
                + model.token_cost(RECALL_TOKENS, model.write_multiplier)
                + model.output_cost(RECALL_OUTPUT_TOKENS))
        out += sum(tokens for arrival, tokens in starting.get(j, ()) if arrival >= start)
        arrived += line.arriving[j]
        size = max(0, growing - out)
        read = min(size, line.head if fresh or line.expired[j] else previous)
        cost += model.token_cost(read, model.read_multiplier) \
            + model.token_cost(size - read, model.write_multiplier) \
            + model.output_cost(line.output[j])
        resent += max(0, arrived - out)
        due = size + line.output[j] >= line.threshold
        previous = size
    return Run(cost, compactions, resent)


@dataclass(frozen=True)
class Output:
    """One routable result as a plan sees it."""

    arrival: int
    """The first request that carries it."""
    end: int
    """The first request after the recorded compaction that drops it (or the session's end)."""
    tokens: int
    needs: list[tuple[int, str]]
    """``(request, text)``: each later quote of it, by the request whose answer used it."""
    text: str
    seen: str = "other"
    """What a hook sees of it when it arrives (:func:`seen_as`)."""


def _recalls(out: Output, shown: str, counter: TokenCounter) -> list[tuple[int, int]]:
    """``(request, tokens)`` of each recall a hook showing ``shown`` pays: one before each
    request that uses a line not shown and not recalled yet, bringing that line back."""
    got: list[str] = []
    calls = []
    for request in sorted({r for r, _ in out.needs}):
        want = [text for r, text in out.needs if r == request
                and text not in shown and not any(text in g for g in got)]
        lines = [line for line in out.text.split("\n") if any(t in line for t in want)]
        if lines:
            got += lines
            calls.append((request, counter.count("\n".join(lines)) + RECALL_TOKENS))
    return calls


def _gain(out: Output, shown_tokens: int, calls: list[tuple[int, int]], line: Timeline,
          model: CostModel) -> float:
    """What showing ``shown_tokens`` and paying ``calls`` saves against showing ``out``
    whole (input-price tokens), with the compactions where they were recorded."""
    def carried(first: int) -> float:
        n = max(0, out.end - first)
        return (model.write_multiplier + model.read_multiplier * (n - 1)) if n else 0.0
    gain = (out.tokens - shown_tokens) * carried(out.arrival)
    for request, tokens in calls:
        gain -= line.prompt[request - 1] * model.read_multiplier \
            + RECALL_TOKENS * model.write_multiplier \
            + RECALL_OUTPUT_TOKENS * model.output_usd_per_mtok / model.input_usd_per_mtok \
            + tokens * carried(request)
    return gain


def clairvoyant(outputs: Sequence[Output], counter: TokenCounter) -> Plan:
    plan = Plan()
    for out in outputs:
        shown = counter.count("\n".join(line for line in out.text.split("\n")
                                        if any(t in line for _, t in out.needs))) \
            + PREVIEW_FRAME_TOKENS
        if shown < out.tokens:
            plan.kept_out.append((out.arrival, out.arrival, out.tokens - shown))
    return plan


def previewed(outputs: Sequence[Output], counter: TokenCounter, line: Timeline,
              model: CostModel, *, lines: Sequence[int], choose: bool) -> Plan:
    """Show each output as its first ``lines[0]`` lines in the frame and recall what a
    later response uses; ``choose`` (a hook that knows the outputs): the number of lines
    of ``lines`` that saves the most, or the whole output where none saves."""
    plan = Plan()
    for out in outputs:
        options = []
        for count in lines:
            shown = "\n".join(out.text.split("\n")[:count]) if count else ""
            shown_tokens = (counter.count(shown) if shown else 0) + PREVIEW_FRAME_TOKENS
            if shown_tokens >= out.tokens:
                continue
            calls = _recalls(out, shown, counter)
            gain = _gain(out, shown_tokens, calls, line, model) if choose else 0.0
            options.append((gain, shown_tokens, calls))
            if not choose:
                break
        if not options:
            continue
        gain, shown_tokens, calls = max(options, key=lambda option: option[0])
        if choose and gain <= 0:
            continue
        plan.kept_out.append((out.arrival, out.arrival, out.tokens - shown_tokens))
        for request, tokens in calls:
            plan.kept_out.append((request, out.arrival, -tokens))
            plan.recalls[request] = plan.recalls.get(request, 0) + 1
    return plan


HOOKS = ("clairvoyant", "knows_outputs", "no_foresight")

SOURCE_SUFFIXES = frozenset({
    ".c", ".cc", ".cpp", ".cs", ".go", ".h", ".hpp", ".java", ".js", ".jsx", ".kt", ".mjs",
    ".php", ".py", ".rb", ".rs", ".sh", ".svelte", ".swift", ".ts", ".tsx", ".vue"})


def seen_as(tool: str, args: dict[str, Any]) -> str:
    """What a hook sees of an output when it arrives: ``log`` or ``shell`` (a command's
    output, by :func:`~osiris.core.shell.output_kind`), ``range`` (a read with an offset
    or limit), ``source`` or ``text`` (a whole-file read of source code or of anything
    else), ``other``."""
    if tool in SHELL_TOOLS:
        command = args.get("command", args.get("cmd", ""))
        return "log" if output_kind(command if isinstance(command, str) else "") == "log" \
            else "shell"
    if tool in READ_TOOLS:
        if args.get("offset") or args.get("limit"):
            return "range"
        path = args.get("file_path")
        suffix = path.rsplit(".", 1)[-1].lower() if isinstance(path, str) and "." in path \
            else ""
        return "source" if f".{suffix}" in SOURCE_SUFFIXES else "text"
    return "other"


RULES: dict[str, tuple[frozenset[str], int]] = {
    "shell outputs from 600 tokens": (frozenset({"log", "shell"}), 600),
    "shell outputs from 2,000 tokens": (frozenset({"log", "shell"}), 2_000),
    "logs from 300 tokens": (frozenset({"log"}), 300),
    "ranged reads from 1,000 tokens": (frozenset({"range"}), 1_000),
    "whole reads of non-source files from 1,000 tokens": (frozenset({"text"}), 1_000),
    "whole reads of source files from 3,000 tokens": (frozenset({"source"}), 3_000),
    "every output from 600 tokens": (frozenset(), 600),
    "every output from 1,500 tokens": (frozenset(), 1_500)}
"""Rules a hook can apply to what it sees of an output (:func:`seen_as`; an empty set:
any), each alone and with the next (:func:`rules`), each showing the frame or the first
:data:`PREVIEW_LINES` lines."""


def rules() -> dict[str, list[tuple[frozenset[str], int]]]:
    """Every rule of :data:`RULES` alone, and the shell rule with each read rule, by name."""
    named = {name: [rule] for name, rule in RULES.items()}
    shell = RULES["shell outputs from 600 tokens"]
    reads = [name for name, (kinds, _) in RULES.items() if kinds and kinds <= {
        "range", "text", "source"}]
    named["shell outputs from 600 tokens, " + " and ".join(reads[:2])] = \
        [shell, RULES[reads[0]], RULES[reads[1]]]
    for name in reads:
        named[f"shell outputs from 600 tokens and {name}"] = [shell, RULES[name]]
    return named


def _applies(rule: list[tuple[frozenset[str], int]], out: Output) -> bool:
    return any((not kinds or out.seen in kinds) and out.tokens >= least
               for kinds, least in rule)


def bounds(line: Timeline, outputs: Sequence[Output], counter: TokenCounter,
           model: CostModel) -> dict[str, Any]:
    """The modelled bare bill and each hook's saving of it, with the client's compactions
    (``saving_<hook>``), and the clairvoyant hook's with compactions kept where recorded
    against the bare session's with the same (``saving_clairvoyant_fixed``, to set beside
    ``reach``'s ceiling); the re-sent tool-result tokens of each run and the compactions
    made. The bare session runs under the client's rule too, which makes the recorded
    compactions where one threshold can (every Claude Code session here)."""
    fixed_bare = simulate(line, Plan(), model, moved=False)
    bare = simulate(line, Plan(), model, moved=True)
    plans = {"clairvoyant": clairvoyant(outputs, counter),
             "knows_outputs": previewed(outputs, counter, line, model,
                                        lines=(0, PREVIEW_LINES), choose=True),
             "no_foresight": previewed(outputs, counter, line, model,
                                       lines=(PREVIEW_LINES,), choose=False)}
    row: dict[str, Any] = {"modelled_bare_cost": bare.cost,
                           "modelled_bare_compactions": bare.compactions,
                           "modelled_bare_tool_tokens_resent": bare.tool_tokens_resent}
    fixed = simulate(line, plans["clairvoyant"], model, moved=False)
    row["saving_clairvoyant_fixed"] = 1 - fixed.cost / fixed_bare.cost if fixed_bare.cost \
        else 0.0
    for name, plan in plans.items():
        run = simulate(line, plan, model, moved=True)
        row[f"saving_{name}"] = 1 - run.cost / bare.cost if bare.cost else 0.0
        row[f"compactions_{name}"] = run.compactions
        row[f"tool_tokens_resent_{name}"] = run.tool_tokens_resent
    by_rule = {}
    for name, rule in rules().items():
        chosen = [out for out in outputs if _applies(rule, out)]
        for count, shown in ((0, "the frame"), (PREVIEW_LINES, f"{PREVIEW_LINES} lines")):
            plan = previewed(chosen, counter, line, model, lines=(count,), choose=False)
            cost = simulate(line, plan, model, moved=True).cost
            by_rule[f"{name}; {shown}"] = round(1 - cost / bare.cost if bare.cost else 0.0, 6)
    row["saving_by_rule"] = json.dumps(by_rule)
    return row


def pooled(rows: Sequence[dict[str, Any]]) -> dict[str, float] | None:
    """Each hook's saving of the modelled bills pooled over ``rows`` (``reach`` rows; those
    without usage per request left out), ``clairvoyant_fixed`` included; None without any."""
    rows = [r for r in rows if r.get("modelled_bare_cost")]
    if not rows:
        return None
    bare = sum(r["modelled_bare_cost"] for r in rows)
    return {hook: sum(r[f"saving_{hook}"] * r["modelled_bare_cost"] for r in rows) / bare
            for hook in ("clairvoyant_fixed", *HOOKS)}


def chosen_rule(tuning: Sequence[dict[str, Any]]) -> tuple[str, float] | None:
    """The rule of ``saving_by_rule`` that saves the most of the modelled bills pooled over
    the ``tuning`` rows, and that saving; None without any."""
    tuning = [r for r in tuning if r.get("modelled_bare_cost") and r.get("saving_by_rule")]
    if not tuning:
        return None
    return max(((name, rule_saving(tuning, name)) for name in json.loads(
        tuning[0]["saving_by_rule"])), key=lambda pair: pair[1])


def rule_saving(rows: Sequence[dict[str, Any]], name: str) -> float:
    """Rule ``name``'s saving of the modelled bills pooled over ``rows``."""
    rows = [r for r in rows if r.get("modelled_bare_cost") and r.get("saving_by_rule")]
    bare = sum(r["modelled_bare_cost"] for r in rows)
    return sum(json.loads(r["saving_by_rule"])[name] * r["modelled_bare_cost"]
               for r in rows) / bare if bare else 0.0
