"""What every benchmark stage gets (:class:`BenchContext`): where to write, how big to
go, whom to tell. Its own module so that stages (``perf``, ``owner_perf``,
``dashboard_perf``) name it without importing the runner (:mod:`osiris.harness.bench`)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from osiris.harness.retrieval import RETRIEVAL_MODELS
from osiris.harness.runmeta import RunMeta


@dataclass
class BenchContext:
    """What every stage gets: where to write, how big to go, whom to tell."""

    repo: Path
    out: Path
    quick: bool
    meta: RunMeta
    workdir: Path
    progress: TextIO = sys.stderr
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    perf_sections: list[str] = field(default_factory=list)
    documents: dict[str, str] = field(default_factory=dict)
    plot_jobs: list[Callable[[Path], list[Path]]] = field(default_factory=list)
    retrievals: tuple[str, ...] = RETRIEVAL_MODELS
    client: str | None = None
    stages: tuple[str, ...] = ()
    """The stages this run executes."""
    sections: dict[str, str] = field(default_factory=dict)
    """Report sections a stage hands to a later one (``clients`` → BENCHMARK.md)."""

    def say(self, message: str) -> None:
        """Progress line on stderr."""
        self.progress.write(f"[bench {time.strftime('%H:%M:%S')}] {message}\n")
        self.progress.flush()

    def add_rows(self, table: str, rows: list[dict[str, Any]]) -> None:
        """Rows for ``reports/data/<table>.parquet``, with the run's provenance."""
        meta = self.meta.as_row()
        self.tables.setdefault(table, []).extend({**meta, **row} for row in rows)


Stage = Callable[[BenchContext], None]
