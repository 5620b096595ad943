"""Metrics of BENCHMARK.md §3: one row per system × session × parameter set."""

from __future__ import annotations

import json
from typing import Any

from osiris.core.cache_sim import simulate
from osiris.core.cost_models import CostModel
from osiris.harness.replay.turns import ReplayResult
from osiris.harness.replay.workloads import NEED_KINDS


def row_of(result: ReplayResult, models: tuple[CostModel, ...],
           params: dict[str, Any]) -> dict[str, Any]:
    """The metrics of one replay (net gains are filled in by :func:`add_net_gains`)."""
    tokens = result.prompt_tokens
    row: dict[str, Any] = {
        "workload": result.session.workload, "session": result.session.name,
        "size": result.session.size, "system": result.system,
        "steps": len(result.session.steps), "turns": len(tokens),
        "final_context_tokens": tokens[-1] if tokens else 0,
        "peak_context_tokens": max(tokens, default=0),
        "cumulative_input_tokens": sum(tokens),
        "overhead_tokens": result.overhead_tokens,
        "fixed_overhead_tokens": result.fixed_overhead_tokens,
        "needs_total": result.needs_total, "needs_found": result.needs_found,
        "answer_preservation": (result.needs_found / result.needs_total
                                if result.needs_total else 1.0),
        "extra_calls": result.extra_calls,
        "modes": json.dumps(dict(sorted(result.modes.items()))),
        "params": json.dumps(params, sort_keys=True),
        "client": result.client, "retrieval": result.retrieval,
        "source_client": result.session.client,
        "compactions": result.compactions, "head_tokens": result.head_tokens,
        "unseen_head_tokens": result.unseen_head_tokens,
    }
    for kind in NEED_KINDS:
        found, total = result.needs_by_kind.get(kind, (0, 0))
        row[f"needs_found_{kind}"] = found
        row[f"needs_total_{kind}"] = total
    for model in models:
        turns = simulate(result.prompts, model)
        row[f"billed_cost_{model.name}"] = round(sum(t.cost_usd for t in turns), 8)
        row[f"cache_read_tokens_{model.name}"] = sum(t.cache_read_tokens for t in turns)
    row["cost_model_version"] = models[0].version if models else ""
    return row


#: The baseline of every net gain: the bare client, as it really behaves.
BASELINE = "client-native"


def add_net_gains(rows: list[dict[str, Any]], models: tuple[CostModel, ...]) -> None:
    """``net_gain_* = 1 − system / bare client`` for each measure, against the same
    session's ``client-native`` row under the same client and retrieval model; also
    ``net_gain_vs_raw_cumulative_input_tokens`` against ``raw`` (every output verbatim);
    and, where OSIRIS's fixed session overhead is reported apart, the gain without it."""
    def key(r: dict[str, Any]) -> tuple[str, str, str]:
        return (r["workload"], r["session"], r["params"])

    base_rows = {key(r): r for r in rows if r["system"] == BASELINE}
    raw_rows = {key(r): r for r in rows if r["system"] == "raw"}
    measures = ["final_context_tokens", "peak_context_tokens", "cumulative_input_tokens"] + [
        f"billed_cost_{m.name}" for m in models]
    for row in rows:
        base = base_rows.get(key(row)) or raw_rows.get(key(row))
        raw = raw_rows.get(key(row))
        for measure in measures:
            value = row[measure]
            reference = base[measure] if base else None
            row[f"net_gain_{measure}"] = (round(1 - value / reference, 6)
                                          if reference else None)
        reference = raw["cumulative_input_tokens"] if raw else None
        row["net_gain_vs_raw_cumulative_input_tokens"] = (
            round(1 - row["cumulative_input_tokens"] / reference, 6) if reference else None)
        if base:
            # The seed's convention: the fixed cost of tool definitions and instructions
            # is amortised across a session's tasks and reported apart.
            per_task = row["final_context_tokens"] - row["fixed_overhead_tokens"]
            row["net_gain_final_excluding_fixed"] = round(
                1 - per_task / base["final_context_tokens"], 6)
