"""What a benchmark stage gets (:class:`BenchContext`: where to write, how big to go,
whom to tell) and what it hands back (:class:`StageResult`: rows, report sections,
documents, plots). A stage changes nothing shared: the runner
(:mod:`osiris.harness.bench.runner`) gathers the results and writes the reports. Its own
module so that stages (``speed``, ``owner``, ``dashboard``) name both without importing
the runner."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from osiris.harness.replay.retrieval import RETRIEVAL_MODELS
from osiris.harness.runmeta import RunMeta


@dataclass(frozen=True)
class BenchContext:
    """What every stage gets: where to write, how big to go, whom to tell."""

    repo: Path
    out: Path
    quick: bool
    meta: RunMeta
    workdir: Path
    progress: TextIO = sys.stderr
    retrievals: tuple[str, ...] = RETRIEVAL_MODELS
    client: str | None = None
    stages: tuple[str, ...] = ()
    """The stages this run executes."""
    sections: Mapping[str, str] = field(default_factory=dict)
    """Report sections earlier stages of this run handed on (``clients`` → BENCHMARK.md)."""

    def say(self, message: str) -> None:
        """Progress line on stderr."""
        self.progress.write(f"[bench {time.strftime('%H:%M:%S')}] {message}\n")
        self.progress.flush()


@dataclass
class StageResult:
    """What one stage hands back to the runner."""

    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Rows for ``reports/data/<table>.parquet`` (the runner adds the run's provenance)."""
    perf_sections: list[str] = field(default_factory=list)
    """Sections of reports/PERF.md, in order."""
    documents: dict[str, str] = field(default_factory=dict)
    """Whole files under ``reports/`` by name (BENCHMARK.md, SECRETS.md …)."""
    plot_jobs: list[Callable[[Path], list[Path]]] = field(default_factory=list)
    """Figures to draw into the output directory once the tables are written."""
    sections: dict[str, str] = field(default_factory=dict)
    """Report sections for later stages of the same run."""

    def add_rows(self, table: str, rows: list[dict[str, Any]]) -> None:
        """Rows for ``reports/data/<table>.parquet``."""
        self.tables.setdefault(table, []).extend(rows)


Stage = Callable[[BenchContext], StageResult]
