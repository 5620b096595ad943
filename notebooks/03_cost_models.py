# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 03 · Cost models and the cost of drift
#
# Tokens are not dollars: providers cache the prompt's prefix and bill cached tokens at
# a fraction of the price, writes at a premium, within a time-to-live. This notebook
# (1) compares what each system's prompts cost under each bundled cost model, from the
# benchmark's Parquet; (2) measures with the real engine what a *drift* costs — a change
# near the start of the prompt that forces the provider to prefill everything after
# it again; (3) defines a cost model of its own and reruns the benchmark under it.

# %% tags=["parameters"]
REPO = ".."            # repository root, relative to notebooks/
REPORTS = "../reports" # where BENCHMARK.md and data/*.parquet are
QUICK = False          # True: a small, fast subset (used by the tests, must finish in < 60 s)

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import polars as pl
from IPython.display import display

from osiris.harness.notebook_kit import setup, short, show

repo, reports, traces_dir = setup(REPO, REPORTS)

# %% [markdown]
# ## The cost models
#
# The cost models bundled with OSIRIS (version-stamped data in
# `osiris/core/data/cost_models.toml`): price per million input tokens, multipliers for
# cache writes and reads, the minimum cacheable prefix, the cache TTL and how a prefix
# is matched (`breakpoints`: at marked boundaries, Anthropic; `any_prefix`: any segment
# boundary rounded to 128 tokens, OpenAI; `none`: no cache).

# %%
import json
import tempfile

from osiris.config import Settings
from osiris.core.cost_models import CostModel, default_cost_models
from osiris.core.tokens import default_counter
from osiris.engine import Engine
from osiris.harness.reports import report
from osiris.harness.bench.tokens import Matrix, run_matrix
from osiris.harness.importers.traces import find_traces, load_trace
from osiris.harness.replay.workloads import TraceWorkload
from osiris.server.definitions import model_facing

models = default_cost_models()
rows = pl.read_parquet(reports / "data" / "results.parquet")
traces = rows.filter((pl.col("workload") == "traces") & (pl.col("retrieval") == "visible"))
pl.DataFrame([{"name": m.name, "input $/MTok": m.input_usd_per_mtok,
               "write ×": m.write_multiplier, "read ×": m.read_multiplier,
               "min cacheable": m.min_cacheable_tokens, "ttl s": m.ttl_s,
               "matching": m.matching} for m in models.models])

# %% [markdown]
# ## Billed cost per system, all trace sessions
#
# Every prompt of every session is billed by the cache simulator under each model, and
# summed over sessions. The first table is in US dollars; the second divides by raw's
# cost under the same model, so it reads as "fraction of raw's bill" (lower is better).

# %%
cost_cols = {f"billed_cost_{m}": m for m in report.COST_MODELS}
by_system = (traces.group_by("system").agg(*[pl.col(c).sum().alias(m)
                                             for c, m in cost_cols.items()])
             .sort(pl.col("system").replace_strict(
                 {s: i for i, s in enumerate(report.SYSTEMS)}, default=99)))
raw_cost = by_system.filter(pl.col("system") == "raw")
relative = by_system.select("system", *[(pl.col(m) / raw_cost[m].item()).round(3).alias(m)
                                        for m in cost_cols.values()])
display(by_system.with_columns(*[pl.col(m).round(4) for m in cost_cols.values()]))
display(relative)

# %% [markdown]
# The same figures as grouped bars: left, dollars (one group per system, one bar per
# cost model); right, the fraction of raw's bill. Caching narrows the gap between
# systems in dollars — a prompt raw re-sends unchanged is mostly billed at the read
# price — which is why the benchmark reports both tokens and cost.

# %%
systems_order = by_system["system"].to_list()
names = list(cost_cols.values())
width = 0.8 / len(names)
fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
for ax, frame, label in ((axes[0], by_system, "billed cost (USD)"),
                         (axes[1], relative, "fraction of raw's cost")):
    for k, name in enumerate(names):
        ax.bar([i + k * width for i in range(len(systems_order))], frame[name].to_list(),
               width, label=name)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(systems_order))])
    ax.set_xticklabels(systems_order, rotation=30, ha="right")
    ax.set_ylabel(label)
axes[1].axhline(1, color="black", linewidth=0.6)
axes[0].legend(fontsize=8)
fig.suptitle("Real traces: billed cost per system under each cost model")
fig.tight_layout()
show(fig)

# %% [markdown]
# ## The cost of drift
#
# OSIRIS models the prompt as zones: the system **head** first, then the **tool
# contract** (with objective and plan), then pinned constraints, then the working set
# and history. A provider's cache serves the longest unchanged prefix, so a change in
# the head invalidates everything (*critical* drift, prefill from token 0), a change in
# the contract everything after it (*minor* drift). The engine prices each drift as a
# **PrefillPlan**: the tokens to prefill again, what that costs at the write price, and
# the extra over the cache read it replaces.
#
# The experiment, run once per cost model in a fresh OSIRIS home: record a head of
# about 3,000 tokens of real text (a SWE-agent system prompt followed by the dataset's
# own documentation) and the tool contract (OSIRIS's six tool definitions as the model
# sees them); then put a timestamp at the top of the head — the classic cache killer —
# and, separately, edit one tool description.

# %%
counter = default_counter()


def cut(text: str, limit: int) -> str:
    """The first ``limit`` tokens of ``text``, at a line boundary."""
    kept, total = [], 0
    for line in text.split("\n"):
        total += counter.count(line + "\n")
        if total > limit:
            break
        kept.append(line)
    return "\n".join(kept)


swe = next(p for p in find_traces(traces_dir) if p.suffix == ".traj")
head = cut("\n\n".join([load_trace(swe).system_prompt or "",
                         (traces_dir / "NORMALIZATION.md").read_text("utf-8"),
                         (traces_dir / "SOURCES.md").read_text("utf-8")]), 3_000)
contract = json.dumps(model_facing(), separators=(",", ":"))
stamped_head = "Current date: 2026-03-02 09:14:07 UTC\n" + head
edited_contract = contract.replace('"description":"', '"description":"(v2) ', 1)
print(f"head {counter.count(head):,} tokens, contract {counter.count(contract):,} tokens")


# %% [markdown]
# How to read it: `from_token` is where the prefill starts (0 for the head: the whole
# prompt; after the head for the contract), `tokens` how many are prefilled again,
# `cost_usd` their price at the write multiplier and `extra_cost_usd` what that adds to
# the cache read the turn would otherwise have been. The last column is the bill of a
# prompt that drifts like this on every one of 100 turns (a timestamp refreshed each
# turn does exactly that). With no cache there is nothing to lose, so the extra is 0.
# `volatile found` lists what OSIRIS flagged in the new text (the timestamp) so that an
# agent can move it out of the cached prefix.

# %%
def drift_costs(model_name: str) -> list[dict]:
    """Critical and minor drift under one cost model, measured by a real engine."""
    with tempfile.TemporaryDirectory() as home:
        # A fixed task id: ids appear in answers the engine counts, so a random one
        # would move the token figures from run to run.
        engine = Engine(Settings(home=Path(home)), cost_model=model_name,
                        task_ids=lambda: "t_notebook03")
        try:
            task = engine.plan("start", objective="fix the pixel-data bug")["task_id"]
            engine.observe(task, "head", result=head)
            engine.observe(task, "contract", result=contract)
            critical = engine.observe(task, "head", result=stamped_head)
            minor = engine.observe(task, "contract", result=edited_contract)
        finally:
            engine.close()
    out = []
    for change, answer in (("timestamp in head", critical), ("tool description", minor)):
        drift = answer["drift"]
        out.append({"cost_model": model_name, "change": change, "verdict": drift["verdict"],
                    **drift["prefill"],
                    "volatile found": ", ".join(v["kind"] for v in
                                                answer.get("volatile", []))})
    return out


drift = pl.DataFrame([row for name in models.names for row in drift_costs(name)])
drift.with_columns(
    (pl.col("extra_cost_usd") * 100).round(4).alias("extra per 100 turns (USD)"))

# %% [markdown]
# The extra cost of one drift, per cost model (in thousandths of a dollar): a head
# change costs more than a contract change because everything after token 0 is
# prefilled again, and the 1-hour cache costs most because its writes are dearest.

# %%
fig, ax = plt.subplots(figsize=(7, 3.8))
changes = drift["change"].unique(maintain_order=True).to_list()
for k, change in enumerate(changes):
    part = drift.filter(pl.col("change") == change)
    ax.bar([i + k * 0.4 for i in range(part.height)], part["extra_cost_usd"] * 1000, 0.4,
           label=change)
ax.set_xticks([i + 0.2 for i in range(len(models.names))])
ax.set_xticklabels(models.names)
ax.set_ylabel("extra cost per drift (USD / 1000)")
ax.set_title("What one drift costs beyond a cache read")
ax.legend(fontsize=8)
fig.tight_layout()
show(fig)

# %% [markdown]
# ## A cost model of your own
#
# `run_matrix(..., models=...)` takes any `CostModel`. Here, a hypothetical provider:
# same input price as Anthropic's Sonnet-class model, cache writes at 1.25×, **reads at
# 0.05×** and a **30-minute TTL**. A twin with a 5-minute TTL isolates the TTL's effect.
# Both run beside two bundled models on a small set of sessions through the five
# standard systems. The table: total billed cost in USD over these sessions, one row per
# system, one column per cost model.

# %%
from dataclasses import replace

custom = CostModel(name="hypothetical-30m", provider="hypothetical",
                   representative="a provider with cheap, long-lived cache reads",
                   input_usd_per_mtok=3.0, write_multiplier=1.25, read_multiplier=0.05,
                   min_cacheable_tokens=1024, granularity_tokens=1, ttl_s=1800,
                   matching="breakpoints", version="notebook-03")
custom_5m = replace(custom, name="hypothetical-5m", ttl_s=300)
compared = (custom, custom_5m, models.get("anthropic-5m"), models.get("no-cache"))

only = ("django__django", "pydicom") if QUICK else ("django__django", "pydicom", "pytest-dev")
small = list(TraceWorkload(traces_dir, only=only).sessions())
workdir = Path(tempfile.mkdtemp(prefix="osiris-nb03-"))
custom_rows = run_matrix(small, Matrix(workdir).systems("custom"), models=compared,
                         params={"turn_seconds": 20})
custom_frame = pl.DataFrame(custom_rows, infer_schema_length=None)
(custom_frame.group_by("system")
 .agg(*[pl.col(f"billed_cost_{m.name}").sum().round(5).alias(m.name) for m in compared])
 .sort(pl.col("system").replace_strict({s: i for i, s in enumerate(report.SYSTEMS)},
                                       default=99)))

# %% [markdown]
# The replay spaces turns 20 seconds apart (`osiris.harness.replay.turns.TURN_SECONDS`), so
# no cache entry outlives a 5-minute TTL between turns: the two hypothetical columns
# should be equal (checked below), and what moves the bill is the read multiplier. A
# TTL matters only when the agent idles longer than it (a human reading, a long test
# run) — a replay with real timestamps is what would show it. Then, net gains against
# raw under the custom model, per session (percent):

# %%
from osiris.harness.replay.turns import TURN_SECONDS

same = custom_frame["billed_cost_hypothetical-30m"].equals(
    custom_frame["billed_cost_hypothetical-5m"])
print(f"turns {TURN_SECONDS:.0f} s apart; 30-minute and 5-minute TTL bill the same: {same}")
(custom_frame.with_columns(pl.col("session").map_elements(short, return_dtype=pl.String),
                           (pl.col("net_gain_billed_cost_hypothetical-30m") * 100).round(2)
                           .alias("gain"))
 .pivot(on="system", index="session", values="gain"))

# %%
import shutil

shutil.rmtree(workdir, ignore_errors=True)
