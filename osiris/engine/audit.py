"""The non-loss proof of SPEC §10: ``osiris audit --task ID``.

For one task it resolves every reference the task holds or mentions (its
``task_refs``, refs named in its journal events, ledger rows and checkpoints),
re-hashes every blob, checks the home's journal hash chain against its witness,
and checks that every ledger row of the task is backed by a journal event of the
same task. The task is ``lossless`` only when all of that holds.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

import duckdb

from osiris.config import Settings
from osiris.errors import NotFoundError
from osiris.store import journal
from osiris.store.db import fetch_row
from osiris.store.state import Store

_REF_IN_TEXT = re.compile(r"mem://sha256:[0-9a-f]{64}")


@dataclass
class AuditReport:
    """What ``osiris audit`` prints (as JSON)."""

    task_id: str
    lossless: bool = True
    items_externalized: int = 0
    items_verified: int = 0
    items_missing: int = 0
    integrity_violations: list[str] = field(default_factory=list)
    journal: dict[str, Any] = field(default_factory=dict)
    ledger: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    """What limits the proof without being a violation (a journal witness that lags)."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form, the SPEC §10 keys first."""
        return asdict(self)


def _referenced_refs(con: duckdb.DuckDBPyConnection, task_id: str) -> dict[str, str]:
    """Every ref the task holds or mentions, with where it was first seen."""
    referenced: dict[str, str] = {}
    for (ref,) in con.execute("SELECT ref FROM task_refs WHERE task_id = ?", [task_id]
                              ).fetchall():
        referenced.setdefault(ref, "task_refs")
    for seq, body in con.execute(
            "SELECT seq, body FROM events WHERE task_id = ? AND body LIKE '%mem://sha256:%'",
            [task_id]).fetchall():
        for ref in _REF_IN_TEXT.findall(body):
            referenced.setdefault(ref, f"event {seq}")
    for (ref,) in con.execute(
            "SELECT DISTINCT ref FROM ledger WHERE task_id = ? AND ref IS NOT NULL",
            [task_id]).fetchall():
        referenced.setdefault(ref, "ledger")
    for (ref,) in con.execute("SELECT state_ref FROM checkpoints WHERE task_id = ?",
                              [task_id]).fetchall():
        referenced.setdefault(ref, "checkpoint")
    return referenced


def _check_blobs(store: Store, report: AuditReport, referenced: dict[str, str],
                 known: set[str]) -> None:
    for ref in sorted(referenced):
        if ref not in known:
            report.items_missing += 1
            report.integrity_violations.append(
                f"{ref} (from {referenced[ref]}) has no metadata row in the store")
            continue
        check = store.refs.check(ref)
        if check.ok:
            report.items_verified += 1
        elif not store.refs.exists(ref):
            report.items_missing += 1
            report.integrity_violations.append(f"{ref} (from {referenced[ref]}): blob missing")
        else:
            report.integrity_violations.append(f"{check.problem}")


def audit_task(store: Store, task_id: str) -> AuditReport:
    """Prove (or disprove) that nothing of ``task_id`` was lost or altered."""
    report = AuditReport(task_id=task_id)
    with store.read() as con:
        if con.execute("SELECT 1 FROM tasks WHERE task_id = ?", [task_id]).fetchone() is None:
            raise NotFoundError(f"task {task_id!r} does not exist in {store.home}")
        referenced = _referenced_refs(con, task_id)
        known = {r for (r,) in con.execute(
            "SELECT ref FROM refs WHERE list_contains(?::VARCHAR[], ref)",
            [sorted(referenced)]).fetchall()}
        chain = journal.verify_chain(con, store.home)
        unbacked = fetch_row(
            con, "SELECT count(*) FROM ledger l WHERE l.task_id = ? AND (l.event_seq IS NULL OR"
            " NOT EXISTS (SELECT 1 FROM events e WHERE e.seq = l.event_seq"
            " AND e.task_id = l.task_id))", [task_id])[0]
        ledger_rows, claimed, proven = fetch_row(
            con, "SELECT count(*), coalesce(sum(saved_claimed), 0),"
            " coalesce(sum(saved_proven), 0) FROM ledger WHERE task_id = ?", [task_id])
        task_events = fetch_row(con, "SELECT count(*) FROM events WHERE task_id = ?",
                                [task_id])[0]

    report.items_externalized = len(referenced)
    _check_blobs(store, report, referenced, known)
    report.integrity_violations.extend(chain.violations)
    if unbacked:
        report.integrity_violations.append(
            f"{unbacked} ledger row(s) of this task have no journal event of this task")
    if proven > claimed:
        report.integrity_violations.append(
            f"ledger proves {proven} saved tokens but claims only {claimed}")
    report.journal = {"chain_ok": chain.ok, "events_total": chain.events,
                      "task_events": int(task_events), "head_seq": chain.head_seq,
                      "head_hash": chain.head_hash, "witness_seq": chain.witness_seq,
                      "witness_lag_events": chain.witness_lag,
                      "hash_v2_from_seq": chain.v2_from_seq}
    report.warnings.extend(chain.notes)
    report.ledger = {"rows": int(ledger_rows), "saved_claimed": int(claimed),
                     "saved_proven": int(proven), "unbacked_rows": int(unbacked)}
    report.lossless = not report.integrity_violations and report.items_missing == 0
    return report


def audit_home(settings: Settings, task_id: str) -> AuditReport:
    """The proof for one task of an existing home (``osiris audit``): opens it without
    creating anything (NotFoundError on a missing home) and closes it again."""
    store = Store(settings, create=False)
    try:
        return audit_task(store, task_id)
    finally:
        store.close()
