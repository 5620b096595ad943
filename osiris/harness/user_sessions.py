"""``osiris replay``: what OSIRIS would have done with a user's own agent sessions.

Each transcript (Claude Code stream-json or session file, Codex CLI ``exec --json`` or
rollout file, mini-swe-agent, SWE-agent) is imported tolerantly (malformed lines,
unknown events and truncated files are skipped and counted) and replayed, in order,
through raw, client-native (the bare client: the baseline), the oracle and OSIRIS,
exactly as the benchmark replays its traces: inside the client that produced it (or
the one ``--client`` names: :mod:`osiris.harness.replay.profiles`), with OSIRIS given only the
routing that client really has, and needs retrieved by ``--retrieval`` (``visible`` by
default: :mod:`osiris.harness.replay.retrieval`). OSIRIS also prechecks every call, so what
LoopGuard would have flagged comes with it. Where the transcript carries them, the
system prompt is searched for volatile tokens (cache drift) and the provider's own usage
is set beside our estimate.

The engine runs in a scratch home that is deleted afterwards: nothing of the user's
sessions is kept, and the user's own OSIRIS home is never touched.
"""

from __future__ import annotations

import glob
import json
import logging
import os
import statistics
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from osiris.core.cost_models import default_cost_models
from osiris.core.tokens import default_counter
from osiris.core.volatile import find_volatile
from osiris.harness.importers.traces import Trace, find_traces, load_trace, problem
from osiris.harness.replay.metrics import add_net_gains, row_of
from osiris.harness.replay.profiles import native_profile, profile
from osiris.harness.replay.retrieval import query_for
from osiris.harness.replay.turns import (
    ClientNativeSystem,
    CountingCache,
    OracleSystem,
    RawSystem,
    ReplayBase,
)
from osiris.harness.replay.workloads import NEED_KINDS, session_from_trace
from osiris.harness.systems.osiris_engine import OsirisSystem

SCHEMA_PATH = Path(__file__).with_name("data") / "replay.schema.json"
SCHEMA_VERSION = "osiris-replay/2"
SYSTEMS = ("raw", "client-native", "oracle", "osiris")
SHOWN = ("raw", "client-native", "osiris")
_GLOB_CHARS = frozenset("*?[")
_log = logging.getLogger(__name__)


@dataclass
class Inputs:
    """The transcript files named by the user's paths, and the paths that named none."""

    files: list[tuple[Path, str]] = field(default_factory=list)
    """Each file with the name it is reported under."""
    unmatched: list[str] = field(default_factory=list)


def collect(paths: Iterable[str]) -> Inputs:
    """Files, directories (searched recursively) and globs, each file once, in order."""
    found = Inputs()
    seen: set[Path] = set()

    def add(path: Path, name: str) -> None:
        key = path.resolve()
        if key not in seen:
            seen.add(key)
            found.files.append((path, name))

    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_file():
            add(path, raw)
        elif path.is_dir():
            files = find_traces(path)
            for file in files:
                add(file, str(Path(raw) / file.relative_to(path)))
            if not files:
                found.unmatched.append(raw)
        elif _GLOB_CHARS & set(raw):
            matches = sorted(glob.glob(str(path), recursive=True))
            for match in matches:
                inner = Path(match)
                if inner.is_file():
                    add(inner, match)
                elif inner.is_dir():
                    for file in find_traces(inner):
                        add(file, str(inner / file.relative_to(inner)))
            if not matches:
                found.unmatched.append(raw)
        else:
            found.unmatched.append(raw)
    return found


class Progress:
    """A progress bar on stderr (a line every few percent when stderr is not a tty)."""

    WIDTH = 24

    def __init__(self, total: int, stream: TextIO | None = None, enabled: bool = True) -> None:
        self.total = total
        self.stream = stream or sys.stderr
        self.enabled = enabled and total > 0
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._every = max(1, total // 20)

    def update(self, done: int, label: str) -> None:
        """``done`` of ``total`` finished; ``label`` is the one being worked on."""
        if not self.enabled:
            return
        filled = self.WIDTH * done // self.total
        bar = "#" * filled + "." * (self.WIDTH - filled)
        line = f"replay [{bar}] {done}/{self.total} {label[-60:]}"
        if self.tty:
            self.stream.write("\r\x1b[2K" + line)
        elif done == self.total or done % self._every == 0 or done == 1:
            self.stream.write(line + "\n")
        self.stream.flush()

    def finish(self) -> None:
        """End the bar's line."""
        if self.enabled and self.tty:
            self.stream.write("\n")
            self.stream.flush()


def provider_usage(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The provider's own input counts, normalised (Anthropic counts cached input apart;
    OpenAI counts it inside ``input_tokens``), with the prompt-cache breaks they show."""
    if not records:
        return None
    totals, cached, breaks = [], [], 0
    previous_prefix = 0
    for usage in records:
        read = int(usage.get("cache_read_input_tokens") or 0)
        written = int(usage.get("cache_creation_input_tokens") or 0)
        if "cached_input_tokens" in usage:  # OpenAI / Codex
            total = int(usage.get("input_tokens") or 0)
            read = int(usage.get("cached_input_tokens") or 0)
        else:
            total = int(usage.get("input_tokens") or 0) + read + written
        # A break: less of the prompt came from the cache than was cached a call ago.
        if previous_prefix and read < previous_prefix * 0.9:
            breaks += 1
        previous_prefix = read + written if "cached_input_tokens" not in usage else total
        totals.append(total)
        cached.append(read)
    input_total = sum(totals)
    return {"records": len(records), "input_tokens": input_total,
            "cached_input_tokens": sum(cached),
            "cache_hit_ratio": round(sum(cached) / input_total, 6) if input_total else None,
            "cache_breaks": breaks, "first_call_input_tokens": totals[0],
            "output_tokens": sum(int(u.get("output_tokens") or 0) for u in records)}


@dataclass
class SessionReport:
    """Everything ``osiris replay`` says about one session."""

    name: str
    source: str
    format: str
    end_state: str | None
    calls: int
    skipped: dict[str, int]
    output_tokens: list[int]
    rows: list[dict[str, Any]]
    steps: list[dict[str, Any]]
    loopguard: list[dict[str, Any]]
    verdicts: dict[str, int]
    system_prompt_tokens: int | None
    volatile: list[dict[str, Any]]
    provider: dict[str, Any] | None
    raw_first_turn_tokens: int = 0
    client: str = "agent-loop"

    def system(self, name: str) -> dict[str, Any]:
        """The metrics row of one system."""
        return next(r for r in self.rows if r["system"] == name)

    def as_dict(self) -> dict[str, Any]:
        """The session's part of the ``--json`` document."""
        osiris = self.system("osiris")
        externalized = [s for s in self.steps if s["system"] == "osiris"
                        and s["mode"] not in ("bystander", "")]
        tokens = self.output_tokens
        systems = {}
        for row in self.rows:
            systems[row["system"]] = {
                "cumulative_input_tokens": row["cumulative_input_tokens"],
                "final_context_tokens": row["final_context_tokens"],
                "peak_context_tokens": row["peak_context_tokens"],
                "net_gain_cumulative_input": row["net_gain_cumulative_input_tokens"],
                "billed_cost_usd": {m: row[f"billed_cost_{m}"] for m in _models()},
                "needs_found": row["needs_found"], "needs_total": row["needs_total"],
                "answer_preservation": row["answer_preservation"],
                "extra_calls": row["extra_calls"]}
        raw = self.system("raw")
        estimate = raw["cumulative_input_tokens"]
        provider = dict(self.provider) if self.provider else None
        if provider is not None:
            provider["estimate_input_tokens"] = estimate
            provider["estimate_ratio"] = (round(estimate / provider["input_tokens"], 4)
                                          if provider["input_tokens"] else None)
            # What the transcript does not show (system prompt, tool definitions, memory
            # files), as the provider's first call reveals it, added to every turn. Only
            # per-call usage shows it (Codex exec reports one total per turn).
            unseen = with_head = ratio = None
            if provider["records"] > 1:
                unseen = max(provider["first_call_input_tokens"]
                             - self.raw_first_turn_tokens, 0)
                with_head = estimate + unseen * raw["turns"]
                ratio = (round(with_head / provider["input_tokens"], 4)
                         if provider["input_tokens"] else None)
            provider["unseen_head_tokens"] = unseen
            provider["estimate_with_head_tokens"] = with_head
            provider["estimate_with_head_ratio"] = ratio
        by_kind = {kind: {"found": osiris[f"needs_found_{kind}"],
                          "total": osiris[f"needs_total_{kind}"]}
                   for kind in NEED_KINDS if osiris.get(f"needs_total_{kind}")}
        return {
            "name": self.name, "source": self.source, "format": self.format,
            "client": self.client, "needs_by_kind": by_kind,
            "end_state": self.end_state, "tool_calls": self.calls, "skipped": self.skipped,
            "payloads": {"output_tokens": sum(tokens),
                         "median_tokens": statistics.median(tokens) if tokens else 0,
                         "max_tokens": max(tokens, default=0)},
            "externalized": {"outputs": len(externalized),
                             "output_tokens": sum(s["output_tokens"] for s in externalized),
                             "modes": json.loads(osiris["modes"])},
            "systems": systems,
            "loopguard": {"verdicts": self.verdicts, "flags": self.loopguard},
            "system_prompt": None if self.system_prompt_tokens is None else {
                "tokens": self.system_prompt_tokens, "volatile": self.volatile},
            "provider_usage": provider,
        }


def _models() -> tuple[str, ...]:
    return tuple(m.name for m in default_cost_models().models)


@dataclass
class ReplayRun:
    """The result of ``osiris replay``."""

    sessions: list[SessionReport] = field(default_factory=list)
    files_skipped: list[dict[str, Any]] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)
    client: str | None = None
    retrieval: str = "visible"

    def totals(self) -> dict[str, Any]:
        """All sessions together, per system."""
        out: dict[str, Any] = {}
        for name in SYSTEMS:
            rows = [s.system(name) for s in self.sessions]
            base = sum(s.system("client-native")["cumulative_input_tokens"]
                       for s in self.sessions)
            cumulative = sum(r["cumulative_input_tokens"] for r in rows)
            out[name] = {
                "cumulative_input_tokens": cumulative,
                "net_gain_cumulative_input": round(1 - cumulative / base, 6) if base else None,
                "billed_cost_usd": {m: round(sum(r[f"billed_cost_{m}"] for r in rows), 6)
                                    for m in _models()},
                "needs_found": sum(r["needs_found"] for r in rows),
                "needs_total": sum(r["needs_total"] for r in rows),
                "extra_calls": sum(r["extra_calls"] for r in rows)}
        return out

    def as_dict(self) -> dict[str, Any]:
        """The ``--json`` document (see ``osiris/harness/data/replay.schema.json``)."""
        skipped: Counter[str] = Counter()
        for session in self.sessions:
            skipped.update(session.skipped)
        return {"schema": SCHEMA_VERSION,
                "encoding": default_counter().encoding_name,
                "retrieval": self.retrieval, "client": self.client,
                "cost_models": list(_models()),
                "sessions": [s.as_dict() for s in self.sessions],
                "totals": self.totals() if self.sessions else None,
                "skipped": {"lines": dict(sorted(skipped.items())),
                            "files": self.files_skipped, "unmatched_paths": self.unmatched}}


def replay_sessions(inputs: Inputs, *, progress: Progress | None = None,
                    home: Path | None = None, client: str | None = None,
                    retrieval: str = "visible") -> ReplayRun:
    """Replay every file of ``inputs`` inside its own client (or ``client``), needs
    retrieved by ``retrieval``; unreadable or empty files are skipped, counted."""
    if client is not None:
        profile(client)  # an unknown name fails here, before any work
    query_for("", "", retrieval)
    run = ReplayRun(unmatched=list(inputs.unmatched), client=client, retrieval=retrieval)
    with tempfile.TemporaryDirectory(prefix="osiris-replay-") as scratch:
        osiris = OsirisSystem(home or Path(scratch) / "home", precheck=True, label="osiris")
        systems: list[ReplayBase] = [RawSystem(), ClientNativeSystem(), OracleSystem(), osiris]
        counting = CountingCache(default_counter())
        try:
            for done, (path, name) in enumerate(inputs.files, 1):
                if progress:
                    progress.update(done - 1, name)
                report = _one(path, name, systems, osiris, counting, run)
                if report is not None:
                    run.sessions.append(report)
            if progress:
                progress.update(len(inputs.files), "done")
                progress.finish()
        finally:
            osiris.close()
    return run


def _one(path: Path, name: str, systems: list[ReplayBase], osiris: OsirisSystem,
         counting: CountingCache, run: ReplayRun) -> SessionReport | None:
    try:
        trace = load_trace(path)
    except OSError as exc:
        run.files_skipped.append({"path": name, "reason": f"unreadable: {exc.strerror}"})
        return None
    reason = problem(trace)
    if reason is not None:
        skipped = {"path": name, "reason": reason}
        if trace.format != "unknown":
            skipped["format"] = trace.format
        run.files_skipped.append(skipped)
        return None
    session = session_from_trace(trace, name, str(path))
    models = default_cost_models().models
    chosen = profile(run.client) if run.client else native_profile(session)
    rows, steps = [], []
    first_turn = 0
    try:
        for system in systems:
            result = system.replay(session, counting, profile=chosen,
                                   retrieval=run.retrieval)
            rows.append(row_of(result, models, {"client": chosen.name,
                                                "retrieval": run.retrieval}))
            if system.name == "raw" and result.prompt_tokens:
                first_turn = result.prompt_tokens[0]
            steps += [{"session": name, "system": system.name, "step": s.step,
                       "tool": s.tool, "output_tokens": s.output_tokens,
                       "kept_tokens": s.kept_tokens, "final_tokens": s.final_tokens,
                       "mode": s.mode, "is_error": s.is_error} for s in result.steps]
    except Exception as exc:  # one hostile session must not end a run of hundreds
        _log.exception("replay of %s failed", name)
        run.files_skipped.append({"path": name, "format": trace.format,
                                  "reason": f"replay failed: {type(exc).__name__}: {exc}"})
        return None
    add_net_gains(rows, models)
    return SessionReport(
        name=name, source=str(path), format=trace.format,
        end_state=trace.meta.get("end_state"), calls=len(trace.steps),
        skipped=dict(sorted(trace.skipped.items())),
        output_tokens=[counting.count(s.output) for s in session.steps], rows=rows,
        steps=steps, loopguard=list(osiris.flags), verdicts=dict(osiris.verdicts),
        system_prompt_tokens=_prompt_tokens(trace, counting), volatile=_volatile(trace),
        provider=provider_usage(trace.usage), raw_first_turn_tokens=first_turn,
        client=chosen.name)


def _prompt_tokens(trace: Trace, counting: CountingCache) -> int | None:
    return counting.count(trace.system_prompt) if trace.system_prompt else None


def _volatile(trace: Trace) -> list[dict[str, Any]]:
    if not trace.system_prompt:
        return []
    return [v.as_dict() for v in find_volatile(trace.system_prompt, default_counter())]


# -- output ---------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:+.1f}%"


def display_names(names: list[str], width: int = 64) -> list[str]:
    """Names without the directory they all share, cut in the middle to ``width``."""
    if len(names) > 1:
        common = os.path.commonpath([os.path.dirname(n) or "." for n in names])
        if common not in ("", ".", "/"):
            names = [n[len(common):].lstrip("/") for n in names]
    return [_fit(n, width) for n in names]


def _fit(name: str, width: int) -> str:
    if len(name) <= width:
        return name
    # Shorten directory names first (the first ones first); the file name stays whole.
    parts = name.split("/")
    for index in range(len(parts) - 1):
        if len(parts[index]) > 13:
            parts[index] = parts[index][:12] + "…"
            if len("/".join(parts)) <= width:
                return "/".join(parts)
    name = "/".join(parts)
    return name if len(name) <= width else "…" + name[-(width - 1):]


def table(run: ReplayRun) -> str:
    """The terminal table: one line per session, then the totals."""
    header = ["session", "format", "calls", "output tok", "externalized",
              "raw input", "bare client", "osiris", "preserved", "loopguard"]
    lines = [header]
    shown = display_names([s.name for s in run.sessions])
    for s, name in zip(run.sessions, shown, strict=True):
        d = s.as_dict()
        raw, native, osiris = (d["systems"][k] for k in SHOWN)
        lines.append([
            name, s.format, str(s.calls), f"{d['payloads']['output_tokens']:,}",
            f"{d['externalized']['outputs']} ({d['externalized']['output_tokens']:,} tok)",
            f"{raw['cumulative_input_tokens']:,}",
            f"{native['cumulative_input_tokens']:,} ({_pct(native['net_gain_cumulative_input'])})",
            f"{osiris['cumulative_input_tokens']:,} ({_pct(osiris['net_gain_cumulative_input'])})",
            f"{osiris['needs_found']}/{osiris['needs_total']}", str(len(s.loopguard))])
    if run.sessions:
        t = run.totals()
        raw, native, osiris = (t[k] for k in SHOWN)
        lines.append([
            f"total ({len(run.sessions)} sessions)", "", str(sum(s.calls for s in run.sessions)),
            f"{sum(sum(s.output_tokens) for s in run.sessions):,}", "",
            f"{raw['cumulative_input_tokens']:,}",
            f"{native['cumulative_input_tokens']:,} ({_pct(native['net_gain_cumulative_input'])})",
            f"{osiris['cumulative_input_tokens']:,} ({_pct(osiris['net_gain_cumulative_input'])})",
            f"{osiris['needs_found']}/{osiris['needs_total']}",
            str(sum(len(s.loopguard) for s in run.sessions))])
    widths = [max(len(row[i]) for row in lines) for i in range(len(header))]
    out = ["  ".join(cell.ljust(w) if i < 2 else cell.rjust(w)
                     for i, (cell, w) in enumerate(zip(row, widths, strict=True))).rstrip()
           for row in lines]
    out.insert(1, "  ".join("-" * w for w in widths))
    if run.sessions:
        t = run.totals()
        out.append("")
        out.append("billed input cost, all sessions: " + "; ".join(
            f"{m}: raw ${t['raw']['billed_cost_usd'][m]:.2f}, "
            f"osiris ${t['osiris']['billed_cost_usd'][m]:.2f}" for m in _models()))
    skipped = run.as_dict()["skipped"]
    if skipped["lines"] or skipped["files"] or skipped["unmatched_paths"]:
        out.append("skipped: " + "; ".join(
            [f"{k} {v}" for k, v in skipped["lines"].items()]
            + [f"file {f['path']}: {f['reason']}" for f in skipped["files"]][:20]
            + [f"no match: {p}" for p in skipped["unmatched_paths"]]))
    return "\n".join(out) + "\n"


def write_parquet(run: ReplayRun, out: Path) -> list[Path]:
    """``sessions.parquet`` (a row per session and system), ``steps.parquet`` (per
    session, system and tool call) and ``loopguard.parquet`` under ``out``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out.mkdir(parents=True, exist_ok=True)
    sessions = []
    for s in run.sessions:
        d = s.as_dict()
        for row in s.rows:
            sessions.append({
                **row, "session": s.name, "source": s.source, "format": s.format,
                "end_state": s.end_state, "tool_calls": s.calls,
                "skipped": json.dumps(s.skipped),
                "output_tokens": d["payloads"]["output_tokens"],
                "externalized_outputs": d["externalized"]["outputs"],
                "externalized_tokens": d["externalized"]["output_tokens"],
                "loopguard_flags": len(s.loopguard),
                "system_prompt_tokens": s.system_prompt_tokens,
                "volatile_tokens": len(s.volatile),
                "provider_input_tokens": (s.provider or {}).get("input_tokens"),
                "provider_cache_breaks": (s.provider or {}).get("cache_breaks")})
    flags = [{"session": s.name, **f, "patterns": ",".join(f["patterns"])}
             for s in run.sessions for f in s.loopguard]
    tables = {"sessions.parquet": sessions,
              "steps.parquet": [r for s in run.sessions for r in s.steps],
              "loopguard.parquet": flags}
    written = []
    for file, rows in tables.items():
        path = out / file
        if rows:
            pq.write_table(pa.Table.from_pylist(rows), path)
        else:
            pq.write_table(pa.table({"session": pa.array([], pa.string())}), path)
        written.append(path)
    return written


def schema() -> dict[str, Any]:
    """The JSON schema of the ``--json`` document."""
    loaded: dict[str, Any] = json.loads(SCHEMA_PATH.read_text("utf-8"))
    return loaded

