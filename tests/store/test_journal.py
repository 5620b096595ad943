"""The hash-chained journal detects edits, deletions and a lost tail."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from osiris.core.hashing import journal_event_hash
from osiris.store import journal
from osiris.store.state import Store
from tests.conftest import run_cli


def _fill(store: Store, n: int = 10) -> None:
    with store.transaction("t") as tx:
        tx.insert_task("t1", objective="o", state={})
    for i in range(n):
        with store.transaction("t") as tx:
            tx.event("step", {"i": i, "text": "é∑"}, task_id="t1")


def _tamper(home: Path, sql: str) -> None:
    con = duckdb.connect(str(home / "osiris.duckdb"))
    con.execute(sql)
    con.close()


def test_chain_is_consistent_and_sql_matches_python(store: Store, osiris_home: Path) -> None:
    _fill(store)
    with store.read() as con:
        report = journal.verify_chain(con, osiris_home)
        rows = con.execute("SELECT seq, ts_us, task_id, actor, kind, body, prev_hash, hash"
                           " FROM events ORDER BY seq").fetchall()
    assert report.ok and report.events == 10 and report.head_seq == 10
    for seq, ts, task, actor, kind, body, prev, digest in rows:
        assert journal_event_hash(seq, ts, task, actor, kind, body, prev) == digest
    witness = json.loads((osiris_home / "journal.witness").read_text())
    assert witness == {"seq": 10, "hash": report.head_hash}


def test_edited_event_is_detected(store: Store, osiris_home: Path) -> None:
    _fill(store)
    _tamper(osiris_home, "UPDATE events SET body = '{\"i\":42}' WHERE seq = 4")
    result = run_cli("audit", "--task", "t1")
    assert result.returncode == 1
    assert any("event 4" in v and "edited" in v
               for v in json.loads(result.stdout)["integrity_violations"])


def test_edit_with_recomputed_hash_is_caught_by_the_next_link(store: Store,
                                                               osiris_home: Path) -> None:
    _fill(store)
    with store.read() as con:
        seq, ts, task, actor, kind, _, prev = con.execute(
            "SELECT seq, ts_us, task_id, actor, kind, body, prev_hash FROM events"
            " WHERE seq = 5").fetchone()
    forged = journal_event_hash(seq, ts, task, actor, kind, '{"i":0}', prev)
    _tamper(osiris_home, f"UPDATE events SET body = '{{\"i\":0}}', hash = '{forged}' WHERE seq = 5")
    with store.read() as con:
        report = journal.verify_chain(con, osiris_home)
    assert not report.ok
    assert any("event 6" in v and "prev_hash" in v for v in report.violations)


def test_forged_last_event_is_caught_by_the_witness(store: Store, osiris_home: Path) -> None:
    _fill(store)
    with store.read() as con:
        seq, ts, task, actor, kind, _, prev = con.execute(
            "SELECT seq, ts_us, task_id, actor, kind, body, prev_hash FROM events"
            " WHERE seq = 10").fetchone()
    forged = journal_event_hash(seq, ts, task, actor, kind, '{"i":0}', prev)
    _tamper(osiris_home,
            f"UPDATE events SET body = '{{\"i\":0}}', hash = '{forged}' WHERE seq = 10")
    with store.read() as con:
        report = journal.verify_chain(con, osiris_home)
    assert any("witness" in v for v in report.violations)


def test_deleted_event_is_detected(store: Store, osiris_home: Path) -> None:
    _fill(store)
    _tamper(osiris_home, "DELETE FROM events WHERE seq = 3")
    with store.read() as con:
        report = journal.verify_chain(con, osiris_home)
    assert any("event 4" in v and "gap" in v for v in report.violations)
    health = run_cli("health")
    assert health.returncode == 1
    assert not json.loads(health.stdout)["journal"]["chain_ok"]


def test_lost_tail_is_detected_by_the_witness(store: Store, osiris_home: Path) -> None:
    _fill(store)
    # What a torn WAL tail looks like after recovery: the last commits are simply gone.
    _tamper(osiris_home, "DELETE FROM events WHERE seq > 7")
    with store.read() as con:
        report = journal.verify_chain(con, osiris_home)
    assert report.violations == (
        "journal tail lost: the witness saw event 10 committed but the database ends at 7",)


def test_rolled_back_transaction_leaves_no_event_and_no_witness_move(
        store: Store, osiris_home: Path) -> None:
    _fill(store, 2)
    try:
        with store.transaction("t") as tx:
            tx.event("doomed", {}, task_id="t1")
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    with store.read() as con:
        report = journal.verify_chain(con, osiris_home)
    assert report.ok and report.head_seq == 2


def test_only_temp_files_of_dead_writers_are_removed(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from osiris.store.journal import remove_stale_temp_files

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    home = tmp_path / "h"
    home.mkdir()
    left = home / f".journal.witness.{dead}.ab12cd34.tmp"  # a writer killed mid-write
    live = home / f".journal.witness.{os.getpid()}.ab12cd34.tmp"  # a writer at work
    for path in (left, live):
        path.write_text("{}")
    remove_stale_temp_files(home)
    assert not left.exists() and live.exists()
