"""The benchmark's figures (matplotlib, PNG next to BENCHMARK.md): net gain by payload size
and cumulative input per trace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from osiris.harness.reports.report import SEED, SYSTEMS, select_rows, short_name, systems_in


def plots(rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """reports/sweep_net_gain.png and reports/traces_cumulative.png."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    sweep = [r for r in rows if r["workload"] == "sweep"]
    fig, ax = plt.subplots(figsize=(10, 4.5))
    floor = -100.0
    clipped = False
    for system in systems_in(rows, "sweep"):
        if system == "raw":
            continue
        points = sorted((r["size"], r["net_gain_final_context_tokens"] * 100) for r in sweep
                        if r["system"] == system)
        clipped = clipped or any(p[1] < floor for p in points)
        style = "-" if system in SYSTEMS else "-."
        if points:
            ax.plot([p[0] for p in points], [max(p[1], floor) for p in points], marker="o",
                    linestyle=style, label=system)
    amortised = sorted((r["size"], r["net_gain_final_excluding_fixed"] * 100) for r in sweep
                       if r["system"] == "osiris-adaptive")
    if amortised:
        ax.plot([p[0] for p in amortised], [p[1] for p in amortised], marker="o",
                linestyle=":", color="tab:red", label="osiris-adaptive, fixed cost amortised")
    seed = sorted((size, v[3]) for size, v in SEED.items())
    ax.plot([p[0] for p in seed], [p[1] for p in seed], linestyle="--", color="grey",
            label="seed adaptive (fixed cost amortised)")
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_xscale("log")
    ax.set_xlabel("payload size (tokens)")
    ax.set_ylabel("net gain vs raw, final context (%)")
    ax.set_ylim(bottom=floor - 5 if clipped else None)
    ax.set_title("Payload sweep: who keeps the context small"
                 + (" (losses below −100% drawn at −100%)" if clipped else ""), fontsize=10)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    path = out / "sweep_net_gain.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)

    traces_path = _traces_plot(rows, out)
    if traces_path is not None:
        written.append(traces_path)
    return written


def _traces_plot(rows: list[dict[str, Any]], out: Path) -> Path | None:
    import matplotlib.pyplot as plt

    traces = select_rows(rows, "traces")
    if not traces:
        return None
    sessions = sorted({r["session"] for r in traces})
    systems = systems_in(rows, "traces")
    fig, ax = plt.subplots(figsize=(10, 4.8))
    width = 0.8 / len(systems)
    by = {(r["session"], r["system"]): r for r in traces}
    for k, system in enumerate(systems):
        values = [by[(s, system)]["cumulative_input_tokens"] / 1e6
                  if (s, system) in by else 0 for s in sessions]
        ax.bar([i + k * width for i in range(len(sessions))], values, width, label=system)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(sessions))])
    ax.set_xticklabels([short_name(s) for s in sessions], rotation=45, ha="right",
                       fontsize=7)
    ax.set_ylabel("cumulative input (M tokens)")
    ax.set_title("Real agent sessions inside their clients: tokens re-sent over all turns "
                 "(visible retrieval)", fontsize=10)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    path = out / "traces_cumulative.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
