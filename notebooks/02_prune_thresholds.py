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
# # 02 · Tuning pruning: thresholds × modes, and a policy of your own
#
# OSIRIS takes large outputs out of the context (the agent keeps a ref and a preview)
# and, under pressure, advises the agent to drop payloads it still holds (each one
# restorable with `recall`). Two settings decide when and what: the **prune threshold**
# (`prune_threshold_tokens`, context size at which advice starts) and the **prune
# mode**:
#
# | mode | advice starts at | drops |
# |---|---|---|
# | `cache_ttl` (default) | threshold, or idle cache | old history; all once the cache expired |
# | `conservative` | 2 × threshold | older history only (not the last 3 payloads) |
# | `balanced` | threshold | everything but the newest payload |
# | `aggressive` | threshold / 2 | everything re-expandable |
#
# This notebook runs adaptive OSIRIS on the real traces under a grid of both, next to
# raw, and shows the trade-off. Then it plugs in a pruning policy written here, through
# the harness's `PruningPolicy` seam, without touching OSIRIS's core.

# %% tags=["parameters"]
REPO = ".."            # repository root, relative to notebooks/
REPORTS = "../reports" # where BENCHMARK.md and data/*.parquet are
QUICK = False          # True: a small, fast subset (used by the tests, must finish in < 60 s)

# %% [markdown]
# ## Setup
#
# QUICK runs two small but non-trivial sessions (a mini-swe-agent and a SWE-agent
# transcript) and a 2 × 2 grid; the full run takes every trace and the 5 × 4 grid
# (a few minutes: each setting replays every session through the real engine). Every
# OSIRIS system gets its own home in a temporary directory.

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import polars as pl

from osiris.harness.notebook_kit import setup, show

repo, reports, traces_dir = setup(REPO, REPORTS)

# %%
import tempfile

from osiris.harness.bench.tokens import run_matrix
from osiris.harness.systems.osiris_engine import FollowAdvice, NeverPrune, OsirisSystem
from osiris.harness.replay.turns import RawSystem
from osiris.harness.replay.workloads import TraceWorkload

only = ("django__django", "pydicom") if QUICK else ()
thresholds = (5_000, 20_000) if QUICK else (5_000, 10_000, 20_000, 40_000, 80_000)
modes = (("cache_ttl", "aggressive") if QUICK
         else ("cache_ttl", "conservative", "balanced", "aggressive"))
sessions = list(TraceWorkload(traces_dir, only=only).sessions())
workdir = Path(tempfile.mkdtemp(prefix="osiris-nb02-"))
print(f"{len(sessions)} sessions, {sum(len(s.steps) for s in sessions)} tool outputs, "
      f"{sum(len(s.needs) for s in sessions)} needs; "
      f"{len(thresholds) * len(modes)} settings")

# %% [markdown]
# ## The grid
#
# One OSIRIS system per (mode, threshold), each labelled `mode @ threshold`, plus raw as
# the baseline every net gain is measured against. `run_matrix` replays each session
# through each system and returns one metrics row per pair.

# %%
settings = {}
systems = [RawSystem()]
for mode in modes:
    for threshold in thresholds:
        label = f"{mode} @ {threshold // 1000}k"
        settings[label] = {"mode": mode, "threshold": threshold}
        systems.append(OsirisSystem(workdir / label.replace(" ", ""), label=label,
                                    settings_overrides={"prune_mode": mode,
                                                        "prune_threshold_tokens": threshold}))
# Pruning means eviction, which only an agent loop that owns its history can do: every
# session is replayed as one here (client="agent-loop"), whichever client produced it.
grid_rows = run_matrix(sessions, systems, params={"turn_seconds": 20},
                       client="agent-loop",
                       progress=lambda line: print(line, flush=True))


# %% [markdown]
# ## Totals per setting
#
# Summed over the sessions: cumulative input tokens, **tokens saved** against raw (what
# is no longer re-sent, turn after turn), the extra calls the agent needed to get
# information back (each is a model turn and a round trip), needs recovered, and the
# billed cost under Anthropic's 5-minute cache — pruning rewrites the prompt, which can
# cost cache reads, so cost and tokens need not move together.

# %%
def summarise(rows: list[dict]) -> pl.DataFrame:
    """One row per system: totals over sessions and the saving against raw."""
    frame = pl.DataFrame(rows, infer_schema_length=None)
    raw = frame.filter(pl.col("system") == "raw")["cumulative_input_tokens"].sum()
    return (frame.group_by("system")
            .agg(pl.col("cumulative_input_tokens").sum().alias("cumulative"),
                 pl.col("extra_calls").sum(), pl.col("needs_found").sum(),
                 pl.col("needs_total").sum(),
                 pl.col("billed_cost_anthropic-5m").sum().round(4).alias("cost_5m_usd"))
            .with_columns((raw - pl.col("cumulative")).alias("saved"),
                          ((1 - pl.col("cumulative") / raw) * 100).round(2)
                          .alias("saved_pct"))
            .sort("saved", descending=True))


grid = summarise(grid_rows)
grid


# %% [markdown]
# ## The trade-off: tokens saved against extra calls
#
# Each point is one setting: colour is the mode, size the threshold (bigger = later).
# Up is better (a larger share of raw's cumulative input saved), left is better (fewer
# extra calls). Raw, the reference, would sit at (0, 0) and is left out. The dashed line
# joins the **Pareto front**, the settings no other setting beats on both axes at once;
# they are outlined and named. A setting off the front is dominated: another saves at
# least as much with no more calls. An X marks a setting that lost a need (a saving
# that loses information is not a saving). Along the front, moving right buys tokens
# with round trips: a lower threshold or a more aggressive mode drops more, and each
# dropped payload the agent still needs comes back through a `recall` that costs a turn.

# %%
def pareto_front(summary: pl.DataFrame) -> list[str]:
    """Systems not dominated on (fewer extra calls, more tokens saved), raw left out."""
    front, best = [], float("-inf")
    candidates = summary.filter(pl.col("system") != "raw")
    for row in candidates.sort(["extra_calls", "saved"],
                               descending=[False, True]).iter_rows(named=True):
        if row["saved"] > best:
            front.append(row["system"])
            best = row["saved"]
    return front


def plot_front(summary: pl.DataFrame, title: str) -> list[str]:
    """Saved share vs extra calls; front dashed and named, lost needs as X."""
    front = pareto_front(summary)
    points = summary.filter(pl.col("system") != "raw")

    def group(system: str) -> str:  # the legend entry: a grid setting's mode, else itself
        return settings.get(system, {}).get("mode", system)

    groups = sorted({group(s) for s in points["system"]},
                    key=lambda g: (modes.index(g) if g in modes else 9, g))
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    colour = {g: palette[k % len(palette)] for k, g in enumerate(groups)}
    fig, ax = plt.subplots(figsize=(9, 5.5))
    for row in points.iter_rows(named=True):
        threshold = settings.get(row["system"], {}).get("threshold", 40_000)
        ax.scatter(row["extra_calls"], row["saved_pct"], s=20 + threshold / 400,
                   marker="X" if row["needs_found"] < row["needs_total"] else "o",
                   color=colour[group(row["system"])], alpha=0.8,
                   edgecolor="black" if row["system"] in front else "none")
    on_front = points.filter(pl.col("system").is_in(front)).sort("extra_calls")
    for k, row in enumerate(on_front.iter_rows(named=True)):
        ax.annotate(row["system"], (row["extra_calls"], row["saved_pct"]), fontsize=7,
                    xytext=(6, -10 if k % 2 else 5), textcoords="offset points")
    ax.step(on_front["extra_calls"], on_front["saved_pct"], where="post",
            linestyle="--", color="grey", label="Pareto front")
    for g in groups:
        ax.scatter([], [], color=colour[g], label=g)
    ax.set_xlabel("extra calls (retrievals), all sessions")
    ax.set_ylabel("cumulative input saved vs raw (%)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    show(fig)
    return front


front = plot_front(grid, "Prune threshold × mode on real traces")
print("Pareto front:", ", ".join(front))

# %% [markdown]
# The settings on the front, cheapest in calls first. The default (`cache_ttl` at
# 40,000 tokens) is only in the full grid; in QUICK mode its row is absent.

# %%
grid.filter(pl.col("system").is_in(front)).sort("extra_calls")

# %% [markdown]
# ## Tokens are not the bill
#
# Dropping a payload rewrites the prompt from that point on, so the provider's cache
# misses and the rest of the prompt is written to the cache again. The same settings,
# now as billed cost under Anthropic's 5-minute cache (x) against tokens saved (y); the
# vertical line is raw's bill. Settings that save about the same tokens can differ
# several-fold in cost: a setting that prunes often, early in the prompt, pays for it
# in cache writes. Left and up is better.

# %%
raw_cost = grid.filter(pl.col("system") == "raw")["cost_5m_usd"].item()
fig, ax = plt.subplots(figsize=(8, 4.5))
for mode in modes:
    part = grid.filter(pl.col("system").is_in(
        [s for s, v in settings.items() if v["mode"] == mode]))
    ax.scatter(part["cost_5m_usd"], part["saved_pct"], label=mode,
               s=[20 + settings[s]["threshold"] / 400 for s in part["system"]], alpha=0.8)
ax.axvline(raw_cost, color="black", linewidth=0.8, linestyle=":", label="raw's bill")
ax.set_xlabel("billed cost, anthropic-5m (USD, all sessions)")
ax.set_ylabel("cumulative input saved vs raw (%)")
ax.set_title("Same tokens, different bills")
ax.legend(fontsize=8)
fig.tight_layout()
show(fig)


# %% [markdown]
# ## A pruning policy of your own
#
# The harness asks a `PruningPolicy` which refs to drop after each output:
# `choose(advice, held, context_tokens)` gets OSIRIS's own advice (or `None`), the
# outputs the context still holds (`.ref`, `.tokens`, `.step`, `.text`, `.mode` —
# how OSIRIS engaged it — and `.source_tokens`, the size of the output it stands for)
# and the context size, and returns the refs to drop. Here is one that ignores the
# advice: **drop every externalized payload older than the last two outputs**. An
# externalized payload is one OSIRIS replaced by its ref and preview (any mode but
# `bystander`); small outputs left verbatim stay. It is compared with the default policy (follow
# OSIRIS's advice) and with never pruning, on the same sessions and default settings.

# %%
class DropOldPreviews:
    """Drop every externalized payload older than the last ``keep`` outputs."""

    name = "drop-old-previews"

    def __init__(self, keep: int = 2) -> None:
        self.keep = keep

    def choose(self, advice, held, context_tokens):
        recent = set(sorted({item.step for item in held})[-self.keep:])
        old = {item.ref for item in held
               if item.step not in recent and item.mode != "bystander"}
        # A ref shown again recently (a duplicate output) is still in use: keep it.
        return sorted(old - {item.ref for item in held if item.step in recent})


policies = {"follow-advice (default)": FollowAdvice(), "never-prune": NeverPrune(),
            "drop-old-previews": DropOldPreviews(keep=2)}
policy_systems = [RawSystem()] + [
    OsirisSystem(workdir / f"policy-{k}", policy=policy, label=label)
    for k, (label, policy) in enumerate(policies.items())]
policy_rows = run_matrix(sessions, policy_systems, params={"turn_seconds": 20},
                         client="agent-loop")
policy_summary = summarise(policy_rows)
policy_summary

# %% [markdown]
# The same picture for the three policies: where the custom one lands against the
# default and against keeping everything. Nothing in `osiris/core` changed — the policy
# lives in this notebook and reaches the engine through `OsirisSystem(policy=...)`.

# %%
policy_front = plot_front(policy_summary, "Pruning policies at default settings")
print("Pareto front:", ", ".join(policy_front))

# %%
import shutil

shutil.rmtree(workdir, ignore_errors=True)
