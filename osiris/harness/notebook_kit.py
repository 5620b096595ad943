"""What every research notebook starts with (``notebooks/*.py``): headless plotting,
readable tables, the repository's paths, and two helpers."""

from __future__ import annotations

from io import BytesIO
from pathlib import Path
from typing import Any


def setup(repo: str, reports: str) -> tuple[Path, Path, Path]:
    """Plot without a display (Agg), print wide polars tables; the repository, its
    reports and its traces directory, resolved from the notebook's parameters."""
    import matplotlib

    matplotlib.use("Agg")
    import polars as pl

    pl.Config.set_tbl_rows(80)
    pl.Config.set_tbl_cols(24)
    pl.Config.set_fmt_str_lengths(60)
    pl.Config.set_tbl_width_chars(200)
    root = Path(repo).resolve()
    return root, Path(reports).resolve(), root / "datasets" / "traces"


def show(fig: Any) -> None:
    """Show a figure inline: Agg draws it headless, the notebook keeps the PNG."""
    import matplotlib.pyplot as plt
    from IPython.display import Image, display

    png = BytesIO()
    fig.savefig(png, format="png", dpi=100)
    plt.close(fig)
    display(Image(png.getvalue()))  # type: ignore[no-untyped-call]


def short(session: str) -> str:
    """A readable session name: the agent format and what tells the transcript apart."""
    fmt, _, rest = session.partition("__")
    parts = [p for p in rest.split("/")[1:] if p not in ("agent_log_raw.txt", "execute")]
    name = "/".join(parts).removesuffix(".traj.json").removesuffix(".traj")
    return f"{fmt}: {name}" if name else session
