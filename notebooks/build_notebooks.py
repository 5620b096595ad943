"""Write the research notebooks of ``notebooks/`` from this one reviewable script.

``python notebooks/build_notebooks.py`` regenerates the five ``.ipynb`` files: no outputs
are stored and cell ids are fixed, so the files change only when this script does.
Each notebook starts with a title and a cell tagged ``parameters`` (REPO, REPORTS,
QUICK, …) that :func:`osiris.harness.notebooks.execute` overrides; ``QUICK = True`` runs
a small subset in well under a minute (the tests), ``QUICK = False`` the full study
(``nox -s notebooks``).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}

PARAMETERS = '''
REPO = ".."            # repository root, relative to notebooks/
REPORTS = "../reports" # where BENCHMARK.md and data/*.parquet are
QUICK = False          # True: a small, fast subset (used by the tests, must finish in < 60 s)
'''

# Shared by every notebook: paths, plotting without a display, readable tables.
SETUP = '''
from io import BytesIO
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import polars as pl
from IPython.display import Image, display

repo = Path(REPO).resolve()
reports = Path(REPORTS).resolve()
traces_dir = repo / "datasets" / "traces"
pl.Config.set_tbl_rows(80)
pl.Config.set_tbl_cols(24)
pl.Config.set_fmt_str_lengths(60)
pl.Config.set_tbl_width_chars(200)


def show(fig) -> None:
    """Show a figure inline: Agg draws it headless, the notebook keeps the PNG."""
    png = BytesIO()
    fig.savefig(png, format="png", dpi=100)
    plt.close(fig)
    display(Image(png.getvalue()))


def short(session: str) -> str:
    """A readable session name: the agent format and what tells the transcript apart."""
    fmt, _, rest = session.partition("__")
    parts = [p for p in rest.split("/")[1:] if p not in ("agent_log_raw.txt", "execute")]
    name = "/".join(parts).removesuffix(".traj.json").removesuffix(".traj")
    return f"{fmt}: {name}" if name else session
'''


def md(text: str) -> nbformat.NotebookNode:
    """A prose cell."""
    return new_markdown_cell(textwrap.dedent(text).strip("\n"))


def code(text: str) -> nbformat.NotebookNode:
    """A code cell."""
    return new_code_cell(textwrap.dedent(text).strip("\n"))


def parameters(extra: str = "") -> nbformat.NotebookNode:
    """The cell the runner overrides (papermill's convention: tagged ``parameters``)."""
    cell = code(PARAMETERS + extra)
    cell.metadata["tags"] = ["parameters"]
    return cell


def notebook(cells: list[nbformat.NotebookNode]) -> nbformat.NotebookNode:
    """A notebook with fixed cell ids (so regenerating it is byte-for-byte stable)."""
    nb = new_notebook(cells=cells)
    for index, cell in enumerate(nb.cells):
        cell.id = f"cell-{index:02d}"
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = {"name": "python"}
    return nb


# -- 01 ------------------------------------------------------------------------------

REPORT_TABLES = [
    md("""
    # 01 · The benchmark tables, regenerated from the Parquet

    `reports/BENCHMARK.md` is generated, so it must say exactly what
    `reports/data/results.parquet` says. This notebook renders the report again from the
    Parquet with the same function the benchmark uses (`osiris.harness.report.render`) and
    **fails** if the tables differ from the committed file. Then it lays out the key
    tables as data frames, for a reader who wants to sort, filter or plot them.
    """),
    parameters(),
    md("""
    ## Setup

    One row per system × session × parameter set. `workload` is `sweep` (payloads cut to
    one size), `traces` (real agent sessions) or `breakeven` (a finer sweep of small sizes
    that locates where adaptive OSIRIS starts to win).
    """),
    code(SETUP),
    code('''
    from IPython.display import Markdown

    from osiris.harness import benchmark, report
    from osiris.server.footprint import footprint

    parquet = reports / "data" / "results.parquet"
    rows = pl.read_parquet(parquet).to_dicts()
    # Which peers ran, with their versions, or the exact error (absent: none attempted).
    peers_parquet = reports / "data" / "peers.parquet"
    peers = pl.read_parquet(peers_parquet).to_dicts() if peers_parquet.exists() else []
    pl.DataFrame(rows, infer_schema_length=None).group_by("workload").agg(
        pl.len().alias("rows"), pl.col("session").n_unique().alias("sessions"),
        pl.col("system").n_unique().alias("systems")).sort("workload")
    '''),
    md("""
    ## Break-even payload sizes

    Computed by the function the benchmark stage uses
    (`osiris.harness.benchmark.break_even_summary`): from the `breakeven` rows, the
    payload size where the net gain of adaptive OSIRIS crosses zero, interpolated
    linearly between the two sizes that bracket it, for three measures. `None` means it
    never crosses within the sizes run.
    """),
    code('''
    even = benchmark.break_even_summary(rows)
    even
    '''),
    md("""
    ## The check: rendered report = committed report

    The run section (run id, commit, machine) differs from run to run by design and is
    left out of the comparison (`report.body_of`); the run metadata is taken from the
    rows themselves, which carry it. Everything else — every token figure, cost and goal
    line — must be identical. On a difference the cell raises `AssertionError` naming
    the first line that differs; regenerate with `python bench/run_bench.py --stage
    benchmark` (or `nox -s bench`) rather than editing the report by hand.
    """),
    code('''
    def first_difference(expected: str, actual: str) -> str | None:
        """The first differing line of two texts, described for a reader (None if equal)."""
        a, b = expected.splitlines(), actual.splitlines()
        for number, (x, y) in enumerate(zip(a, b, strict=False), 1):
            if x != y:
                return f"line {number}:\\n  committed: {x!r}\\n  rendered:  {y!r}"
        if len(a) != len(b):
            number = min(len(a), len(b)) + 1
            extra = (a if len(a) > len(b) else b)[number - 1]
            which = "committed" if len(a) > len(b) else "rendered"
            return f"line {number}: only the {which} report has {extra!r}"
        return None


    committed_path = reports / "BENCHMARK.md"
    assert committed_path.exists(), f"{committed_path} is missing: run the benchmark first"
    rendered = report.render(rows, footprint(), even, peers=peers,
                             real_clients=report.clients_section_of(reports))
    committed = committed_path.read_text("utf-8")
    difference = first_difference(report.body_of(committed), report.body_of(rendered))
    assert difference is None, (
        f"{committed_path} is not what {parquet} renders; first difference at {difference}\\n"
        "Regenerate both with `python bench/run_bench.py --stage benchmark`.")
    print(f"OK: {committed_path.name} matches {parquet.name} "
          f"({len(report.body_of(rendered).splitlines())} lines compared, run "
          f"{rows[0]['run_id']} at {rows[0]['commit'][:12]})")
    '''),
    md("""
    ## The seed's table, reproduced

    The first table of the report, as it renders: our figures for each payload size beside
    the seed's. *Net gain* is `1 − adaptive / raw` on the final context with OSIRIS's
    fixed cost (tool definitions and instructions) amortised, as the seed reported it; the
    last column puts that fixed cost back.
    """),
    code('''
    display(Markdown("\\n".join(report.seed_table(rows))))
    '''),
    md("""
    ## The sweep: net gain by payload size and system

    Each cell is `1 − system / raw` in percent, for the same session: positive means the
    system's prompt is smaller than raw's. The first table is the final context (the
    prompt at the last turn), the second the cumulative input (every prompt of the
    session added up — what is re-sent and billed turn after turn). Read down a column to
    see how a system scales with payload size; the oracle column is the physical limit.
    """),
    code('''
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
    '''),
    md("""
    ## Real agent sessions: totals per system

    All trace sessions added up, per system: cumulative input tokens, the billed cost
    under each cost model (from the prompt-cache simulator), how many information needs
    came back exactly, and how many extra calls the retrievals took. `vs raw` is the net
    gain on cumulative input. A saving only counts if `needs found = needs total`.
    """),
    code('''
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
    '''),
    md("""
    ## Per session: cumulative input by system

    One row per real session (the name is the agent format and the transcript), the
    cumulative input each system sends over the whole session. Sessions differ by two
    orders of magnitude, so compare across a row, not down a column.
    """),
    code('''
    (traces.with_columns(pl.col("session").map_elements(short, return_dtype=pl.String))
     .pivot(on="system", index=["session", "steps", "needs_total"],
            values="cumulative_input_tokens")
     .select(["session", "steps", "needs_total",
              *[s for s in report.SYSTEMS if s in traces["system"].unique().to_list()]])
     .sort("raw", descending=True))
    '''),
]

# -- 02 ------------------------------------------------------------------------------

PRUNE_THRESHOLDS = [
    md("""
    # 02 · Tuning pruning: thresholds × modes, and a policy of your own

    OSIRIS takes large outputs out of the context (the agent keeps a ref and a preview)
    and, under pressure, advises the agent to drop payloads it still holds (each one
    restorable with `recall`). Two settings decide when and what: the **prune threshold**
    (`prune_threshold_tokens`, context size at which advice starts) and the **prune
    mode**:

    | mode | advice starts at | drops |
    |---|---|---|
    | `cache_ttl` (default) | threshold, or idle cache | old history; all once the cache expired |
    | `conservative` | 2 × threshold | older history only (not the last 3 payloads) |
    | `balanced` | threshold | everything but the newest payload |
    | `aggressive` | threshold / 2 | everything re-expandable |

    This notebook runs adaptive OSIRIS on the real traces under a grid of both, next to
    raw, and shows the trade-off. Then it plugs in a pruning policy written here, through
    the harness's `PruningPolicy` seam, without touching OSIRIS's core.
    """),
    parameters(),
    md("""
    ## Setup

    QUICK runs two small but non-trivial sessions (a mini-swe-agent and a SWE-agent
    transcript) and a 2 × 2 grid; the full run takes every trace and the 5 × 4 grid
    (a few minutes: each setting replays every session through the real engine). Every
    OSIRIS system gets its own home in a temporary directory.
    """),
    code(SETUP),
    code('''
    import tempfile

    from osiris.harness.benchmark import run_matrix
    from osiris.harness.osiris_system import FollowAdvice, NeverPrune, OsirisSystem
    from osiris.harness.replay import RawSystem
    from osiris.harness.workloads import TraceWorkload

    only = ("django__django", "pydicom") if QUICK else ()
    thresholds = (5_000, 20_000) if QUICK else (5_000, 10_000, 20_000, 40_000, 80_000)
    modes = (("cache_ttl", "aggressive") if QUICK
             else ("cache_ttl", "conservative", "balanced", "aggressive"))
    sessions = list(TraceWorkload(traces_dir, only=only).sessions())
    workdir = Path(tempfile.mkdtemp(prefix="osiris-nb02-"))
    print(f"{len(sessions)} sessions, {sum(len(s.steps) for s in sessions)} tool outputs, "
          f"{sum(len(s.needs) for s in sessions)} needs; "
          f"{len(thresholds) * len(modes)} settings")
    '''),
    md("""
    ## The grid

    One OSIRIS system per (mode, threshold), each labelled `mode @ threshold`, plus raw as
    the baseline every net gain is measured against. `run_matrix` replays each session
    through each system and returns one metrics row per pair.
    """),
    code('''
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
    '''),
    md("""
    ## Totals per setting

    Summed over the sessions: cumulative input tokens, **tokens saved** against raw (what
    is no longer re-sent, turn after turn), the extra calls the agent needed to get
    information back (each is a model turn and a round trip), needs recovered, and the
    billed cost under Anthropic's 5-minute cache — pruning rewrites the prompt, which can
    cost cache reads, so cost and tokens need not move together.
    """),
    code('''
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
    '''),
    md("""
    ## The trade-off: tokens saved against extra calls

    Each point is one setting: colour is the mode, size the threshold (bigger = later).
    Up is better (a larger share of raw's cumulative input saved), left is better (fewer
    extra calls). Raw, the reference, would sit at (0, 0) and is left out. The dashed line
    joins the **Pareto front**, the settings no other setting beats on both axes at once;
    they are outlined and named. A setting off the front is dominated: another saves at
    least as much with no more calls. An X marks a setting that lost a need (a saving
    that loses information is not a saving). Along the front, moving right buys tokens
    with round trips: a lower threshold or a more aggressive mode drops more, and each
    dropped payload the agent still needs comes back through a `recall` that costs a turn.
    """),
    code('''
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
    '''),
    md("""
    The settings on the front, cheapest in calls first. The default (`cache_ttl` at
    40,000 tokens) is only in the full grid; in QUICK mode its row is absent.
    """),
    code('''
    grid.filter(pl.col("system").is_in(front)).sort("extra_calls")
    '''),
    md("""
    ## Tokens are not the bill

    Dropping a payload rewrites the prompt from that point on, so the provider's cache
    misses and the rest of the prompt is written to the cache again. The same settings,
    now as billed cost under Anthropic's 5-minute cache (x) against tokens saved (y); the
    vertical line is raw's bill. Settings that save about the same tokens can differ
    several-fold in cost: a setting that prunes often, early in the prompt, pays for it
    in cache writes. Left and up is better.
    """),
    code('''
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
    '''),
    md("""
    ## A pruning policy of your own

    The harness asks a `PruningPolicy` which refs to drop after each output:
    `choose(advice, held, context_tokens)` gets OSIRIS's own advice (or `None`), the
    outputs the context still holds (`.ref`, `.tokens`, `.step`, `.text`, `.mode` —
    how OSIRIS engaged it — and `.source_tokens`, the size of the output it stands for)
    and the context size, and returns the refs to drop. Here is one that ignores the
    advice: **drop every externalized payload older than the last two outputs**. An
    externalized payload is one OSIRIS replaced by its ref and preview (any mode but
    `bystander`); small outputs left verbatim stay. It is compared with the default policy (follow
    OSIRIS's advice) and with never pruning, on the same sessions and default settings.
    """),
    code('''
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
    '''),
    md("""
    The same picture for the three policies: where the custom one lands against the
    default and against keeping everything. Nothing in `osiris/core` changed — the policy
    lives in this notebook and reaches the engine through `OsirisSystem(policy=...)`.
    """),
    code('''
    policy_front = plot_front(policy_summary, "Pruning policies at default settings")
    print("Pareto front:", ", ".join(policy_front))
    '''),
    code('''
    import shutil

    shutil.rmtree(workdir, ignore_errors=True)
    '''),
]

# -- 03 ------------------------------------------------------------------------------

COST_MODELS = [
    md("""
    # 03 · Cost models and the cost of drift

    Tokens are not dollars: providers cache the prompt's prefix and bill cached tokens at
    a fraction of the price, writes at a premium, within a time-to-live. This notebook
    (1) compares what each system's prompts cost under each bundled cost model, from the
    benchmark's Parquet; (2) measures with the real engine what a *drift* costs — a change
    near the start of the prompt that forces the provider to prefill everything after
    it again; (3) defines a cost model of its own and reruns the benchmark under it.
    """),
    parameters(),
    code(SETUP),
    md("""
    ## The cost models

    The cost models bundled with OSIRIS (version-stamped data in
    `osiris/core/data/cost_models.toml`): price per million input tokens, multipliers for
    cache writes and reads, the minimum cacheable prefix, the cache TTL and how a prefix
    is matched (`breakpoints`: at marked boundaries, Anthropic; `any_prefix`: any segment
    boundary rounded to 128 tokens, OpenAI; `none`: no cache).
    """),
    code('''
    import json
    import tempfile

    from osiris.config import Settings
    from osiris.core.cost_models import CostModel, default_cost_models
    from osiris.core.tokens import default_counter
    from osiris.engine import Engine
    from osiris.harness import report
    from osiris.harness.benchmark import Matrix, run_matrix
    from osiris.harness.traces import find_traces, load_trace
    from osiris.harness.workloads import TraceWorkload
    from osiris.server.definitions import model_facing

    models = default_cost_models()
    rows = pl.read_parquet(reports / "data" / "results.parquet")
    traces = rows.filter((pl.col("workload") == "traces") & (pl.col("retrieval") == "visible"))
    pl.DataFrame([{"name": m.name, "input $/MTok": m.input_usd_per_mtok,
                   "write ×": m.write_multiplier, "read ×": m.read_multiplier,
                   "min cacheable": m.min_cacheable_tokens, "ttl s": m.ttl_s,
                   "matching": m.matching} for m in models.models])
    '''),
    md("""
    ## Billed cost per system, all trace sessions

    Every prompt of every session is billed by the cache simulator under each model, and
    summed over sessions. The first table is in US dollars; the second divides by raw's
    cost under the same model, so it reads as "fraction of raw's bill" (lower is better).
    """),
    code('''
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
    '''),
    md("""
    The same figures as grouped bars: left, dollars (one group per system, one bar per
    cost model); right, the fraction of raw's bill. Caching narrows the gap between
    systems in dollars — a prompt raw re-sends unchanged is mostly billed at the read
    price — which is why the benchmark reports both tokens and cost.
    """),
    code('''
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
    '''),
    md("""
    ## The cost of drift

    OSIRIS models the prompt as zones: the system **head** first, then the **tool
    contract** (with objective and plan), then pinned constraints, then the working set
    and history. A provider's cache serves the longest unchanged prefix, so a change in
    the head invalidates everything (*critical* drift, prefill from token 0), a change in
    the contract everything after it (*minor* drift). The engine prices each drift as a
    **PrefillPlan**: the tokens to prefill again, what that costs at the write price, and
    the extra over the cache read it replaces.

    The experiment, run once per cost model in a fresh OSIRIS home: record a head of
    about 3,000 tokens of real text (a SWE-agent system prompt followed by the dataset's
    own documentation) and the tool contract (OSIRIS's six tool definitions as the model
    sees them); then put a timestamp at the top of the head — the classic cache killer —
    and, separately, edit one tool description.
    """),
    code('''
    counter = default_counter()


    def cut(text: str, limit: int) -> str:
        """The first ``limit`` tokens of ``text``, at a line boundary."""
        kept, total = [], 0
        for line in text.split("\\n"):
            total += counter.count(line + "\\n")
            if total > limit:
                break
            kept.append(line)
        return "\\n".join(kept)


    swe = next(p for p in find_traces(traces_dir) if p.suffix == ".traj")
    head = cut("\\n\\n".join([load_trace(swe).system_prompt or "",
                             (traces_dir / "NORMALIZATION.md").read_text("utf-8"),
                             (traces_dir / "SOURCES.md").read_text("utf-8")]), 3_000)
    contract = json.dumps(model_facing(), separators=(",", ":"))
    stamped_head = "Current date: 2026-03-02 09:14:07 UTC\\n" + head
    edited_contract = contract.replace('"description":"', '"description":"(v2) ', 1)
    print(f"head {counter.count(head):,} tokens, contract {counter.count(contract):,} tokens")
    '''),
    md("""
    How to read it: `from_token` is where the prefill starts (0 for the head: the whole
    prompt; after the head for the contract), `tokens` how many are prefilled again,
    `cost_usd` their price at the write multiplier and `extra_cost_usd` what that adds to
    the cache read the turn would otherwise have been. The last column is the bill of a
    prompt that drifts like this on every one of 100 turns (a timestamp refreshed each
    turn does exactly that). With no cache there is nothing to lose, so the extra is 0.
    `volatile found` lists what OSIRIS flagged in the new text (the timestamp) so that an
    agent can move it out of the cached prefix.
    """),
    code('''
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
    '''),
    md("""
    The extra cost of one drift, per cost model (in thousandths of a dollar): a head
    change costs more than a contract change because everything after token 0 is
    prefilled again, and the 1-hour cache costs most because its writes are dearest.
    """),
    code('''
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
    '''),
    md("""
    ## A cost model of your own

    `run_matrix(..., models=...)` takes any `CostModel`. Here, a hypothetical provider:
    same input price as Anthropic's Sonnet-class model, cache writes at 1.25×, **reads at
    0.05×** and a **30-minute TTL**. A twin with a 5-minute TTL isolates the TTL's effect.
    Both run beside two bundled models on a small set of sessions through the five
    standard systems. The table: total billed cost in USD over these sessions, one row per
    system, one column per cost model.
    """),
    code('''
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
    '''),
    md("""
    The replay spaces turns 20 seconds apart (`osiris.harness.replay.TURN_SECONDS`), so
    no cache entry outlives a 5-minute TTL between turns: the two hypothetical columns
    should be equal (checked below), and what moves the bill is the read multiplier. A
    TTL matters only when the agent idles longer than it (a human reading, a long test
    run) — a replay with real timestamps is what would show it. Then, net gains against
    raw under the custom model, per session (percent):
    """),
    code('''
    from osiris.harness.replay import TURN_SECONDS

    same = custom_frame["billed_cost_hypothetical-30m"].equals(
        custom_frame["billed_cost_hypothetical-5m"])
    print(f"turns {TURN_SECONDS:.0f} s apart; 30-minute and 5-minute TTL bill the same: {same}")
    (custom_frame.with_columns(pl.col("session").map_elements(short, return_dtype=pl.String),
                               (pl.col("net_gain_billed_cost_hypothetical-30m") * 100).round(2)
                               .alias("gain"))
     .pivot(on="system", index="session", values="gain"))
    '''),
    code('''
    import shutil

    shutil.rmtree(workdir, ignore_errors=True)
    '''),
]

# -- 04 ------------------------------------------------------------------------------

TRACES = [
    md("""
    # 04 · The real traces

    What the benchmark's real sessions look like (`datasets/traces`: Claude Code, Codex
    CLI, mini-swe-agent and SWE-agent transcripts; provenance in `SOURCES.md`). How many
    calls, how many output tokens and from which tools, how output sizes are spread
    across OSIRIS's engagement bands, how many information needs each session carries,
    and what each system re-sends over a session. QUICK mode looks at the smallest
    transcript of each format.
    """),
    parameters(),
    code(SETUP),
    code('''
    import re

    from osiris.config import Settings
    from osiris.core.tokens import default_counter
    from osiris.harness import report
    from osiris.harness.traces import find_traces, load_trace
    from osiris.harness.workloads import TraceWorkload

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
        command = re.sub(r"^bash -lc\\s+[\\"']?", "", command.strip())
        for part in re.split(r"&&|;|\\|\\|", command):
            words = part.split()
            while words and "=" in words[0]:  # environment assignments before the program
                words.pop(0)
            if words and words[0] != "cd":
                name = words[0].strip("\\"'")
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
    '''),
    md("""
    ## Per format: calls and output tokens

    One row per agent format: how many transcripts and tool calls, the output tokens in
    total, and the median and largest single output. A few large outputs usually carry
    most of the tokens: compare the median with the mean.
    """),
    code('''
    (steps.group_by("format")
     .agg(pl.col("session").n_unique().alias("sessions"), pl.len().alias("calls"),
          pl.col("tokens").sum().alias("output tokens"),
          pl.col("tokens").mean().round(0).alias("mean"),
          pl.col("tokens").median().alias("median"), pl.col("tokens").max().alias("max"),
          pl.col("is_error").sum().alias("errors"))
     .sort("output tokens", descending=True))
    '''),
    md("""
    ## Distribution of output sizes

    A histogram of the tokens of each tool output, per format, on a logarithmic axis
    (empty outputs are left out). The vertical lines are OSIRIS's engagement thresholds:
    below the first an output passes through verbatim (*bystander*); above it OSIRIS
    keeps the payload and shows a preview that grows in structure with the size.
    """),
    code('''
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
    '''),
    md("""
    ## Which tools produce the tokens

    Output tokens by tool, with shell tools split by the program they ran (`bash: cat`,
    `shell: sed`, …): the share of all output tokens, calls and the mean size. The
    chart shows the twelve largest producers.
    """),
    code('''
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
    '''),
    md("""
    ## Engagement bands

    How many outputs fall in each band of OSIRIS's adaptive engagement (by size alone,
    with the default thresholds: bystander < 300 tokens, light < 1,500, standard < 8,000,
    full beyond) and what share of the tokens they hold. Most calls are small and pass
    through untouched; most tokens are in the few large outputs OSIRIS takes out of the
    context. (The engine can still pick another mode for a payload: a duplicate, say.)
    """),
    code('''
    def band(tokens: int) -> str:
        """The engagement band of an output of ``tokens`` tokens."""
        return next(name for limit, name in bands if tokens < limit)


    order = {name: i for i, (_, name) in enumerate(bands)}
    (steps.with_columns(pl.col("tokens").map_elements(band, return_dtype=pl.String).alias("band"))
     .group_by("band").agg(pl.len().alias("outputs"), pl.col("tokens").sum().alias("tokens"))
     .with_columns((pl.col("outputs") / pl.col("outputs").sum() * 100).round(1).alias("% outputs"),
                   (pl.col("tokens") / pl.col("tokens").sum() * 100).round(1).alias("% tokens"))
     .sort(pl.col("band").replace_strict(order)))
    '''),
    md("""
    ## Information needs per session

    The benchmark's needs, derived mechanically from each transcript (see
    `osiris/harness/workloads.py`): a string of an output (path, identifier, number) that
    the agent's later calls or messages use and that it had not seen before. Every system
    must give each need back exactly. Shown with a few examples per session.
    """),
    code('''
    names = tuple(str(p.relative_to(traces_dir)) for p in files)
    needs = pl.DataFrame([
        {"session": short(s.name), "steps": len(s.steps), "needs": len(s.needs),
         "steps with needs": sum(1 for step in s.steps if step.needs),
         "examples": " · ".join(n.text for _, n in s.needs[:3])}
        for s in TraceWorkload(traces_dir, only=names).sessions()])
    needs.sort("needs", descending=True)
    '''),
    md("""
    ## What each system re-sends, per session (from the benchmark)

    From the benchmark's Parquet (`REPORTS/data/results.parquet`, which may cover other
    sessions than the ones above in QUICK mode): cumulative input tokens — every prompt of
    the session added up — per system. The chart uses a log scale because sessions span
    two orders of magnitude; within a session, bars closer to the oracle's are better.
    """),
    code('''
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
    '''),
]

# -- 05 ------------------------------------------------------------------------------

REPLAY = [
    md("""
    # 05 · Replay your own sessions

    Where do the tokens of *your* agent sessions go, and what would each way of keeping
    tool output leave in the context? Run `osiris replay <your transcripts> --parquet
    <dir>` (Claude Code session files live under `~/.claude/projects`, Codex rollouts
    under `~/.codex/sessions`) and point `REPLAY_DIR` at `<dir>`. Left empty, the notebook
    replays the bundled traces itself with the same command.
    """),
    parameters('REPLAY_DIR = ""    # `osiris replay ... --parquet DIR`; empty: bundled traces\n'),
    code(SETUP),
    md("""
    ## The replay

    `osiris replay` writes three tables: `sessions.parquet` (one row per session and
    system: cumulative input, billed cost under each cost model, needs preserved, extra
    calls, LoopGuard flags, provider usage where the transcript has it), `steps.parquet`
    (one row per session, system and tool call: the output's tokens, what the system
    kept when it arrived and what it still held at the end) and `loopguard.parquet`.
    """),
    code('''
    import shutil
    import subprocess
    import sys
    import tempfile

    from IPython.display import Markdown

    from osiris.harness.sessions import display_names
    from osiris.harness.traces import find_traces

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
    '''),
    md("""
    ## Per session

    Cumulative input (every prompt of the session added up: what is paid for) for each
    system, with the net gain against raw and the needs each one got back.
    """),
    code('''
    per_session = (sessions.select("session", "system", "tool_calls", "cumulative_input_tokens",
                                   "net_gain_cumulative_input_tokens", "needs_found",
                                   "needs_total", "extra_calls", "loopguard_flags")
                   .with_columns(pl.col("session").replace_strict(label),
                                 (pl.col("net_gain_cumulative_input_tokens") * 100).round(1)
                                 .alias("net gain %"))
                   .drop("net_gain_cumulative_input_tokens"))
    per_session.pivot(on="system", index="session", values="cumulative_input_tokens")
    '''),
    code('''
    totals = (sessions.group_by("system")
              .agg(pl.col("cumulative_input_tokens").sum(),
                   *[pl.col(c).sum().round(4) for c in sessions.columns
                     if c.startswith("billed_cost_")],
                   pl.col("needs_found").sum(), pl.col("needs_total").sum(),
                   pl.col("extra_calls").sum())
              .sort("cumulative_input_tokens", descending=True))
    totals
    '''),
    md("""
    ## Where the tokens go, by tool

    Output tokens per tool across all sessions (counted once per output: the `raw` rows),
    with the number of calls and the share of the total. The tools at the top are where
    keeping output out of the context pays.
    """),
    code('''
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
    '''),
    md("""
    ## Where the tokens go, by payload size

    The same tokens grouped by the size of the output that carried them, in OSIRIS's
    engagement bands (from the default settings): many small outputs, few large ones,
    and the large ones hold the tokens.
    """),
    code('''
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
    '''),
    md("""
    ## What each system keeps

    For each size band, what each system kept of the outputs: *on arrival* (right after
    the output came back) and *at the end* (after pruning, clearing or spilling). Raw
    keeps everything; the oracle keeps only the strings used later; OSIRIS keeps small
    outputs and a ref plus preview of large ones (a duplicate or an empty output can cost
    a few tokens more than it had); the client's own handling spills very large outputs
    to a file and, past 100,000 tokens of context, clears old results.
    """),
    code('''
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
    '''),
    md("""
    ## LoopGuard, and the provider's own counts

    What LoopGuard would have said about the calls (every non-allow verdict, and allow
    verdicts carrying a LoopGuard note), and, where the transcript carries provider
    usage, the provider's input tokens beside our raw estimate. The estimate counts only
    what the transcript shows: the client's system prompt, tool definitions and memory
    files are usually not in it, and the client's turns are not always one per tool call.
    """),
    code('''
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
    '''),
    code('''
    shutil.rmtree(workdir, ignore_errors=True)
    '''),
]

NOTEBOOKS = {"01_report_tables.ipynb": REPORT_TABLES,
             "02_prune_thresholds.ipynb": PRUNE_THRESHOLDS,
             "03_cost_models.ipynb": COST_MODELS,
             "04_traces.ipynb": TRACES,
             "05_replay.ipynb": REPLAY}


def main() -> None:
    """Write every notebook next to this script."""
    for name, cells in NOTEBOOKS.items():
        nb = notebook(cells)
        nbformat.validate(nb)
        nbformat.write(nb, HERE / name)
        print(f"wrote {HERE / name}")


if __name__ == "__main__":
    main()
