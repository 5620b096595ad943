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
# # 01 · The benchmark tables, regenerated from the Parquet
#
# `reports/BENCHMARK.md` is generated, so it must say exactly what
# `reports/data/results.parquet` says. This notebook renders the report again from the
# Parquet with the same function the benchmark uses (`osiris.harness.reports.report.render`) and
# **fails** if the tables differ from the committed file. Then it lays out the key
# tables as data frames, for a reader who wants to sort, filter or plot them.

# %% tags=["parameters"]
REPO = ".."            # repository root, relative to notebooks/
REPORTS = "../reports" # where BENCHMARK.md and data/*.parquet are
QUICK = False          # True: a small, fast subset (used by the tests, must finish in < 60 s)

# %% [markdown]
# ## Setup
#
# One row per system × session × parameter set. `workload` is `sweep` (payloads cut to
# one size), `traces` (real agent sessions) or `breakeven` (a finer sweep of small sizes
# that locates where adaptive OSIRIS starts to win).

# %%
import polars as pl
from IPython.display import display

from osiris.harness.notebook_kit import setup, short

repo, reports, traces_dir = setup(REPO, REPORTS)

# %%
from IPython.display import Markdown

from osiris.harness.bench import tokens
from osiris.harness.reports import report
from osiris.server.footprint import footprint

parquet = reports / "data" / "results.parquet"
rows = pl.read_parquet(parquet).to_dicts()
# Which peers ran, with their versions, or the exact error (absent: none attempted).
peers_parquet = reports / "data" / "peers.parquet"
peers = pl.read_parquet(peers_parquet).to_dicts() if peers_parquet.exists() else []
# What the hooks can reach in the recorded sessions (absent in runs before it was counted).
reach_parquet = reports / "data" / "reach.parquet"
reach = pl.read_parquet(reach_parquet).to_dicts() if reach_parquet.exists() else []
pl.DataFrame(rows, infer_schema_length=None).group_by("workload").agg(
    pl.len().alias("rows"), pl.col("session").n_unique().alias("sessions"),
    pl.col("system").n_unique().alias("systems")).sort("workload")

# %% [markdown]
# ## Break-even payload sizes
#
# Computed by the function the benchmark stage uses
# (`osiris.harness.bench.tokens.break_even_summary`): from the `breakeven` rows, the
# payload size where the net gain of adaptive OSIRIS crosses zero, interpolated
# linearly between the two sizes that bracket it, for three measures. `None` means it
# never crosses within the sizes run.

# %%
even = tokens.break_even_summary(rows)
even


# %% [markdown]
# ## The check: rendered report = committed report
#
# The run section (run id, commit, machine) differs from run to run by design and is
# left out of the comparison (`report.body_of`); the run metadata is taken from the
# rows themselves, which carry it. Everything else — every token figure, cost and goal
# line — must be identical. On a difference the cell raises `AssertionError` naming
# the first line that differs; regenerate with `python bench/run_bench.py --stage
# benchmark` (or `nox -s bench`) rather than editing the report by hand.

# %%
def first_difference(expected: str, actual: str) -> str | None:
    """The first differing line of two texts, described for a reader (None if equal)."""
    a, b = expected.splitlines(), actual.splitlines()
    for number, (x, y) in enumerate(zip(a, b, strict=False), 1):
        if x != y:
            return f"line {number}:\n  committed: {x!r}\n  rendered:  {y!r}"
    if len(a) != len(b):
        number = min(len(a), len(b)) + 1
        extra = (a if len(a) > len(b) else b)[number - 1]
        which = "committed" if len(a) > len(b) else "rendered"
        return f"line {number}: only the {which} report has {extra!r}"
    return None


committed_path = reports / "BENCHMARK.md"
assert committed_path.exists(), f"{committed_path} is missing: run the benchmark first"
rendered = report.render(rows, footprint(), even, peers=peers,
                         real_clients=report.clients_section_of(reports, rows[0]["run_id"]),
                         reach=reach)
committed = committed_path.read_text("utf-8")
difference = first_difference(report.body_of(committed), report.body_of(rendered))
assert difference is None, (
    f"{committed_path} is not what {parquet} renders; first difference at {difference}\n"
    "Regenerate both with `python bench/run_bench.py --stage benchmark`.")
print(f"OK: {committed_path.name} matches {parquet.name} "
      f"({len(report.body_of(rendered).splitlines())} lines compared, run "
      f"{rows[0]['run_id']} at {rows[0]['commit'][:12]})")

# %% [markdown]
# ## The seed's table, reproduced
#
# The first table of the report, as it renders: our figures for each payload size beside
# the seed's. *Net gain* is `1 − adaptive / raw` on the final context with OSIRIS's
# fixed cost (tool definitions and instructions) amortised, as the seed reported it; the
# last column puts that fixed cost back.

# %%
display(Markdown("\n".join(report.seed_table(rows))))

# %% [markdown]
# ## The sweep: net gain by payload size and system
#
# Each cell is `1 − system / raw` in percent, for the same session: positive means the
# system's prompt is smaller than raw's. The first table is the final context (the
# prompt at the last turn), the second the cumulative input (every prompt of the
# session added up — what is re-sent and billed turn after turn). Read down a column to
# see how a system scales with payload size; the oracle column is the physical limit.

# %%
sweep = pl.DataFrame([r for r in rows if r["workload"] == "sweep"], infer_schema_length=None)
order = [s for s in report.SYSTEMS if s in sweep["system"].unique().to_list()]


def gains(frame: pl.DataFrame, measure: str) -> pl.DataFrame:
    """Net gain in percent, one row per payload size, one column per system."""
    return (frame.with_columns((pl.col(measure) * 100).round(2).alias("gain"))
            .pivot(on="system", index="size", values="gain").sort("size")
            .select(["size", *order]))


display(Markdown("**Final context, net gain vs raw (%)**"))
display(gains(sweep, "net_gain_final_context_tokens"))
display(Markdown("**Cumulative input, net gain vs raw (%)**"))
display(gains(sweep, "net_gain_cumulative_input_tokens"))

# %% [markdown]
# ## Real agent sessions: totals per system
#
# All trace sessions added up, per system: cumulative input tokens, the billed cost
# under each cost model (from the prompt-cache simulator), how many information needs
# came back exactly, and how many extra calls the retrievals took. `vs raw` is the net
# gain on cumulative input. A saving only counts if `needs found = needs total`.

# %%
traces = pl.DataFrame([r for r in rows if r["workload"] == "traces"
                       and r["retrieval"] == "visible"],
                      infer_schema_length=None)
costs = [f"billed_cost_{m}" for m in report.COST_MODELS]
totals = (traces.group_by("system")
          .agg(pl.col("cumulative_input_tokens").sum(), *[pl.col(c).sum() for c in costs],
               pl.col("needs_found").sum(), pl.col("needs_total").sum(),
               pl.col("extra_calls").sum()))
raw_total = totals.filter(pl.col("system") == "raw")["cumulative_input_tokens"].item()
totals = (totals.with_columns(
              ((1 - pl.col("cumulative_input_tokens") / raw_total) * 100).round(2)
              .alias("vs raw (%)"),
              *[pl.col(c).round(4) for c in costs])
          .sort(pl.col("system").replace_strict(
              {s: i for i, s in enumerate(report.SYSTEMS)}, default=99)))
totals

# %% [markdown]
# ## Per session: cumulative input by system
#
# One row per real session (the name is the agent format and the transcript), the
# cumulative input each system sends over the whole session. Sessions differ by two
# orders of magnitude, so compare across a row, not down a column.

# %%
(traces.with_columns(pl.col("session").map_elements(short, return_dtype=pl.String))
 .pivot(on="system", index=["session", "steps", "needs_total"],
        values="cumulative_input_tokens")
 .select(["session", "steps", "needs_total",
          *[s for s in report.SYSTEMS if s in traces["system"].unique().to_list()]])
 .sort("raw", descending=True))
