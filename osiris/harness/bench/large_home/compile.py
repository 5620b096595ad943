"""Compilation: texts split around what changes in a copy (step 2)."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from osiris.core.hashing import sha256_hex
from osiris.core.prefix import compute_zones
from osiris.core.task_state import TaskState
from osiris.harness.bench.large_home.capture import _Capture
from osiris.harness.bench.large_home.common import _TIME_SPAN_US, TEMPLATE_SEQ_BASE, TEMPLATE_T0_US
from osiris.store.migrations import table_columns

CText = str | tuple[str, tuple[str, ...]]
"""A template text: plain, or a ``str.format`` pattern and the tokens filling its ``{}``."""

_MARK = "\ue000{}\ue001"
_TOKEN = re.compile(r"\ue000\d+\ue001|(?<![0-9A-Za-z_.])(?:[0-9a-f]{64}|[0-9a-f]{24}|\d{16}|\d{8})"
                    r"(?![0-9A-Za-z_])")

# The tables a large home fills, with the columns written from the templates: the schema's
# own (osiris.store.migrations.table_columns), less those a sequence fills and the journal's
# hash chain, which the build computes. Times and sequence numbers are mapped, the rest
# copied or, for texts, rendered.
_TABLES = ("events", "ledger", "calls", "usage_reports", "task_refs", "memory", "tasks",
           "tool_results", "failures", "handoffs")
_CHAIN = frozenset({"prev_hash", "hash"})


@functools.cache
def columns(table: str) -> tuple[str, ...]:
    """The columns of ``table`` a large home writes from its templates."""
    return tuple(c for c in table_columns(table) if c not in _CHAIN)


_TIMES = {"ts_us", "created_us", "updated_us", "first_us", "last_us"}
_SEQS = {"seq", "event_seq"}
_APPEND_TABLES = ("events", "ledger", "calls", "usage_reports")
_INSERT_TABLES = ("task_refs", "memory")
_MUTABLE_TABLES = ("tasks", "tool_results", "failures", "handoffs")


def render(text: CText, env: dict[str, str]) -> str:
    """A compiled text with its tokens replaced by ``env``."""
    if isinstance(text, str):
        return text
    pattern, keys = text
    return pattern.format(*map(env.__getitem__, keys))


@dataclass
class _Cols:
    """Rows of one table as columns, texts compiled."""

    data: dict[str, list[Any]]
    rows: int
    compiled: frozenset[str]
    """Columns holding at least one compiled text (the others are copied as they are)."""

    def keep(self, name: str, values: list[Any]) -> None:
        """Replace a column by values that are copied, never rendered."""
        self.data[name] = values
        self.compiled = self.compiled - {name}


class _Compiler:
    """Splits the texts of one template unit around its variable tokens."""

    def __init__(self, literals: dict[str, str], interesting: set[str]) -> None:
        # Longest first, so that no literal is cut by a shorter one inside it.
        self.markers = [(text, _MARK.format(i)) for i, text in
                        enumerate(sorted(literals, key=len, reverse=True))]
        self.interesting = interesting
        self.keys: set[str] = set()

    def text(self, value: str) -> CText:
        for literal, marker in self.markers:
            if literal in value:
                value = value.replace(literal, marker)
        pieces: list[str] = []
        keys: list[str] = []
        pos = 0
        for match in _TOKEN.finditer(value):
            token = match.group(0)
            if token[0] != "\ue000" and token not in self.interesting:
                continue
            pieces.append(value[pos:match.start()])
            keys.append(token)
            pos = match.end()
        if not keys:
            return value
        pieces.append(value[pos:])
        self.keys.update(keys)
        return "{}".join(p.replace("{", "{{").replace("}", "}}") for p in pieces), tuple(keys)

    def columns(self, table: str, rows: Sequence[tuple[Any, ...]]) -> _Cols:
        """Rows as compiled columns (in the order of ``columns(table)``)."""
        names = columns(table)
        out: dict[str, list[Any]] = {name: [] for name in names}
        for row in rows:
            for name, value in zip(names, row, strict=True):
                out[name].append(self.text(value) if isinstance(value, str) else value)
        compiled = frozenset(name for name, values in out.items()
                             if any(isinstance(v, tuple) for v in values))
        return _Cols(out, len(rows), compiled)


@dataclass
class _Seal:
    """A seal the template issued, and the state whose zones it stood for."""

    seal: str
    zone_b: str
    state: TaskState
    objective_marker: str = ""


@dataclass
class _Unit:
    """A compiled template unit: what a copy cut after ``k`` calls consists of."""

    name: str
    weight: float
    min_calls: int
    call_ts: list[int]
    markers: dict[str, tuple[str, str]]
    """marker -> (kind, template literal)."""
    task_markers: list[str]
    append: dict[str, _Cols]
    """Append- and insert-only tables, compiled, in write order."""
    upto: dict[str, list[int]]
    """Per table, how many of its rows exist after ``k`` calls (index ``k``)."""
    mutable: list[dict[str, _Cols]]
    """Per call ``k - 1``, the compiled rows of the mutable tables after it."""
    event_state: list[str | None]
    """Per event, the template state hash its body names (None when it names none)."""
    states: dict[str, CText]
    """Template state hash -> the compiled state text it is the hash of."""
    seals: list[_Seal]
    time_keys: list[str]
    seq_keys: list[str]

    @property
    def calls(self) -> int:
        return len(self.call_ts)

    def events_after(self, calls: int) -> int:
        return self.upto["events"][calls]


def _interesting_tokens(cap: _Capture) -> tuple[set[str], dict[str, str], list[_Seal]]:
    """Template tokens that change in a copy: times, sequence numbers, state hashes,
    seals and zone-B hashes, memory entry ids; plus state texts by hash and the seals."""
    states: dict[str, str] = {}
    seals: dict[str, _Seal] = {}
    for snap in cap.snaps:
        for row in snap.mutable["tasks"]:
            text = row[8]
            digest = sha256_hex(text)
            if digest != row[9]:
                raise AssertionError(f"template task {row[0]}: state_hash is not sha256(state)")
            if digest in states:
                continue
            states[digest] = text
            state = TaskState.from_dict(json.loads(text))
            for record in state.seals:
                if record.seal not in seals:
                    zones = compute_zones(state)
                    if zones.seal != record.seal:  # a seal is recorded with the state it seals
                        raise AssertionError(f"template seal {record.seal} is not the seal of "
                                             "the first state that records it")
                    seals[record.seal] = _Seal(record.seal, record.zone_b, state)
    tokens = set(states) | {s.seal for s in seals.values()} | {s.zone_b for s in seals.values()}
    tokens |= {row[0] for row in cap.rows["memory"]}
    texts = [v for table in cap.rows.values() for row in table for v in row
             if isinstance(v, str)]
    texts += [v for snap in cap.snaps for rows in snap.mutable.values() for row in rows
              for v in row if isinstance(v, str)]
    for text in texts:
        for token in _TOKEN.findall(text):
            is_time = len(token) == 16 and \
                TEMPLATE_T0_US <= int(token) < TEMPLATE_T0_US + _TIME_SPAN_US
            is_seq = len(token) == 8 and token.isdigit() and \
                TEMPLATE_SEQ_BASE < int(token) < TEMPLATE_SEQ_BASE + 1_000_000
            if is_time or is_seq:
                tokens.add(token)
    return tokens, states, list(seals.values())


def _compile(cap: _Capture) -> _Unit:
    """Compile one captured unit."""
    interesting, states, seals = _interesting_tokens(cap)
    comp = _Compiler(cap.literals, interesting)
    markers = {marker: (cap.literals[text], text) for text, marker in comp.markers}
    by_literal = dict(comp.markers)
    append = {name: comp.columns(name, [row[1:] if name in ("ledger", "usage_reports")
                                        else row for row in cap.rows[name]])
              for name in (*_APPEND_TABLES, *_INSERT_TABLES)}
    upto: dict[str, list[int]] = {name: [0] for name in append}
    for snap in cap.snaps:
        upto["events"].append(sum(1 for r in cap.rows["events"] if r[0] <= snap.seq))
        upto["calls"].append(sum(1 for r in cap.rows["calls"] if r[1] <= snap.seq))
        upto["ledger"].append(sum(1 for r in cap.rows["ledger"] if r[0] <= snap.ledger_id))
        upto["usage_reports"].append(sum(1 for r in cap.rows["usage_reports"]
                                         if r[0] <= snap.usage_id))
        upto["task_refs"].append(sum(1 for r in cap.rows["task_refs"] if r[2] <= snap.ts))
        upto["memory"].append(sum(1 for r in cap.rows["memory"] if r[7] <= snap.ts))
    # Recomputed for each copy, never rendered: keep the template values.
    append["memory"].keep("entry_id", [row[0] for row in cap.rows["memory"]])
    cache: dict[tuple[Any, ...], _Cols] = {}
    mutable = []
    for snap in cap.snaps:
        compiled = {}
        for name in _MUTABLE_TABLES:
            rows = snap.mutable[name]
            key = (name, rows)
            if key not in cache:
                cache[key] = comp.columns(name, rows)
                if name == "tasks":
                    cache[key].keep("state_hash", [row[9] for row in rows])
            compiled[name] = cache[key]
        mutable.append(compiled)
    event_state = []
    for body in (row[5] for row in cap.rows["events"]):
        digest = json.loads(body).get("state_hash")
        event_state.append(digest if digest in states else None)
    compiled_states = {digest: comp.text(text) for digest, text in states.items()}
    for seal in seals:
        seal.objective_marker = by_literal[seal.state.objective]
    times = sorted(k for k in comp.keys if len(k) == 16 and k.isdigit())
    seqs = sorted(k for k in comp.keys if len(k) == 8 and k.isdigit())
    return _Unit(
        name=cap.name, weight=cap.weight, min_calls=cap.min_calls,
        call_ts=[s.ts for s in cap.snaps], markers=markers,
        task_markers=[by_literal[t] for t in cap.tasks], append=append, upto=upto,
        mutable=mutable, event_state=event_state, states=compiled_states, seals=seals,
        time_keys=times, seq_keys=seqs)
