"""Multi-process load on one OSIRIS home: the store's concurrency, exercised for real.

``python -m osiris.harness.bench.store_load write HOME TASK COUNT SIZE`` stores COUNT
payloads for TASK through the real store, printing one JSON line per write only
after it committed; ``read HOME SECONDS`` reads and verifies the journal in a loop.
The tests kill and count these processes; the benchmark times them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from osiris.config import Settings
from osiris.core.redaction import scrub
from osiris.core.tokens import default_counter
from osiris.store import journal
from osiris.store.db import fetch_row
from osiris.store.state import Store


def write_payloads(home: Path, task_id: str, count: int, size: int) -> None:
    """Create ``task_id`` if needed and store ``count`` distinct payloads."""
    store = Store(Settings(home=home))
    counter = default_counter()
    with store.transaction(actor=f"worker-{task_id}") as tx:
        if tx.con.execute("SELECT 1 FROM tasks WHERE task_id = ?", [task_id]).fetchone() is None:
            tx.insert_task(task_id, objective=f"worker {task_id}", state={"n": 0})
            tx.event("task.start", {"objective": f"worker {task_id}"}, task_id=task_id)
    for i in range(count):
        started = time.perf_counter()
        text = f"payload {task_id} #{i} pid {os.getpid()}\n" + \
            "line of output from a tool\n" * (size // 27)
        scrubbed = scrub(text)
        data = scrubbed.text.encode()
        ref, _ = store.put_blob(data)
        tokens = counter.count(scrubbed.text)
        wait_before = store.db.lock_wait_s
        with store.transaction(actor=f"worker-{task_id}") as tx:
            tx.record_ref(ref, size_bytes=len(data), tokens=tokens,
                          encoding=counter.encoding_name, media_type="text/plain",
                          redaction_version=scrubbed.rules_version, redactions=0)
            tx.link_ref(task_id, ref, "observe")
            event = tx.event("payload.externalize", {"ref": ref, "i": i}, task_id=task_id)
            tx.ledger(kind="externalize", task_id=task_id, event_seq=event.seq, ref=ref,
                      tokens=tokens, encoding=counter.encoding_name, saved_claimed=tokens)
        sys.stdout.write(json.dumps({
            "i": i, "seq": event.seq, "ref": ref,
            "latency_s": time.perf_counter() - started,
            "lock_wait_s": store.db.lock_wait_s - wait_before}) + "\n")
        sys.stdout.flush()
    store.close()


def read_loop(home: Path, seconds: float) -> None:
    """Count and verify the journal repeatedly, printing one line per read."""
    store = Store(Settings(home=home))
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        started = time.perf_counter()
        with store.read() as con:
            events = fetch_row(con, "SELECT count(*) FROM events")[0]
            chain = journal.verify_chain(con, home)
        sys.stdout.write(json.dumps({"events": events, "chain_ok": chain.ok,
                                     "latency_s": time.perf_counter() - started}) + "\n")
        sys.stdout.flush()
    store.close()


def spawn(*args: str) -> subprocess.Popen[str]:
    """Start a worker process of this module."""
    return subprocess.Popen([sys.executable, "-m", "osiris.harness.bench.store_load", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@dataclass(frozen=True)
class LoadResult:
    """What a concurrent load run observed."""

    writers: int
    writes_acknowledged: int
    write_latencies_s: list[float]
    lock_waits_s: list[float]
    read_latencies_s: list[float]
    reads: int
    events_in_db: int
    chain_ok: bool
    wall_s: float
    errors: list[str]


def run_load(home: Path, *, writers: int, per_writer: int, size: int,
             read_seconds: float) -> LoadResult:
    """Run ``writers`` writer processes and one reader on ``home``; collect timings."""
    started = time.perf_counter()
    procs = [spawn("write", str(home), f"load-{n}", str(per_writer), str(size))
             for n in range(writers)]
    reader = spawn("read", str(home), str(read_seconds))
    outs = [p.communicate(timeout=600) for p in procs]
    r_out, r_err = reader.communicate(timeout=600)
    wall = time.perf_counter() - started
    writes = [json.loads(line) for out, _ in outs for line in out.splitlines()]
    reads = [json.loads(line) for line in r_out.splitlines()]
    errors = [err for _, err in outs if err.strip()] + ([r_err] if r_err.strip() else [])
    store = Store(Settings(home=home))
    with store.read() as con:
        events = fetch_row(con, "SELECT count(*) FROM events")[0]
        chain = journal.verify_chain(con, home)
    store.close()
    return LoadResult(writers, len(writes), [w["latency_s"] for w in writes],
                      [w["lock_wait_s"] for w in writes], [r["latency_s"] for r in reads],
                      len(reads), int(events), chain.ok, wall, errors)


if __name__ == "__main__":
    command = sys.argv[1]
    if command == "write":
        write_payloads(Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    elif command == "read":
        read_loop(Path(sys.argv[2]), float(sys.argv[3]))
    else:
        raise SystemExit(f"unknown command {command!r}: use write or read")
