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
# # 04 · The real traces
#
# What the benchmark's real sessions look like (`datasets/traces`: Claude Code, Codex
# CLI, mini-swe-agent and SWE-agent transcripts; provenance in `SOURCES.md`). How many
# calls, how many output tokens and from which tools, how output sizes are spread
# across OSIRIS's engagement bands, how many information needs each session carries,
# and what each system re-sends over a session. QUICK mode looks at the smallest
# transcript of each format.

# %% tags=["parameters"]
REPO = ".."            # repository root, relative to notebooks/
REPORTS = "../reports" # where BENCHMARK.md and data/*.parquet are
QUICK = False          # True: a small, fast subset (used by the tests, must finish in < 60 s)

# %%
import matplotlib.pyplot as plt
import polars as pl
from IPython.display import display

from osiris.harness.notebook_kit import setup, short, show

repo, reports, traces_dir = setup(REPO, REPORTS)

# %%
import re

from osiris.config import Settings
from osiris.core.tokens import default_counter
from osiris.harness.reports import report
from osiris.harness.importers.traces import find_traces, load_trace
from osiris.harness.replay.workloads import TraceWorkload

counter = default_counter()
files = find_traces(traces_dir)
if QUICK:  # the smallest transcript of each format
    smallest = {}
    for path in sorted(files, key=lambda p: p.stat().st_size):
        smallest.setdefault(load_trace(path).format, path)
    files = sorted(smallest.values())


def program(tool: str, args: dict) -> str:
    """The tool, and for shell tools the program run (``bash: pytest``)."""
    command = str(args.get("command") or "")
    if tool not in ("Bash", "bash", "shell") or not command:
        return tool
    command = re.sub(r"^bash -lc\s+[\"']?", "", command.strip())
    for part in re.split(r"&&|;|\|\|", command):
        words = part.split()
        while words and "=" in words[0]:  # environment assignments before the program
            words.pop(0)
        if words and words[0] != "cd":
            name = words[0].strip("\"'")
            return f"{tool}: {name[:20]}"
    return tool


steps = []
for path in files:
    trace = load_trace(path)
    session = str(path.relative_to(traces_dir))
    for step in trace.steps:
        steps.append({"format": trace.format, "session": short(session), "step": step.i,
                      "tool": step.tool, "program": program(step.tool, step.args),
                      "is_error": step.is_error, "chars": len(step.output),
                      "tokens": counter.count(step.output)})
steps = pl.DataFrame(steps)
print(f"{len(files)} transcripts, {steps.height} tool outputs, "
      f"{steps['tokens'].sum():,} output tokens ({counter.encoding_name})")

# %% [markdown]
# ## Per format: calls and output tokens
#
# One row per agent format: how many transcripts and tool calls, the output tokens in
# total, and the median and largest single output. A few large outputs usually carry
# most of the tokens: compare the median with the mean.

# %%
(steps.group_by("format")
 .agg(pl.col("session").n_unique().alias("sessions"), pl.len().alias("calls"),
      pl.col("tokens").sum().alias("output tokens"),
      pl.col("tokens").mean().round(0).alias("mean"),
      pl.col("tokens").median().alias("median"), pl.col("tokens").max().alias("max"),
      pl.col("is_error").sum().alias("errors"))
 .sort("output tokens", descending=True))

# %% [markdown]
# ## Distribution of output sizes
#
# A histogram of the tokens of each tool output, per format, on a logarithmic axis
# (empty outputs are left out). The vertical lines are OSIRIS's engagement thresholds:
# below the first an output passes through verbatim (*bystander*); above it OSIRIS
# keeps the payload and shows a preview that grows in structure with the size.

# %%
defaults = Settings()
bands = [(defaults.engage_light_tokens, "bystander"),
         (defaults.engage_standard_tokens, "light"),
         (defaults.engage_full_tokens, "standard"), (float("inf"), "full")]
nonempty = steps.filter(pl.col("tokens") > 0)
top = max(nonempty["tokens"].max(), 10)
bins = [10 ** (k / 4) for k in range(0, int(4 * (len(str(top)))) + 1)]
fig, ax = plt.subplots(figsize=(8, 4))
for fmt in sorted(nonempty["format"].unique().to_list()):
    ax.hist(nonempty.filter(pl.col("format") == fmt)["tokens"].to_list(), bins=bins,
            histtype="step", linewidth=1.5, label=fmt)
for limit, _ in bands[:-1]:
    ax.axvline(limit, color="grey", linestyle=":")
ax.set_xscale("log")
ax.set_xlabel("output size (tokens, log scale)")
ax.set_ylabel("tool outputs")
ax.set_title("How big are tool outputs?")
ax.legend(fontsize=8)
fig.tight_layout()
show(fig)

# %% [markdown]
# ## Which tools produce the tokens
#
# Output tokens by tool, with shell tools split by the program they ran (`bash: cat`,
# `shell: sed`, …): the share of all output tokens, calls and the mean size. The
# chart shows the twelve largest producers.

# %%
by_tool = (steps.group_by("program")
           .agg(pl.len().alias("calls"), pl.col("tokens").sum().alias("tokens"),
                pl.col("tokens").mean().round(0).alias("mean"))
           .with_columns((pl.col("tokens") / pl.col("tokens").sum() * 100).round(1)
                         .alias("share %"))
           .sort("tokens", descending=True))
display(by_tool.head(20))
head = by_tool.head(12).reverse()
fig, ax = plt.subplots(figsize=(7, 4))
ax.barh(head["program"].to_list(), (head["tokens"] / 1e3).to_list())
ax.set_xlabel("output tokens (thousands)")
ax.set_title("Tools that fill the context")
fig.tight_layout()
show(fig)


# %% [markdown]
# ## Engagement bands
#
# How many outputs fall in each band of OSIRIS's adaptive engagement (by size alone,
# with the default thresholds: bystander < 300 tokens, light < 1,500, standard < 8,000,
# full beyond) and what share of the tokens they hold. Most calls are small and pass
# through untouched; most tokens are in the few large outputs OSIRIS takes out of the
# context. (The engine can still pick another mode for a payload: a duplicate, say.)

# %%
def band(tokens: int) -> str:
    """The engagement band of an output of ``tokens`` tokens."""
    return next(name for limit, name in bands if tokens < limit)


order = {name: i for i, (_, name) in enumerate(bands)}
(steps.with_columns(pl.col("tokens").map_elements(band, return_dtype=pl.String).alias("band"))
 .group_by("band").agg(pl.len().alias("outputs"), pl.col("tokens").sum().alias("tokens"))
 .with_columns((pl.col("outputs") / pl.col("outputs").sum() * 100).round(1).alias("% outputs"),
               (pl.col("tokens") / pl.col("tokens").sum() * 100).round(1).alias("% tokens"))
 .sort(pl.col("band").replace_strict(order)))

# %% [markdown]
# ## Information needs per session
#
# The benchmark's needs, derived mechanically from each transcript (see
# `osiris/harness/replay/workloads.py`): a string of an output (path, identifier, number) that
# the agent's later calls or messages use and that it had not seen before. Every system
# must give each need back exactly. Shown with a few examples per session.

# %%
names = tuple(str(p.relative_to(traces_dir)) for p in files)
needs = pl.DataFrame([
    {"session": short(s.name), "steps": len(s.steps), "needs": len(s.needs),
     "steps with needs": sum(1 for step in s.steps if step.needs),
     "examples": " · ".join(n.text for _, n in s.needs[:3])}
    for s in TraceWorkload(traces_dir, only=names).sessions()])
needs.sort("needs", descending=True)

# %% [markdown]
# ## What each system re-sends, per session (from the benchmark)
#
# From the benchmark's Parquet (`REPORTS/data/results.parquet`, which may cover other
# sessions than the ones above in QUICK mode): cumulative input tokens — every prompt of
# the session added up — per system. The chart uses a log scale because sessions span
# two orders of magnitude; within a session, bars closer to the oracle's are better.

# %%
results = pl.read_parquet(reports / "data" / "results.parquet").filter(
    (pl.col("workload") == "traces") & (pl.col("retrieval") == "visible")).with_columns(
    pl.col("session").map_elements(short, return_dtype=pl.String))
systems = [s for s in report.SYSTEMS if s in results["system"].unique().to_list()]
table = (results.pivot(on="system", index="session", values="cumulative_input_tokens")
         .select(["session", *systems]).sort("raw", descending=True))
display(table)
fig, ax = plt.subplots(figsize=(10, 4.5))
width = 0.8 / len(systems)
for k, system in enumerate(systems):
    # A peer runs only in the clients it integrates with: no bar where it did not run.
    bars = [(i + k * width, v) for i, v in enumerate(table[system].to_list())
            if v is not None]
    ax.bar([x for x, _ in bars], [v for _, v in bars], width, label=system)
ax.set_xticks([i + 0.4 - width / 2 for i in range(table.height)])
ax.set_xticklabels([s[:32] for s in table["session"].to_list()], rotation=40, ha="right",
                   fontsize=7)
ax.set_yscale("log")
ax.set_ylabel("cumulative input tokens (log)")
ax.set_title("Tokens re-sent over a session, per system")
ax.legend(fontsize=7)
fig.tight_layout()
show(fig)
