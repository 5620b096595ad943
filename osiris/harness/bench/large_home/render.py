"""Rendering: a copy's rows, with its own ids, times, sequence numbers and hashes (step 3)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from osiris.core.hashing import sha256_hex
from osiris.core.memory import MemoryEntry
from osiris.core.prefix import compute_zones
from osiris.harness.bench.large_home.compile import (
    _MUTABLE_TABLES,
    _SEQS,
    _TABLES,
    _TIMES,
    _Cols,
    _Unit,
    columns,
    render,
)
from osiris.harness.bench.large_home.plan import _Copy


class _Sink:
    """Columns of every table, filled copy by copy."""

    def __init__(self) -> None:
        self.tables: dict[str, dict[str, list[Any]]] = {
            name: {col: [] for col in columns(name)} for name in _TABLES}

    def events_in_order(self) -> dict[str, list[Any]]:
        """The event columns sorted by sequence number (which runs from 1 without gaps)."""
        events = self.tables.pop("events")
        position = [0] * len(events["seq"])
        for i, seq in enumerate(events["seq"]):
            position[seq - 1] = i
        return {name: [values[i] for i in position] for name, values in events.items()}


class _Renderer:
    """Renders one copy's rows into a sink."""

    def __init__(self, unit: _Unit, copy: _Copy, sink: _Sink) -> None:
        self.unit, self.copy, self.sink = unit, copy, sink
        self.t0, self.start, self.pace = unit.call_ts[0], copy.start_us, copy.pace
        self.env = dict(copy.values)
        n_events = unit.events_after(copy.calls)
        self.seq_of = dict(zip(unit.append["events"].data["seq"][:n_events], copy.seqs,
                               strict=True))

    def when(self, t: int) -> int:
        """A template time moved into the copy's time."""
        return self.start + int((t - self.t0) * self.pace)

    def emit(self, table: str, cols: _Cols, rows: int) -> None:
        """Append the first ``rows`` rows of ``cols`` to the sink's ``table``."""
        out = self.sink.tables[table]
        env, seq_of = self.env, self.seq_of
        t0, start, pace = self.t0, self.start, self.pace
        for name in columns(table):
            values = cols.data[name] if rows == cols.rows else cols.data[name][:rows]
            if name in _TIMES:
                out[name].extend([start + int((t - t0) * pace) for t in values])
            elif name in _SEQS:
                out[name].extend(map(seq_of.__getitem__, values))
            elif name in cols.compiled:
                out[name].extend([v[0].format(*map(env.__getitem__, v[1]))
                                  if v.__class__ is tuple else v for v in values])
            else:
                out[name].extend(values)

    def run(self) -> None:
        from osiris.engine.governance import progress_row

        unit, env, calls = self.unit, self.env, self.copy.calls
        for key in unit.time_keys:
            env[key] = str(self.when(int(key)))
        for key in unit.seq_keys:  # a number past the cut is never rendered
            env[key] = str(self.seq_of.get(int(key), int(key)))
        for seal in unit.seals:
            zones = compute_zones(replace(seal.state, objective=env[seal.objective_marker]))
            env[seal.seal], env[seal.zone_b] = zones.seal, zones.zone_b

        # Memory entries are content-addressed: their ids change with their scope ids.
        mem = self.sink.tables["memory"]
        first = len(mem["entry_id"])
        self.emit("memory", unit.append["memory"], unit.upto["memory"][calls])
        old_ids = unit.append["memory"].data["entry_id"]
        for i in range(first, len(mem["entry_id"])):
            entry = MemoryEntry(mem["scope"][i], mem["scope_id"][i], mem["kind"][i],
                                mem["key"][i], json.loads(mem["value"][i]))
            env[old_ids[i - first]] = mem["entry_id"][i] = entry.entry_id

        # The state after each call, hashed as TaskState.state_hash does, for the events.
        n_events = unit.events_after(calls)
        for digest in unit.event_state[:n_events]:
            if digest is not None and digest not in env:
                env[digest] = sha256_hex(render(unit.states[digest], env))
        for table in ("events", "ledger", "usage_reports", "task_refs"):
            self.emit(table, unit.append[table], unit.upto[table][calls])
        out = self.sink.tables["calls"]
        first = len(out["seq"])
        self.emit("calls", unit.append["calls"], unit.upto["calls"][calls])
        for i in range(first, len(out["seq"])):  # a plan change's marker hashes its seq
            if out["tool"][i] == "osiris_plan":
                out["fingerprint"][i] = progress_row(out["seq"][i]).fingerprint
        snapshot = unit.mutable[calls - 1]
        for table in _MUTABLE_TABLES:
            self.emit(table, snapshot[table], snapshot[table].rows)
        tasks = self.sink.tables["tasks"]
        for i in range(len(tasks["state"]) - snapshot["tasks"].rows, len(tasks["state"])):
            tasks["state_hash"][i] = sha256_hex(tasks["state"][i])
