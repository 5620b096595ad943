"""The store's locking traps: misuse fails at once and says so, callbacks are never lost,
reads need no write access, busy messages say who holds the store, and a failure after
a commit is never reported as a call without effect."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from osiris.config import Settings
from osiris.engine import Engine
from osiris.errors import CommittedWithErrors, StoreBusyError, StoreError
from osiris.store import journal
from osiris.store.migrations import MIGRATIONS
from osiris.store.state import Store
from tests.conftest import REPO, run_cli

# -- a: a write inside a read -----------------------------------------------------------


def test_a_write_inside_a_read_is_refused_at_once(osiris_home: Path) -> None:
    # The lock timeout is long: before the fix the write waited all of it for the read's
    # own shared lock, then blamed "another process".
    store = Store(Settings(home=osiris_home, lock_timeout_s=60))
    store.db.migrate()
    with store.read() as con:
        con.execute("SELECT 1").fetchone()
        with pytest.raises(StoreError) as caught:
            _write_one(store)
    assert not isinstance(caught.value, StoreBusyError)
    assert "inside a read" in str(caught.value)
    assert "another process" not in str(caught.value)
    with store.read() as con:  # the store is still usable, and nothing was written
        assert con.execute("SELECT count(*) FROM events").fetchone() == (0,)
    store.close()


def _write_one(store: Store) -> None:
    with store.transaction("t") as tx:
        tx.event("never", {}, task_id=None)


# -- b: nested on_commit callbacks --------------------------------------------------------


def test_a_nested_on_commit_runs_after_the_outer_commit(store: Store) -> None:
    ran: list[str] = []
    with store.db.write(on_commit=lambda: ran.append("outer")) as con:
        con.execute("CREATE TABLE probe (x INT)")
        with store.db.write(on_commit=lambda: ran.append("inner")) as inner:
            inner.execute("INSERT INTO probe VALUES (1)")
            assert ran == []  # not before the outer transaction commits
    assert ran == ["outer", "inner"]

    ran.clear()
    with pytest.raises(RuntimeError, match="the outer transaction fails"):
        _nested_writes_then_fail(store, ran)
    assert ran == []  # rolled back: no callback runs
    with store.read() as con:
        assert con.execute("SELECT list(x) FROM probe").fetchone() == ([1],)


def _nested_writes_then_fail(store: Store, ran: list[str]) -> None:
    with store.db.write(on_commit=lambda: ran.append("outer")):
        with store.db.write(on_commit=lambda: ran.append("inner")) as inner:
            inner.execute("INSERT INTO probe VALUES (2)")
        raise RuntimeError("the outer transaction fails")


def test_a_transaction_nested_in_a_plain_write_still_moves_the_witness(
        store: Store, osiris_home: Path) -> None:
    with store.db.write() as con, store.transaction("t") as tx:
        assert tx.con is con
        tx.event("inside", {}, task_id=None)
    with store.read() as con:
        report = journal.verify_chain(con, osiris_home)
    assert report.ok, report.violations
    assert report.witness_seq == report.head_seq == 1


# -- c: reads take the shared lock only; read-only homes ----------------------------------

HOLD_READ = """
import sys
from pathlib import Path
from osiris.config import Settings
from osiris.store.state import Store
store = Store(Settings(home=Path(sys.argv[1])))
with store.read() as con:
    con.execute("SELECT count(*) FROM events").fetchone()
    print("reading", flush=True)
    sys.stdin.readline()
"""


def test_the_first_read_of_a_process_waits_for_no_writer_lock(
        store: Store, osiris_home: Path) -> None:
    """A fresh process's first read used to take the exclusive lock to migrate, so it
    waited for every reader (here one that stays inside) until its lock timeout."""
    with store.transaction("t") as tx:
        tx.event("e", {}, task_id=None)
    store.close()
    reader = _holding(HOLD_READ, str(osiris_home), "reading")
    try:
        result = run_cli("health", env={"OSIRIS_LOCK_TIMEOUT_S": "2"})
    finally:
        reader.communicate(input="done\n", timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout)["journal"]["head_seq"] == 1


def _read_only_home(home: Path) -> None:
    for path in sorted(home.rglob("*"), reverse=True):
        path.chmod(0o555 if path.is_dir() else 0o444)
    home.chmod(0o555)


def _writable_again(home: Path) -> None:
    home.chmod(0o755)
    for path in home.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)


def _without_write_permission() -> None:
    """In the child: root ignores file modes unless it gives up CAP_DAC_OVERRIDE (1) and
    CAP_DAC_READ_SEARCH (2); dropping them from the bounding set makes the exec'd
    process obey them (a non-root user obeys them anyway)."""
    if os.geteuid() != 0:
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def _cli_without_write_access(*args: str) -> subprocess.CompletedProcess[str]:
    probe = ("import os, sys; from pathlib import Path; h = Path(os.environ['OSIRIS_HOME']);"
             " sys.exit(0 if not os.access(h, os.W_OK) else 3)")
    checks = subprocess.run([sys.executable, "-c", probe], preexec_fn=_without_write_permission,
                            capture_output=True, text=True, timeout=60, check=False)
    assert checks.returncode == 0, "the home is still writable for the child"
    return subprocess.run([sys.executable, "-m", "osiris", *args],
                          preexec_fn=_without_write_permission, capture_output=True,
                          text=True, timeout=120, check=False, cwd=REPO)


def test_an_up_to_date_home_reads_without_write_access(osiris_home: Path) -> None:
    engine = Engine(Settings(home=osiris_home))
    task = engine.plan("start", objective="read me without write access")["task_id"]
    engine.close()
    _read_only_home(osiris_home)
    try:
        health = _cli_without_write_access("health")
        audit = _cli_without_write_access("audit", "--task", task)
    finally:
        _writable_again(osiris_home)
    assert health.returncode == 0, health.stdout + health.stderr
    assert json.loads(health.stdout)["journal"]["chain_ok"] is True
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert json.loads(audit.stdout)["lossless"] is True


def test_a_home_that_needs_migrating_but_is_read_only_says_so(osiris_home: Path) -> None:
    from osiris.store.db import Database

    osiris_home.mkdir(parents=True)
    Database(osiris_home / "osiris.duckdb", migrations=MIGRATIONS[:-1]).migrate()
    _read_only_home(osiris_home)
    try:
        health = _cli_without_write_access("health")
    finally:
        _writable_again(osiris_home)
    assert health.returncode == 1
    problem = json.loads(health.stdout)["problems"][0]
    assert "needs migrating" in problem and "not writable" in problem, problem
    assert MIGRATIONS[-1].name in problem


# -- d: busy messages say what holds the store ---------------------------------------------

HOLD_WRITE = """
import sys
from pathlib import Path
from osiris.config import Settings
from osiris.store.state import Store
store = Store(Settings(home=Path(sys.argv[1])))
with store.transaction("holder") as tx:
    print("writing", flush=True)
    sys.stdin.readline()
"""

HOLD_DUCKDB = """
import sys, duckdb
con = duckdb.connect(sys.argv[1])
print("open", flush=True)
sys.stdin.readline()
"""


def _holding(code: str, arg: str, ready: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", code, arg], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == ready + "\n", \
        proc.communicate(timeout=60)[1]
    return proc


def test_a_busy_store_names_the_process_that_holds_it(osiris_home: Path) -> None:
    store = Store(Settings(home=osiris_home, lock_timeout_s=0.5))
    store.db.migrate()
    holder = _holding(HOLD_WRITE, str(osiris_home), "writing")
    try:
        with pytest.raises(StoreBusyError) as caught:
            _write_one(store)
    finally:
        holder.communicate(input="done\n", timeout=60)
    message = str(caught.value)
    assert f"pid {holder.pid}" in message and "OSIRIS_LOCK_TIMEOUT_S" in message, message


def test_a_store_held_open_outside_osiris_says_what_to_do(osiris_home: Path) -> None:
    store = Store(Settings(home=osiris_home, lock_timeout_s=0.5))
    store.db.migrate()
    holder = _holding(HOLD_DUCKDB, str(store.db.path), "open")
    try:
        with pytest.raises(StoreBusyError) as caught, store.read() as con:
            con.execute("SELECT 1")
    finally:
        holder.communicate(input="done\n", timeout=60)
    message = str(caught.value)
    assert "Parquet" not in message, message  # there is no Parquet export to read
    assert f"pid {holder.pid}" in message and "close" in message, message


# -- f: a failure after the commit ----------------------------------------------------------


def test_a_witness_failure_after_commit_says_the_call_took_effect(
        settings: Settings, osiris_home: Path) -> None:
    engine = Engine(settings)
    engine.plan("start", objective="first")
    witness = osiris_home / journal.WITNESS_NAME
    saved = osiris_home / "witness.saved"
    witness.rename(saved)
    witness.mkdir()  # the witness cannot be replaced for one call
    (witness / "keep").write_text("x")
    try:
        with pytest.raises(CommittedWithErrors) as caught:
            engine.plan("start", objective="second")
    finally:
        shutil.rmtree(witness)
        saved.rename(witness)
    error = caught.value
    assert error.code == "committed_with_errors"
    assert "took effect" in str(error) and "do not retry" in str(error).lower(), str(error)
    store = Store(settings)
    with store.read() as con:
        tasks = con.execute("SELECT objective FROM tasks ORDER BY created_us").fetchall()
    store.close()
    assert tasks == [("first",), ("second",)]  # committed, once

    second = next(task for task, objective in _task_ids(osiris_home)
                  if objective == "second")
    lagging = run_cli("audit", "--task", second)
    assert lagging.returncode == 0, lagging.stdout + lagging.stderr
    report = json.loads(lagging.stdout)
    assert report["lossless"] is True
    assert report["journal"]["witness_lag_events"] > 0
    assert any("witness lags" in w for w in report["warnings"]), report
    health = json.loads(run_cli("health").stdout)
    assert any("witness lags" in w for w in health["warnings"])

    engine.plan("status", task_id=second)  # a read: the witness stays behind
    engine.plan("start", objective="third")  # the next commit catches it up
    engine.close()
    caught_up = json.loads(run_cli("audit", "--task", second).stdout)
    assert caught_up["journal"]["witness_lag_events"] == 0
    assert caught_up["warnings"] == []


def _task_ids(home: Path) -> list[tuple[str, str]]:
    store = Store(Settings(home=home))
    with store.read() as con:
        rows = con.execute("SELECT task_id, objective FROM tasks").fetchall()
    store.close()
    return [(r[0], r[1]) for r in rows]
