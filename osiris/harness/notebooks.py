"""The research notebooks: their sources, and executing them headless (nbclient).

Each notebook is written as a jupytext "percent" script, ``notebooks/NN_name.py``, which
is what one reviews and edits; the paired ``.ipynb`` beside it (no outputs, fixed cell
ids) is generated from it by ``python -m osiris.harness.notebooks --sync`` and checked by
``--check`` (``nox -s lint``, and a test), so the two cannot drift apart.

Each notebook has one code cell tagged ``parameters`` (as papermill would); the runner
inserts a cell after it that overrides those values, then executes everything with
the kernel of the running Python. ``nox -s notebooks`` runs them on the full reports;
a test runs them on the quick workload.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

NOTEBOOKS = ("01_report_tables.ipynb", "02_prune_thresholds.ipynb", "03_cost_models.ipynb",
             "04_traces.ipynb", "05_replay.ipynb", "06_payoff.ipynb")
HERE = Path(__file__).resolve().parents[2] / "notebooks"


def from_source(source: Path) -> Any:
    """The notebook a percent script describes: no outputs, cell ids ``cell-NN`` (so
    generating it twice gives the same bytes)."""
    import jupytext  # type: ignore[import-untyped]

    notebook = jupytext.read(source)
    for index, cell in enumerate(notebook.cells):
        cell.id = f"cell-{index:02d}"
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    notebook.metadata.pop("jupytext", None)
    notebook.metadata["jupytext"] = {"formats": "ipynb,py:percent"}
    return notebook


def _cells(notebook: Any) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(c.cell_type, c.source, tuple(c.get("metadata", {}).get("tags", ())))
            for c in notebook.cells]


def drift(folder: Path = HERE) -> list[str]:
    """The notebooks whose ``.ipynb`` is missing or says other than its ``.py`` source."""
    import nbformat

    found = []
    for name in NOTEBOOKS:
        paired = folder / name
        if not paired.exists():
            found.append(name)
            continue
        held = nbformat.read(paired, as_version=4)  # type: ignore[no-untyped-call]
        if _cells(held) != _cells(from_source(paired.with_suffix(".py"))):
            found.append(name)
    return found


def sync(folder: Path = HERE) -> list[str]:
    """Write every ``.ipynb`` from its ``.py`` source; the names written."""
    import nbformat

    for name in NOTEBOOKS:
        nbformat.write(from_source((folder / name).with_suffix(".py")),  # type: ignore[no-untyped-call]
                       folder / name)
    return list(NOTEBOOKS)


def execute(path: Path, params: dict[str, Any], *, timeout: int = 1800,
            save_to: Path | None = None) -> Any:
    """Run the notebook at ``path`` with ``params``; raise on the first failing cell."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
    for name, value in params.items():
        if not name.isidentifier():
            raise ValueError(f"notebook parameter {name!r} is not a Python name")
        if ast.literal_eval(repr(value)) != value:
            raise ValueError(f"notebook parameter {name}={value!r} is not a Python literal")
    lines = [f"{name} = {value!r}" for name, value in params.items()]
    injected = nbformat.v4.new_code_cell(  # type: ignore[no-untyped-call]
        "# injected parameters\n" + "\n".join(lines))
    injected.metadata["tags"] = ["injected-parameters"]
    index = next((i for i, cell in enumerate(notebook.cells)
                  if "parameters" in cell.get("metadata", {}).get("tags", [])), -1)
    notebook.cells.insert(index + 1, injected)
    client = NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    if save_to is not None:
        nbformat.write(notebook, save_to)  # type: ignore[no-untyped-call]
    return notebook


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m osiris.harness.notebooks --check | --sync``."""
    parser = argparse.ArgumentParser(prog="python -m osiris.harness.notebooks",
                                     description=__doc__.split("\n\n")[0] if __doc__ else None)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--check", action="store_true",
                        help="fail if an .ipynb says other than its .py source")
    action.add_argument("--sync", action="store_true", help="write each .ipynb from its .py")
    args = parser.parse_args(argv)
    if args.sync:
        sys.stderr.write(f"wrote {', '.join(sync())}\n")
        return 0
    stale = drift()
    if stale:
        sys.stderr.write(f"notebooks out of step with their .py sources: {', '.join(stale)}; "
                         "run `python -m osiris.harness.notebooks --sync`\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
