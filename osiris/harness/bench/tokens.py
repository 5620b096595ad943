"""Running workloads through systems: the rows of ``reports/data/results.parquet``.

:func:`run_matrix` is the whole benchmark in one call and the research seam: pass
your own workload, systems (an OSIRIS system with another pruning policy or other
settings, say) and cost models, get rows back, and render them with
:mod:`osiris.harness.reports.report`.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from osiris.core.cost_models import CostModel, default_cost_models
from osiris.core.tokens import TokenCounter, default_counter
from osiris.harness.replay.metrics import add_net_gains, row_of
from osiris.harness.replay.profiles import PROFILES, native_profile, profile
from osiris.harness.replay.retrieval import RETRIEVAL_MODELS
from osiris.harness.replay.turns import (
    TURN_SECONDS,
    ClientNativeSystem,
    CountingCache,
    OracleSystem,
    RawSystem,
    System,
)
from osiris.harness.replay.workloads import Session, SweepWorkload, TraceWorkload, dataset_hashes
from osiris.harness.systems.osiris_engine import OsirisSystem

BREAK_EVEN_SIZES = (100, 150, 200, 300, 400, 600, 800, 1_200)
SYSTEMS = ("raw", "client-native", "oracle", "osiris-fixed", "osiris-adaptive")
BREAK_EVEN_MEASURES = {"final context": "net_gain_final_context_tokens",
                       "cumulative input": "net_gain_cumulative_input_tokens",
                       "billed cost (anthropic-5m)": "net_gain_billed_cost_anthropic-5m"}


@dataclass
class Matrix:
    """Systems to compare (built fresh for each call: OSIRIS systems hold a store)."""

    workdir: Path

    def systems(self, tag: str, names: Sequence[str] = SYSTEMS) -> list[System]:
        """The named systems (default all five: raw, client-native, oracle,
        osiris-fixed, osiris-adaptive); OSIRIS systems get a home under ``workdir``."""
        unknown = sorted(set(names) - set(SYSTEMS))
        if unknown:
            raise ValueError(f"unknown systems {unknown}: use some of {list(SYSTEMS)}")
        build: dict[str, Callable[[], System]] = {
            "raw": RawSystem, "client-native": ClientNativeSystem, "oracle": OracleSystem,
            "osiris-fixed": lambda: _fixed(self.workdir / f"{tag}-fixed"),
            "osiris-adaptive": lambda: OsirisSystem(self.workdir / f"{tag}-adaptive")}
        return [build[name]() for name in names]


def _fixed(home: Path) -> System:
    """OSIRIS in one engagement mode: meaningful only where OSIRIS takes the outputs."""
    return OsirisSystem(home, fixed_mode="standard", profiles=("agent-loop",))


def run_matrix(sessions: Iterable[Session], systems: Sequence[System], *,
               models: tuple[CostModel, ...] | None = None,
               counter: TokenCounter | None = None, params: dict[str, Any] | None = None,
               progress: Callable[[str], None] | None = None, client: str | None = None,
               retrievals: Sequence[str] = ("visible",)) -> list[dict[str, Any]]:
    """Replay every session through every system; one metrics row each, net gains added.

    Each session runs inside the client that produced it (``client`` names one profile
    for all), once per retrieval model of ``retrievals``. A system that has no
    integration with a client (a peer library in Claude Code, say) is left out of that
    client's rows. ``params`` label the rows; ``turn_seconds`` among them also sets the
    replay's turn spacing (default :data:`~osiris.harness.replay.turns.TURN_SECONDS`).
    """
    params = {"turn_seconds": TURN_SECONDS, **(params or {})}
    turn_seconds = float(params["turn_seconds"])
    models = models or default_cost_models().models
    counting = CountingCache(counter or default_counter())
    sessions = list(sessions)
    hashes = json.dumps(dataset_hashes(sessions), sort_keys=True)
    rows: list[dict[str, Any]] = []
    for index, session in enumerate(sessions, 1):
        chosen = profile(client) if client else native_profile(session)
        if progress:
            progress(f"{session.workload} {index}/{len(sessions)}: {session.name} "
                     f"({len(session.steps)} steps, {len(session.needs)} needs, "
                     f"{chosen.name})")
        for retrieval in retrievals:
            labels = {**params, "client": chosen.name, "retrieval": retrieval}
            for system in systems:
                if chosen.name not in getattr(system, "profiles", PROFILES):
                    continue
                result = system.replay(session, counting, turn_seconds=turn_seconds,
                                       profile=chosen, retrieval=retrieval)
                row = row_of(result, models, labels)
                row["encoding"] = counting.counter.encoding_name
                row["dataset_hashes"] = hashes
                rows.append(row)
    for system in systems:
        close = getattr(system, "close", None)
        if close is not None:
            close()
    add_net_gains(rows, models)
    return rows


Extra = Callable[[str], Sequence[System]]
"""Builds more systems (the peers) for a workload tag; they are closed after it."""


def sweep_rows(traces_dir: Path, workdir: Path, *, sizes: tuple[int, ...] | None = None,
               progress: Callable[[str], None] | None = None,
               tag: str = "sweep", extra: Extra | None = None) -> list[dict[str, Any]]:
    """The payload sweep (an agent loop, visible retrieval) through the five systems (and
    ``extra``'s)."""
    counter = default_counter()
    workload = SweepWorkload(traces_dir, counter, sizes=sizes) if sizes else \
        SweepWorkload(traces_dir, counter)
    systems = [*Matrix(workdir).systems(tag), *(extra(tag) if extra else ())]
    return run_matrix(workload.sessions(), systems, counter=counter, progress=progress)


def trace_rows(traces_dir: Path, workdir: Path, *, only: tuple[str, ...] = (),
               progress: Callable[[str], None] | None = None,
               extra: Extra | None = None, client: str | None = None,
               retrievals: Sequence[str] = RETRIEVAL_MODELS, workload: str = "traces",
               ) -> list[dict[str, Any]]:
    """The real traces, each in its own client (or ``client``), under every retrieval
    model, through the five systems (and ``extra``'s)."""
    systems = [*Matrix(workdir).systems(workload), *(extra(workload) if extra else ())]
    sessions = list(TraceWorkload(traces_dir, only=only, name=workload).sessions())
    for session in sessions:
        session.workload = workload  # "traces", or "heldout" for the held-out set
    return run_matrix(sessions, systems, progress=progress, client=client,
                      retrievals=retrievals)


def break_even_rows(traces_dir: Path, workdir: Path, *, sizes: tuple[int, ...] =
                    BREAK_EVEN_SIZES, progress: Callable[[str], None] | None = None
                    ) -> list[dict[str, Any]]:
    """A finer sweep of small payloads, raw against osiris-adaptive."""
    counter = default_counter()
    fine = SweepWorkload(traces_dir, counter, sizes=sizes, name="breakeven")
    return run_matrix(fine.sessions(),
                      Matrix(workdir).systems("breakeven", ("raw", "osiris-adaptive")),
                      counter=counter, progress=progress)


def break_even_summary(rows: list[dict[str, Any]]) -> dict[str, float | None]:
    """Break-even payload size of osiris-adaptive for each measure of the report."""
    fine = [r for r in rows if r["workload"] == "breakeven"]
    return {label: break_even(fine, measure=measure)
            for label, measure in BREAK_EVEN_MEASURES.items()}


def break_even(rows: list[dict[str, Any]], system: str = "osiris-adaptive",
               measure: str = "net_gain_final_context_tokens") -> float | None:
    """The payload size where ``system`` starts to win (linear between sweep sizes)."""
    points = sorted((r["size"], r[measure]) for r in rows
                    if r["system"] == system and r["size"] is not None
                    and r[measure] is not None)
    for (s0, g0), (s1, g1) in itertools.pairwise(points):
        if g0 < 0 <= g1:
            return round(float(s0 + (s1 - s0) * (-g0) / (g1 - g0)), 1)
    if points and points[0][1] >= 0:
        return float(points[0][0])
    return None
