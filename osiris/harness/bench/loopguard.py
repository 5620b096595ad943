"""Replay real agent sessions through precheck + observe: what would LoopGuard flag?

Each tool call of a transcript is prechecked before and observed after, in order,
through the real engine (no invariants: only LoopGuard and dedup speak). The result
lists every non-allow verdict with the call it concerned, so a reader can judge
each flag: a real loop, or a false alarm.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from osiris.config import Settings
from osiris.contracts.plan import PlanStart
from osiris.engine import Engine
from osiris.harness.importers.traces import Trace, find_traces, load_trace
from osiris.harness.systems.osiris_engine import loopguard_flag


@dataclass
class ReplayFlags:
    """What precheck said about one session."""

    trace: str
    format: str
    end_state: str | None
    calls: int
    verdicts: Counter[str] = field(default_factory=Counter)
    flags: list[dict[str, Any]] = field(default_factory=list)


def replay_trace(engine: Engine, trace: Trace, name: str) -> ReplayFlags:
    """Precheck then observe every call of ``trace`` in a fresh task."""
    task_id = cast(PlanStart, engine.plan("start", objective=f"replay {name}"))["task_id"]
    out = ReplayFlags(name, trace.format, trace.meta.get("end_state"), len(trace.steps))
    for step in trace.steps:
        verdict = engine.precheck(task_id, step.tool, args=step.args)
        out.verdicts[verdict["verdict"]] += 1
        flag = loopguard_flag(step.i, step.tool, step.args, verdict)
        if flag is not None:
            out.flags.append(flag)
        engine.observe(task_id, "error" if step.is_error else "result", tool=step.tool,
                       args=step.args, result=step.output or "(no output)")
    return out


def replay_all(traces_dir: Path, home: Path, quick: bool = False) -> list[ReplayFlags]:
    """Every transcript under ``traces_dir`` (the two smallest when quick), one task each."""
    engine = Engine(Settings(home=home))
    paths = find_traces(traces_dir)
    if quick:
        paths = sorted(paths, key=lambda p: p.stat().st_size)[:2]
    try:
        return [replay_trace(engine, load_trace(p), str(p.relative_to(traces_dir)))
                for p in paths]
    finally:
        engine.close()


def render(results: list[ReplayFlags]) -> str:
    """Markdown report of the replay."""
    lines = ["# LoopGuard on the real traces", "",
             f"Every call of the {len(results)} sessions from `datasets/traces/` was "
             "prechecked and then "
             "observed, in order, through the real engine with default thresholds and no "
             "invariants. Non-allow verdicts (and allow verdicts carrying a LoopGuard note):",
             "", "| session | end | calls | allow | warn | suggest | approval | block |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        v = r.verdicts
        lines.append(f"| {r.trace} | {r.end_state} | {r.calls} | {v['allow']} | {v['warn']} | "
                     f"{v['suggest_alternative']} | {v['require_approval']} | {v['block']} |")
    lines.append("")
    for r in results:
        if not r.flags:
            continue
        lines += [f"## {r.trace}", "", "| step | tool | call | verdict | patterns |",
                  "|---|---|---|---|---|"]
        for f in r.flags:
            call = f["call"].replace("|", "\\|")
            lines.append(f"| {f['step']} | {f['tool']} | `{call}` | {f['verdict']} | "
                         f"{', '.join(f['patterns'])} |")
        lines.append("")
    return "\n".join(lines)
