"""Executing the research notebooks headless (nbclient), with parameters.

Each notebook has one code cell tagged ``parameters`` (as papermill would); the runner
inserts a cell after it that overrides those values, then executes everything with
the kernel of the running Python. ``nox -s notebooks`` runs them on the full reports;
a test runs them on the quick workload.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

NOTEBOOKS = ("01_report_tables.ipynb", "02_prune_thresholds.ipynb", "03_cost_models.ipynb",
             "04_traces.ipynb", "05_replay.ipynb")


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
