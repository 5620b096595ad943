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


# -- the hash encoding: unambiguous, versioned, the same in SQL and in Python --------------

HOSTILE = ["agent|observe", "|", "||", "", "a\"b'c", "back\\slash\\", "line\nbreak\r\n",
           "nul\x00byte", "tab\tesc\x1bbel\x07del\x7f", "e\u0301 (combining)", "👩‍👩‍👧 emoji",
           "\u2028\u2029", "日本語", "{\"json\":[1]}", "0" * 64, "\U0010ffff"]


def test_fields_that_move_a_separator_hash_differently() -> None:
    body, prev = "{}", "0" * 64
    assert journal_event_hash(1, 5, "t", "agent|observe", "x", body, prev) != \
        journal_event_hash(1, 5, "t", "agent", "observe|x", body, prev)
    assert journal_event_hash(1, 5, None, "a", "k", body, prev) != \
        journal_event_hash(1, 5, "", "a", "k", body, prev)
    assert journal_event_hash(12, 3, "t", "a", "k", body, prev) != \
        journal_event_hash(1, 23, "t", "a", "k", body, prev)


def test_sql_and_python_agree_on_hostile_values(store: Store, osiris_home: Path) -> None:
    with store.transaction("t") as tx:
        for i, text in enumerate(HOSTILE):
            tx.event(text or "k", {"text": text, "i": i}, task_id=text, actor=text or "a")
            tx.event("k", {"text": text}, task_id=None, actor=text or "a")
    with store.read() as con:
        report = journal.verify_chain(con, osiris_home)
        rows = con.execute("SELECT seq, ts_us, task_id, actor, kind, body, prev_hash, hash"
                           " FROM events ORDER BY seq").fetchall()
    assert report.ok, report.violations
    assert report.events == 2 * len(HOSTILE)
    assert [r[2] for r in rows[::2]] == HOSTILE  # stored exactly, NUL and all
    for seq, ts, task, actor, kind, body, prev, digest in rows:
        assert journal_event_hash(seq, ts, task, actor, kind, body, prev) == digest


def test_an_edit_that_moves_a_separator_is_detected(store: Store, osiris_home: Path) -> None:
    with store.transaction("agent|observe") as tx:
        tx.event("x", {}, task_id=None)
        tx.event("y", {}, task_id="")
    # Same bytes once joined with '|': invisible to a '|'-joined hash.
    _tamper(osiris_home, "UPDATE events SET actor = 'agent', kind = 'observe|x' WHERE seq = 1")
    _tamper(osiris_home, "UPDATE events SET task_id = NULL WHERE seq = 2")
    with store.read() as con:
        report = journal.verify_chain(con, osiris_home)
    assert any("event 1" in v and "edited" in v for v in report.violations), report.violations
    assert any("event 2" in v and "edited" in v for v in report.violations), report.violations


def test_a_home_written_before_the_v2_hash_still_verifies(osiris_home: Path) -> None:
    """Events of a home created with the '|'-joined hash (chain v1) keep verifying with
    it; events appended after the upgrade use v2; an edit to either is still caught."""
    from osiris.config import Settings
    from osiris.core.hashing import GENESIS_HASH, journal_event_hash_v1
    from osiris.store.db import Database
    from osiris.store.migrations import MIGRATIONS

    osiris_home.mkdir(parents=True)
    v1_migrations = tuple(m for m in MIGRATIONS if m.name < "0009")
    old = Database(osiris_home / "osiris.duckdb", migrations=v1_migrations)
    old.migrate()
    prev = GENESIS_HASH
    with old.write() as con:
        con.execute("INSERT INTO tasks (task_id, created_us, updated_us, objective, status,"
                    " state, state_hash) VALUES ('t1', 1, 1, 'o', 'active', '{}', 'x')")
        for seq in range(1, 6):
            body = json.dumps({"i": seq, "text": "a|b"})
            digest = journal_event_hash_v1(seq, 1000 + seq, "t1", "agent|x", "step", body, prev)
            con.execute("INSERT INTO events (seq, ts_us, task_id, actor, kind, body, prev_hash,"
                        " hash) VALUES (?, ?, 't1', 'agent|x', 'step', ?, ?, ?)",
                        [seq, 1000 + seq, body, prev, digest])
            prev = digest
    journal.write_witness(osiris_home, 5, prev)

    store = Store(Settings(home=osiris_home))
    with store.transaction("agent") as tx:  # the upgrade, then two v2 events
        tx.event("step", {"i": 6}, task_id="t1")
        tx.event("step", {"i": 7}, task_id="t1")
    with store.read() as con:
        report = journal.verify_chain(con, osiris_home)
        rows = con.execute("SELECT seq, ts_us, task_id, actor, kind, body, prev_hash, hash"
                           " FROM events WHERE seq > 5 ORDER BY seq").fetchall()
    store.close()
    assert report.ok, report.violations
    assert report.events == 7 and report.head_seq == 7 and report.v2_from_seq == 6
    for seq, ts, task, actor, kind, body, prev_hash, digest in rows:
        assert journal_event_hash(seq, ts, task, actor, kind, body, prev_hash) == digest
    audit = run_cli("audit", "--task", "t1")
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert json.loads(audit.stdout)["lossless"] is True

    # (A v1 event keeps v1's blind spot: moving a '|' between its fields goes unseen.)
    _tamper(osiris_home, "UPDATE events SET body = '{\"i\":30}' WHERE seq = 3")
    _tamper(osiris_home, "UPDATE events SET body = '{\"i\":70}' WHERE seq = 7")
    store = Store(Settings(home=osiris_home))
    with store.read() as con:
        violations = journal.verify_chain(con, osiris_home).violations
    store.close()
    assert any("event 3" in v and "edited" in v for v in violations), violations
    assert any("event 7" in v and "edited" in v for v in violations), violations
