"""Several real OSIRIS processes on one home: nothing lost, no lock errors, bounded waits."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from osiris.config import Settings
from osiris.harness.bench.store_load import spawn as _spawn
from osiris.store import journal
from osiris.store.state import Store
from tests.conftest import run_cli


@pytest.mark.slow
def test_three_writers_and_a_reader_lose_nothing(osiris_home: Path) -> None:
    writers = [_spawn("write", str(osiris_home), f"task-{n}", "40", "2000") for n in range(3)]
    reader = _spawn("read", str(osiris_home), "3")
    outputs = [w.communicate(timeout=300) for w in writers]
    reader_out, reader_err = reader.communicate(timeout=300)

    for proc, (_, err) in zip(writers, outputs, strict=True):
        assert proc.returncode == 0, err
        assert "Conflicting lock" not in err
    assert reader.returncode == 0, reader_err
    reads = [json.loads(line) for line in reader_out.splitlines()]
    assert reads, "the reader got no turn while writers were busy"
    assert all(r["chain_ok"] for r in reads)

    acknowledged = [json.loads(line) for out, _ in outputs for line in out.splitlines()]
    assert len(acknowledged) == 120
    store = Store(Settings(home=osiris_home))
    with store.read() as con:
        seqs = {r[0] for r in con.execute("SELECT seq FROM events").fetchall()}
        chain = journal.verify_chain(con, osiris_home)
        ledger_rows = con.execute("SELECT count(*) FROM ledger").fetchone()[0]
    assert {a["seq"] for a in acknowledged} <= seqs
    assert chain.ok, chain.violations
    assert ledger_rows == 120
    for n in range(3):
        result = run_cli("audit", "--task", f"task-{n}")
        assert result.returncode == 0, result.stdout + result.stderr
        report = json.loads(result.stdout)
        assert report["lossless"] is True
        assert report["items_externalized"] == report["items_verified"] == 40


@pytest.mark.slow
def test_sigkill_mid_write_then_clean_audit(osiris_home: Path) -> None:
    proc = _spawn("write", str(osiris_home), "victim", "100000", "20000")
    acknowledged = []
    assert proc.stdout is not None
    for line in proc.stdout:
        acknowledged.append(json.loads(line))
        if len(acknowledged) == 15:
            proc.send_signal(signal.SIGKILL)
            break
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL

    audit = run_cli("audit", "--task", "victim")
    assert audit.returncode == 0, audit.stdout + audit.stderr
    report = json.loads(audit.stdout)
    assert report["lossless"] is True
    assert report["integrity_violations"] == []
    assert report["items_verified"] >= 15
    health = run_cli("health")
    assert health.returncode == 0, health.stdout
    assert json.loads(health.stdout)["journal"]["head_seq"] >= acknowledged[-1]["seq"]

    # The store keeps working after the crash.
    follow_up = _spawn("write", str(osiris_home), "victim", "3", "100")
    _, err = follow_up.communicate(timeout=120)
    assert follow_up.returncode == 0, err
    assert run_cli("audit", "--task", "victim").returncode == 0


def test_lock_timeout_is_a_clear_error(osiris_home: Path) -> None:
    import fcntl

    store = Store(Settings(home=osiris_home, lock_timeout_s=0.2))
    store.db.migrate()
    fd = os.open(store.db.lock_path, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        from osiris.errors import StoreBusyError

        with pytest.raises(StoreBusyError, match="OSIRIS_LOCK_TIMEOUT_S"), \
                store.transaction() as tx:
            tx.event("never", {}, task_id=None)
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


READER = """
import sys, time
from pathlib import Path
from osiris.config import Settings
from osiris.store.state import Store
store = Store(Settings(home=Path(sys.argv[1])))
store.db.migrate()
print("ready", flush=True)
sys.stdin.readline()  # go
time.sleep(float(sys.argv[3]))  # staggered: the two readers' holds always overlap
deadline = time.monotonic() + float(sys.argv[2])
reads = 0
while time.monotonic() < deadline:
    with store.read() as con:  # a slow page: the shared lock is held for 0.4 s
        con.execute("SELECT count(*) FROM events").fetchone()
        if reads == 0:
            print("reading", flush=True)  # holds the shared lock now
        time.sleep(0.4)
    reads += 1
print(reads, flush=True)
"""

WRITER = """
import sys
from pathlib import Path
from osiris.config import Settings
from osiris.store.state import Store
store = Store(Settings(home=Path(sys.argv[1]), lock_timeout_s=float(sys.argv[2])))
for i in range(10):
    with store.transaction("writer") as tx:
        tx.event("probe", {"i": i}, task_id=None)
print(store.db.lock_wait_s, flush=True)
"""


@pytest.mark.slow
def test_readers_back_to_back_do_not_starve_a_writer(osiris_home: Path) -> None:
    """Two readers whose shared locks always overlap (a dashboard polled by two browsers
    on a large home) used to hold a writer off until its lock timeout; the turnstile
    puts the writer before readers that come after it."""
    import subprocess
    import sys

    Store(Settings(home=osiris_home)).db.migrate()
    readers = [subprocess.Popen([sys.executable, "-c", READER, str(osiris_home), "12",
                                 str(delay)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
               for delay in (0.0, 0.2)]
    try:
        for reader in readers:
            assert reader.stdout is not None and reader.stdout.readline() == "ready\n"
        for reader in readers:
            assert reader.stdin is not None
            reader.stdin.write("go\n")
            reader.stdin.flush()
        for reader in readers:  # both hold the shared lock now
            assert reader.stdout is not None and reader.stdout.readline() == "reading\n"
        # Each write may wait for the readers already inside (0.4 s); 5 s is the bound
        # a starved writer runs into.
        writer = subprocess.run([sys.executable, "-c", WRITER, str(osiris_home), "5"],
                                capture_output=True, text=True, timeout=120, check=False)
    finally:
        outs = [r.communicate(timeout=60) for r in readers]
    assert writer.returncode == 0, writer.stderr
    assert all(r.returncode == 0 and int(out.split()[-1]) > 0
               for r, (out, _) in zip(readers, outs, strict=True))
    store = Store(Settings(home=osiris_home))
    with store.read() as con:
        assert con.execute("SELECT count(*) FROM events WHERE kind = 'probe'"
                           ).fetchone() == (10,)
