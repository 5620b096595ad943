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
# # 05 · Replay your own sessions
#
# Where do the tokens of *your* agent sessions go, and what would each way of keeping
# tool output leave in the context? Run `osiris replay <your transcripts> --parquet
# <dir>` (Claude Code session files live under `~/.claude/projects`, Codex rollouts
# under `~/.codex/sessions`) and point `REPLAY_DIR` at `<dir>`. Left empty, the notebook
# replays the bundled traces itself with the same command.

# %% tags=["parameters"]
REPO = ".."            # repository root, relative to notebooks/
REPORTS = "../reports" # where BENCHMARK.md and data/*.parquet are
QUICK = False          # True: a small, fast subset (used by the tests, must finish in < 60 s)
REPLAY_DIR = ""    # `osiris replay ... --parquet DIR`; empty: bundled traces

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import polars as pl

from osiris.harness.notebook_kit import setup, show

repo, reports, traces_dir = setup(REPO, REPORTS)

# %% [markdown]
# ## The replay
#
# `osiris replay` writes three tables: `sessions.parquet` (one row per session and
# system: cumulative input, billed cost under each cost model, needs preserved, extra
# calls, LoopGuard flags, provider usage where the transcript has it), `steps.parquet`
# (one row per session, system and tool call: the output's tokens, what the system
# kept when it arrived and what it still held at the end) and `loopguard.parquet`.

# %%
import shutil
import subprocess
import sys
import tempfile

from IPython.display import Markdown

from osiris.harness.user_sessions import display_names
from osiris.harness.importers.traces import find_traces

workdir = Path(tempfile.mkdtemp(prefix="osiris-nb05-"))
if REPLAY_DIR:
    replay_dir = Path(REPLAY_DIR)
else:
    source = traces_dir
    if QUICK:  # two small transcripts, in the same folder layout
        source = workdir / "traces"
        for path in find_traces(traces_dir):
            if any(k in str(path) for k in ("django__django", "pydicom")):
                target = source / path.relative_to(traces_dir)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(path, target)
    replay_dir = workdir / "replay"
    done = subprocess.run([sys.executable, "-m", "osiris", "replay", "--quiet",
                           "--parquet", str(replay_dir), str(source)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    print(done.stdout)
sessions = pl.read_parquet(replay_dir / "sessions.parquet")
steps = pl.read_parquet(replay_dir / "steps.parquet")
flags = pl.read_parquet(replay_dir / "loopguard.parquet")
names = sessions["session"].unique(maintain_order=True).to_list()
label = dict(zip(names, display_names(names, width=48), strict=True))
print(f"{sessions['session'].n_unique()} sessions, {steps.height} step rows, "
      f"{flags.height} LoopGuard flags")

# %% [markdown]
# ## Per session
#
# Cumulative input (every prompt of the session added up: what is paid for) for each
# system, with the net gain against raw and the needs each one got back.

# %%
per_session = (sessions.select("session", "system", "tool_calls", "cumulative_input_tokens",
                               "net_gain_cumulative_input_tokens", "needs_found",
                               "needs_total", "extra_calls", "loopguard_flags")
               .with_columns(pl.col("session").replace_strict(label),
                             (pl.col("net_gain_cumulative_input_tokens") * 100).round(1)
                             .alias("net gain %"))
               .drop("net_gain_cumulative_input_tokens"))
per_session.pivot(on="system", index="session", values="cumulative_input_tokens")

# %%
totals = (sessions.group_by("system")
          .agg(pl.col("cumulative_input_tokens").sum(),
               *[pl.col(c).sum().round(4) for c in sessions.columns
                 if c.startswith("billed_cost_")],
               pl.col("needs_found").sum(), pl.col("needs_total").sum(),
               pl.col("extra_calls").sum())
          .sort("cumulative_input_tokens", descending=True))
totals

# %% [markdown]
# ## Where the tokens go, by tool
#
# Output tokens per tool across all sessions (counted once per output: the `raw` rows),
# with the number of calls and the share of the total. The tools at the top are where
# keeping output out of the context pays.

# %%
outputs = steps.filter(pl.col("system") == "raw")
by_tool = (outputs.group_by("tool")
           .agg(pl.len().alias("calls"), pl.col("output_tokens").sum().alias("tokens"))
           .with_columns((pl.col("tokens") / pl.col("tokens").sum() * 100).round(1)
                         .alias("share %"))
           .sort("tokens", descending=True))
display(by_tool)
top = by_tool.head(10).reverse()
fig, ax = plt.subplots(figsize=(7, 3.5))
ax.barh([str(t) for t in top["tool"].to_list()], (top["tokens"] / 1e3).to_list())
ax.set_xlabel("output tokens (thousands)")
ax.set_title("Output tokens by tool")
fig.tight_layout()
show(fig)

# %% [markdown]
# ## Where the tokens go, by payload size
#
# The same tokens grouped by the size of the output that carried them, in OSIRIS's
# engagement bands (from the default settings): many small outputs, few large ones,
# and the large ones hold the tokens.

# %%
from osiris.config import Settings

defaults = Settings()
limits = [(defaults.engage_light_tokens, "1 bystander"), (defaults.engage_standard_tokens,
          "2 light"), (defaults.engage_full_tokens, "3 standard"), (float("inf"), "4 full")]


def band(tokens: int) -> str:
    """The engagement band of an output of ``tokens`` tokens."""
    return next(name for limit, name in limits if tokens < limit)


steps = steps.with_columns(
    pl.col("output_tokens").map_elements(band, return_dtype=pl.String).alias("band"))
outputs = steps.filter(pl.col("system") == "raw")
(outputs.group_by("band")
 .agg(pl.len().alias("outputs"), pl.col("output_tokens").sum().alias("tokens"))
 .with_columns((pl.col("tokens") / pl.col("tokens").sum() * 100).round(1).alias("share %"))
 .sort("band"))

# %% [markdown]
# ## What each system keeps
#
# For each size band, what each system kept of the outputs: *on arrival* (right after
# the output came back) and *at the end* (after pruning, clearing or spilling). Raw
# keeps everything; the oracle keeps only the strings used later; OSIRIS keeps small
# outputs and a ref plus preview of large ones (a duplicate or an empty output can cost
# a few tokens more than it had); the client's own handling spills very large outputs
# to a file and, past 100,000 tokens of context, clears old results.

# %%
systems = [str(s) for s in steps["system"].unique(maintain_order=True)]
kept = (steps.group_by("band", "system")
        .agg(pl.col("output_tokens").sum(), pl.col("kept_tokens").sum(),
             pl.col("final_tokens").sum()).sort("band", "system"))
for measure in ("kept_tokens", "final_tokens"):
    display(Markdown(f"**{measure}** by size band"))
    display(kept.pivot(on="system", index="band", values=measure).sort("band")
            .select("band", *systems))
whole = outputs["output_tokens"].sum()
held = steps.group_by("system").agg(pl.col("kept_tokens").sum(), pl.col("final_tokens").sum())
share = {(row["system"], m): row[m] / max(whole, 1) * 100
         for row in held.iter_rows(named=True) for m in ("kept_tokens", "final_tokens")}
fig, ax = plt.subplots(figsize=(7, 3.5))
for k, (measure, legend) in enumerate((("kept_tokens", "on arrival"),
                                       ("final_tokens", "at the end"))):
    ax.bar([i + k * 0.4 for i in range(len(systems))],
           [share[(s, measure)] for s in systems], 0.4, label=legend)
ax.set_xticks([i + 0.2 for i in range(len(systems))])
ax.set_xticklabels(systems)
ax.set_ylabel("% of output tokens held")
ax.set_title("What each system holds of the tool outputs")
ax.legend(fontsize=8)
fig.tight_layout()
show(fig)

# %% [markdown]
# ## LoopGuard, and the provider's own counts
#
# What LoopGuard would have said about the calls (every non-allow verdict, and allow
# verdicts carrying a LoopGuard note), and, where the transcript carries provider
# usage, the provider's input tokens beside our raw estimate. The estimate counts only
# what the transcript shows: the client's system prompt, tool definitions and memory
# files are usually not in it, and the client's turns are not always one per tool call.

# %%
display(flags.select([c for c in ("session", "step", "tool", "call", "verdict", "patterns")
                      if c in flags.columns]).with_columns(
    pl.col("session").replace_strict(label))
    if flags.height else Markdown("No call was flagged."))
usage = (sessions.filter((pl.col("system") == "raw")
                         & pl.col("provider_input_tokens").is_not_null())
         .select("session", "format", pl.col("cumulative_input_tokens").alias("our estimate"),
                 pl.col("provider_input_tokens").alias("provider"),
                 "provider_cache_breaks")
         .with_columns(pl.col("session").replace_strict(label),
                       (pl.col("our estimate") / pl.col("provider")).round(2).alias("ratio")))
usage if usage.height else Markdown("No transcript carries provider usage.")

# %%
shutil.rmtree(workdir, ignore_errors=True)
