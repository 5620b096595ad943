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
# # 06 · The payoff: replaying and tuning OSIRIS's routing decisions
#
# In Claude Code, OSIRIS routes an output (keeps it out of the prompt, shows a preview
# and a ref) only when the cache arithmetic says it pays (`osiris/core/payoff.py`): the
# tokens kept out of every later request until the next compaction, against the
# expected price of asking for the rest back. Every decision is journaled as a
# `route.payoff` event with every number it was made from, so it can be replayed here
# under other constants without running anything again.
#
# This notebook plays Claude Code sessions of the corpus through OSIRIS as its hooks
# see them (the replay's `claude-code` profile: the shell outputs a hook is given, the
# prompt's size at the last request), reads the decisions back from the OSIRIS home's
# journal, checks that they replay exactly, then varies the constants. Tune on the
# **tuning** half (`osiris/harness/tuning.py`) and read the **unseen** half only to
# check; what the table below calls a saving is the decision's own estimate, in
# input-price tokens: what a user pays is measured by the real-client stage
# (`osiris bench clients`), where a new constant has to prove itself.

# %% tags=["parameters"]
REPO = ".."            # repository root, relative to notebooks/
REPORTS = "../reports" # where BENCHMARK.md and data/*.parquet are
QUICK = False          # True: one small session per half (used by the tests)
HOME = ""              # an OSIRIS home to read instead of replaying (e.g. your ~/.osiris)

# %% [markdown]
# ## The decisions
#
# Each session is replayed in its own client profile; OSIRIS's home is kept, and its
# journal holds one `route.payoff` event per output the hooks weighed.

# %%
import json
import tempfile
from pathlib import Path

import duckdb
import polars as pl

from osiris.harness.notebook_kit import setup
from osiris.harness.tuning import TUNING, UNSEEN, half_of
from osiris.harness.user_sessions import collect, replay_sessions

repo, reports, traces_dir = setup(REPO, REPORTS)
corpus = repo / "datasets"
quick = {"corpus/claude-code/imessage-mail", "corpus/claude-code/mclaude-worktree-2.0.72"}
chosen = sorted(quick if QUICK else TUNING | UNSEEN)


def decisions_of(home: Path) -> pl.DataFrame:
    """Every ``route.payoff`` event of a home, one row each, with its task."""
    with duckdb.connect(str(home / "osiris.duckdb"), read_only=True) as con:
        rows = con.execute("SELECT seq, task_id, body FROM events "
                           "WHERE kind = 'route.payoff' ORDER BY seq").fetchall()
    return pl.DataFrame([{"seq": seq, "task_id": task, **json.loads(body)}
                         for seq, task, body in rows], infer_schema_length=None)


frames = []
if HOME:
    frames.append(decisions_of(Path(HOME).expanduser()).with_columns(
        pl.lit("your home").alias("session"), pl.lit("yours").alias("half")))
else:
    workdir = Path(tempfile.mkdtemp(prefix="osiris-nb06-"))
    for name in chosen:
        home = workdir / name.replace("/", "_")
        run = replay_sessions(collect([str(corpus / f"{name}.jsonl")]), home=home)
        assert run.sessions, run.files_skipped
        frames.append(decisions_of(home).with_columns(
            pl.lit(name.rsplit("/", 1)[-1]).alias("session"),
            pl.lit(half_of(name)).alias("half")))
decisions = pl.concat(frames, how="diagonal_relaxed")
print(f"{decisions.height} decisions in {decisions['session'].n_unique()} sessions; "
      f"routed {decisions['route'].sum()}")
decisions.group_by("half", "session", "kind").agg(
    pl.len().alias("outputs"), pl.col("route").sum().alias("routed"),
    pl.col("result_tokens").median().alias("median tokens"),
    pl.col("prompt_tokens").median().alias("median prompt")).sort("half", "session")

# %% [markdown]
# ## They replay exactly
#
# Recomputed from the journaled inputs with the default constants, every decision comes
# out as OSIRIS made it: the journal is enough to study them.

# %%
from osiris.core.payoff import PayoffConstants, decide

INPUTS = ("kind", "result_tokens", "shown_tokens", "prompt_tokens", "requests_so_far",
          "compaction_at_tokens")


def replay(frame: pl.DataFrame, constants: PayoffConstants) -> pl.DataFrame:
    """Each decision made again under ``constants``: routed or not, and its estimate."""
    again = [decide(**{k: row[k] for k in INPUTS}, constants=constants)
             for row in frame.iter_rows(named=True)]
    return frame.with_columns(
        pl.Series("route_again", [d.route for d in again]),
        pl.Series("net_again", [d.saving - d.recall_cost for d in again]))


default = replay(decisions, PayoffConstants())
mismatched = default.filter(pl.col("route") != pl.col("route_again"))
assert mismatched.is_empty(), mismatched
print(f"all {default.height} decisions replay as journaled")

# %% [markdown]
# ## Other constants
#
# The two constants that move most decisions: the chance that the agent needs what a
# shell output's preview left out (`recall_shell`, default 0.2) and the margin the net
# saving must clear (`margin`, default 0.25). For each pair: the outputs routed and the
# estimated net saving of the routed ones (input-price tokens), per half. Choose on the
# tuning rows; the unseen rows say whether the choice carries over.

# %%
grid = []
for recall_shell in (0.1, 0.2, 0.3, 0.5):
    for margin in (0.0, 0.25, 0.5):
        constants = PayoffConstants(recall_shell=recall_shell, margin=margin)
        again = replay(decisions, constants).filter(pl.col("route_again"))
        for half in decisions["half"].unique().sort():
            part = again.filter(pl.col("half") == half)
            grid.append({"half": half, "recall_shell": recall_shell, "margin": margin,
                         "routed": part.height,
                         "estimated net saving": round(part["net_again"].sum())})
pl.DataFrame(grid).pivot(on="half", index=["recall_shell", "margin"],
                         values=["routed", "estimated net saving"])

# %% [markdown]
# ## Where the estimate is least sure
#
# The decisions closest to the line (net saving within 10% of the margin) are the ones a
# change of constants flips; their sizes and prompts say which outputs a better
# estimate of the recall chance would decide.

# %%
close = default.with_columns(
    ((pl.col("saving") - pl.col("recall_cost")) / pl.col("saving").clip(lower_bound=1))
    .alias("net share"))
close.filter((pl.col("net share") - PayoffConstants().margin).abs() < 0.1).select(
    "session", "kind", "result_tokens", "shown_tokens", "prompt_tokens",
    "future_requests", "net share", "route", "what").head(20)
