"""Write-behind (osiris.store.write_behind, osiris.store.owner_log): the store owner's
calls answered from memory must be indistinguishable from calls run on DuckDB, and an
acknowledged call must survive the process that acknowledged it.

Real engines on real DuckDB files; the crash is a real SIGKILL of a real process."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import duckdb
import pytest

from osiris.clients.adapters import ClaudeCode
from osiris.config import Settings
from osiris.engine.facade import Engine
from osiris.errors import StoreError
from osiris.store import journal, owner_log, statements
from osiris.store.refs import RefStore
from osiris.store.state import Store
from osiris.store.write_behind import Batch
from tests.conftest import release_owner_and_wait, run_cli

TABLES = ("events", "ledger", "calls", "tasks", "refs", "task_refs", "tool_results",
          "client_sessions", "failures")
HEAD = "You are a coding agent working in a monorepo. Follow the rules.\n" * 40


class StepClock:
    """A clock that advances 1 ms per reading: two runs see the same times."""

    def __init__(self) -> None:
        self.now = 1_700_000_000_000_000

    def now_us(self) -> int:
        self.now += 1000
        return self.now


def _engine(home: Path, *, write_behind: bool) -> Engine:
    # A low prune threshold: every observe gives advice from the task's context items.
    settings = Settings(home=home, prune_threshold_tokens=2_000)
    store = Store(settings, exclusive=True, sole_writer=True, write_behind=write_behind,
                  clock=StepClock())
    ids = (f"t_{n:04d}" for n in itertools.count())
    return Engine(settings, store=store, task_ids=lambda: next(ids))


def _session(engine: Engine, workspace: Path) -> list[Any]:
    """A client session's calls: hooks of three sessions (repeats, failing tests, big
    reads), plain calls on a planned task, status reads and recalls in between."""
    big = workspace / "big.py"
    answers: list[Any] = []
    task = engine.plan("start", objective="compare", steps=["a", "b"])["task_id"]
    for i in range(36):
        session, cwd = f"session:s{i % 3}", str(workspace)
        command = {"command": f"ls {i % 5}"}
        answers.append(engine.precheck(session, "Bash", args=command,
                                       client=ClaudeCode.traits, cwd=cwd))
        answers.append(engine.observe(session, "result", tool="Bash", args=command,
                                      result=f"run {i % 5}\n" + HEAD * 4,
                                      client=ClaudeCode.traits, cwd=cwd))
        if i % 4 == 0:
            answers.append(engine.observe(session, "error", tool="Bash",
                                          args={"command": "pytest"},
                                          result="FAILED test_x - AssertionError\n" * 3,
                                          client=ClaudeCode.traits, cwd=cwd))
        if i % 12 == 0 and i:  # the failure's second or third time: it passes now
            answers.append(engine.observe(session, "result", tool="Bash",
                                          args={"command": "pytest"}, result="3 passed\n",
                                          client=ClaudeCode.traits, cwd=cwd))
        if i % 7 == 0:
            read = {"file_path": str(big)}
            answers.append(engine.precheck(session, "Read", args=read,
                                           client=ClaudeCode.traits, cwd=cwd))
            answers.append(engine.observe(session, "result", tool="Read", args=read,
                                          result=big.read_text(), client=ClaudeCode.traits,
                                          cwd=cwd))
        answers.append(engine.precheck(task, "Bash", args={"command": f"git status {i}"}))
        stored = engine.observe(task, "result", tool="Bash", args={"i": i % 6},
                                result=f"out {i % 6}\n" + HEAD * (i % 3 + 1))
        answers.append(stored)
        if i % 10 == 5:
            answers.append(engine.plan("status", task_id=task))
            answers.append(engine.recall(stored["ref"], "grep", pattern="out"))
        if i % 9 == 8:  # the agent drops what the advice named: an item leaves the context
            advice = stored.get("prune") or {}
            for dropped in advice.get("drop", [])[:2]:
                answers.append(engine.observe(task, "dropped", result=dropped["ref"]))
    return answers


def _tables(engine: Engine) -> dict[str, list[dict[str, Any]]]:
    out = {}
    with engine.store.read() as con:
        for name in TABLES:
            columns = [r[0] for r in con.execute(f"DESCRIBE {name}").fetchall() if r[0] != "id"]
            out[name] = [dict(zip(columns, row, strict=True)) for row in con.execute(
                f"SELECT {', '.join(columns)} FROM {name} ORDER BY ALL").fetchall()]
    return out


@pytest.mark.slow
def test_calls_answered_from_memory_equal_calls_run_on_duckdb(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "big.py").write_text("x = 1\n" * 3000)
    runs = {}
    for mode in (False, True):
        engine = _engine(tmp_path / f"home-{mode}", write_behind=mode)
        answers = _session(engine, workspace)
        runs[mode] = (answers, _tables(engine), engine.store.behind)
        engine.close()
    direct, behind = runs[False], runs[True]
    assert len(direct[0]) == len(behind[0]) > 150
    assert sum(1 for a in direct[0] if isinstance(a, dict) and a.get("prune")) > 20
    assert sum(1 for a in direct[0] if isinstance(a, dict) and a.get("dropped")) >= 4
    for n, (a, b) in enumerate(zip(direct[0], behind[0], strict=True)):
        assert a == b, f"answer {n} differs"
    for name in TABLES:
        assert direct[1][name] == behind[1][name], f"table {name} differs"
        assert direct[1][name], name
    resolved = [r for r in behind[1]["failures"] if r["resolved"]]
    # One session's failure: twice, passed, failed again, passed (one row, two lessons).
    assert [(r["attempts"], bool(r["lesson"])) for r in resolved] == [(3, True)], resolved
    stats = behind[2]
    assert stats is not None and stats.flushes > 0
    # Only the task creations (plan start, three sessions' first sight) and the recall's
    # media-type lookup left memory; every hook call was answered there.
    # A drop receipt reads the ref's ledger sums on DuckDB (once per dropped ref).
    reasons = dict(stats.slow_reasons)
    drops = sum(1 for a in behind[0] if isinstance(a, dict) and a.get("dropped"))
    receipt = next((k for k in reasons if k.startswith("SELECT coalesce(sum(context_tokens)")),
                   None)
    assert receipt is None or reasons.pop(receipt) <= drops, stats.slow_reasons
    assert sum(reasons.values()) <= 4 + 4, stats.slow_reasons


def test_steady_state_hook_calls_touch_no_duckdb_until_the_flush(tmp_path: Path) -> None:
    engine = _engine(tmp_path / "home", write_behind=True)
    behind = engine.store.behind
    assert behind is not None
    observed: list[tuple[str, bool]] = []  # (the result's first line, is it an error)
    answers: list[dict[str, Any]] = []
    commands: list[str] = []

    def call(command: str, kind: str, result: str) -> None:
        args = {"command": command}
        answers.append(engine.precheck("session:warm", "Bash", args=args,
                                       client=ClaudeCode.traits))
        answers.append(engine.observe("session:warm", kind, tool="Bash", args=args,
                                      result=result, client=ClaudeCode.traits))
        observed.append((result.splitlines()[0], kind == "error"))
        commands.append(command)

    def fail_then_pass() -> None:  # a failure, then its resolution (a lesson from the 2nd)
        call("pytest", "error", "FAILED test_x - AssertionError\n")
        call("pytest", "result", "3 passed\n")

    for i in range(3):  # first sight of the session and its first calls
        call("ls", "result", f"{i}\n" + HEAD)
        fail_then_pass()
    engine.store.flush()
    loads, slow, flushes = behind.cache.loads, sum(behind.slow_reasons.values()), \
        behind.flushes
    warm = len(answers)
    for i in range(30):
        call(f"ls {i}", "result", f"{i}\n" + HEAD)
        if i % 10 == 9:
            fail_then_pass()
    assert (behind.cache.loads, sum(behind.slow_reasons.values()), behind.flushes) == \
        (loads, slow, flushes), behind.slow_reasons
    # One log record per hook call (a precheck and an observe each) since the flush.
    assert len(owner_log.read_records(behind.log.path)) == len(answers) - warm == 72
    # What memory answered: every call allowed, each listing stored as its own ref with a
    # preview, and each test run's output recognised as one seen before the flush.
    assert all(a["verdict"] == "allow" for a in answers[warm::2])
    steady = list(zip(commands[warm // 2:], answers[warm + 1::2], strict=True))
    listings = [a for command, a in steady if command.startswith("ls")]
    assert len({a["ref"] for a in listings}) == 30, listings[0]
    assert all(a["mode"] == "light" and not a.get("duplicate") for a in listings)
    # The test run's outputs were seen before the flush: each one is named a duplicate.
    repeats = [a for command, a in steady if command == "pytest"]
    assert len(repeats) == 6 and all(a["duplicate"] for a in repeats), repeats
    with engine.store.read() as con:  # a read flushes first: it sees every observed call
        rows = con.execute("SELECT error_text, is_error, ref FROM calls "
                           "ORDER BY seq").fetchall()
    assert len(rows) == len(observed) == 45
    assert [bool(r[1]) for r in rows] == [error for _, error in observed]
    assert [r[0] for r in rows if r[1]] == [line for line, error in observed if error]
    assert [r[2] for r in rows] == [a["ref"] for a in answers[1::2]]  # the refs answered
    assert owner_log.read_records(behind.log.path) == []
    engine.close()


_WRITER = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from osiris.config import Settings
    from osiris.engine.facade import Engine
    from osiris.store.state import Store
    settings = Settings(home=Path(sys.argv[1]))
    store = Store(settings, exclusive=True, sole_writer=True, write_behind=True)
    engine = Engine(settings, store=store)
    task = engine.plan("start", objective="crash")["task_id"]
    for n in range(int(sys.argv[2])):
        answer = engine.observe(task, "result", tool="Bash", args={"n": n},
                                result=f"output {n}\\n" + "line\\n" * 400)
        print(json.dumps({"task_id": task, "ref": answer["ref"], "seq": n}), flush=True)
        if n + 1 == int(sys.argv[3]):  # the timer's flush takes these rows, then hangs
            with store.db.hold() as con:
                assert store.behind.take() is not None
    print("done", flush=True)
    sys.stdin.read()  # wait here, rows unflushed, until killed
""")


def _crash_after(home: Path, calls: int, taken_at: int = 0) -> list[dict[str, Any]]:
    """Run a write-behind engine for ``calls`` observes, then SIGKILL it (``taken_at``:
    after that many, a flush beside the calls takes the rows and never writes them)."""
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(home), str(calls),
                             str(taken_at)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    acked = []
    for line in proc.stdout:
        if line.strip() == "done":
            break
        acked.append(json.loads(line))
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()
    assert proc.stdin is not None
    proc.stdin.close()
    return acked


def test_a_killed_writer_loses_no_acknowledged_call_and_a_torn_tail_is_ignored(
        tmp_path: Path) -> None:
    home = tmp_path / "home"
    acked = _crash_after(home, 12)
    assert len(acked) == 12
    log = owner_log.log_path(home)
    records = owner_log.read_records(log)
    assert records, "the killed writer left its acknowledged calls in the log"
    with log.open("ab") as f:  # a record cut off by the crash: never acknowledged
        f.write(b'0badc0de [99999,[["INSERT INTO events (seq) VALUES (?)",[1]]')
    assert owner_log.read_records(log) == records
    # A process opening the file directly (no owner) applies the log before reading.
    store = Store(Settings(home=home), create=False)
    with store.read() as con:
        refs = {r[0] for r in con.execute("SELECT ref FROM task_refs").fetchall()}
        chain = journal.verify_chain(con, home)
        lsn = owner_log.applied_lsn(con)
    store.close()
    assert {a["ref"] for a in acked} <= refs
    assert chain.ok, chain
    assert lsn == records[-1][0]
    assert not owner_log.has_records(home)  # emptied once applied


def test_blob_files_a_crash_lost_come_back_from_the_log(tmp_path: Path) -> None:
    """The owner writes small blob files without fsync; their bytes are in the log line
    fsync'd before the answer. A power loss can leave such a file missing or torn (a
    SIGKILL cannot: the page cache survives it), so both are done here by hand after
    the kill: the next opener rewrites each from the log, and every acknowledged ref
    reads back whole."""
    home = tmp_path / "home"
    acked = _crash_after(home, 6)
    refs = RefStore(home / "refs")
    lost, torn = acked[0]["ref"], acked[1]["ref"]
    whole = refs.get(torn)
    refs.path_for(lost).unlink()
    refs.path_for(torn).write_bytes(whole[: len(whole) // 2])
    logged = {params[0] for _, items in owner_log.read_records(owner_log.log_path(home))
              for sql, params in items if sql == owner_log.BLOB}
    assert {a["ref"] for a in acked} <= logged
    engine = Engine(Settings(home=home))  # a direct writer applies the log
    for a in acked:
        assert engine.ref_bytes(a["ref"])[0].startswith(b"output ")
    engine.close()
    assert refs.get(torn) == whole
    assert not owner_log.has_records(home)


def test_records_are_applied_once_even_when_the_log_was_not_emptied(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _crash_after(home, 5)
    kept = owner_log.log_path(home).read_bytes()
    engine = Engine(Settings(home=home))  # a direct writer applies the log
    with engine.store.read() as con:
        events = con.execute("SELECT count(*) FROM events").fetchall()[0][0]
    # The same records again (a crash between the COMMIT and emptying the file):
    # their numbers are at or below applied_lsn, so they are skipped.
    owner_log.log_path(home).write_bytes(kept)
    with engine.store.read() as con:
        again = con.execute("SELECT count(*) FROM events").fetchall()[0][0]
        chain = journal.verify_chain(con, home)
    engine.close()
    assert events == again > 5
    assert chain.ok, chain


def test_a_witness_the_flush_cannot_write_is_reported_and_repaired(osiris_home: Path) -> None:
    post = {"session_id": "s-wb", "cwd": "/tmp", "hook_event_name": "PostToolUse",
            "tool_name": "Bash", "tool_use_id": "toolu_1", "tool_input": {"command": "ls"},
            "tool_response": {"stdout": "a\nb\n", "stderr": "", "exit_code": 0}}
    first = run_cli("hook", "claude-code", "post-tool-use", stdin=json.dumps(post))
    assert first.returncode == 0, first.stderr
    release_owner_and_wait(osiris_home)  # the owner flushes and exits: the witness is there
    witness = osiris_home / journal.WITNESS_NAME
    witness.unlink()
    witness.mkdir()  # it cannot be replaced now
    second = run_cli("hook", "claude-code", "post-tool-use",
                     stdin=json.dumps({**post, "tool_use_id": "toolu_2"}))
    assert second.returncode == 0 and "skipped" not in second.stderr, second.stderr
    release_owner_and_wait(osiris_home)  # its flush cannot move the witness
    logged = (osiris_home / "owner.log").read_text()
    assert "journal witness" in logged and "could not advance" in logged
    audit = run_cli("audit")
    assert audit.returncode != 0  # not hidden: the audit fails on the witness
    witness.rmdir()
    third = run_cli("hook", "claude-code", "post-tool-use",
                    stdin=json.dumps({**post, "tool_use_id": "toolu_3"}))
    assert third.returncode == 0, third.stderr
    release_owner_and_wait(osiris_home)  # the next flush writes the witness again
    store = Store(Settings(home=osiris_home), create=False)
    with store.read() as con:
        chain = journal.verify_chain(con, osiris_home)
        observed = con.execute("SELECT count(*) FROM events WHERE kind = 'observe.result'"
                               ).fetchall()[0][0]
    store.close()
    assert chain.ok, chain
    assert observed == 3  # every call is in the journal


def _count(engine: Engine, sql: str) -> int:
    with engine.store.read() as con:
        return int(con.execute(sql).fetchall()[0][0])


def _taken_after(home: Path, calls: int) -> tuple[Engine, str, Batch, Any]:
    """An owner's engine after ``calls`` observes, whose timer has just taken the rows
    for a flush beside the calls (not written yet): the engine, the task, the batch and
    the flush's own connection."""
    engine = _engine(home, write_behind=True)
    assert engine.store.behind is not None
    task = engine.plan("start", objective="a flush beside the calls")["task_id"]
    for i in range(calls):
        engine.observe(task, "result", tool="Bash", args={"i": i}, result=f"{i}\n" + HEAD)
    with engine.store.db.hold() as con:
        batch = engine.store.behind.take()
        own = con.cursor()
    assert batch is not None
    return engine, task, batch, own


def test_calls_go_on_while_a_flush_writes_beside_them(tmp_path: Path) -> None:
    """The owner's timer takes the deferred rows inside the store and writes them to
    DuckDB outside it: calls made meanwhile append to the log's other file, and nothing
    is written twice or lost."""
    engine, task, batch, own = _taken_after(tmp_path / "home", 4)
    behind = engine.store.behind
    first, second = owner_log.log_paths(tmp_path / "home")
    assert behind is not None and behind.log.path == second
    for i in range(4, 7):  # the write has not run: these calls do not wait for it
        engine.observe(task, "result", tool="Bash", args={"i": i}, result=f"{i}\n" + HEAD)
    # (the plan ran on DuckDB: a task creation leaves memory)
    assert len(owner_log.read_records(first)) == 4 and len(owner_log.read_records(second)) == 3
    assert behind.take() is None  # one write at a time
    behind.write(batch, own)
    assert owner_log.read_records(first) == [] and len(owner_log.read_records(second)) == 3
    calls = _count(engine, "SELECT count(*) FROM calls")  # a read flushes the rest
    assert calls == 7 and not owner_log.has_records(tmp_path / "home")
    with engine.store.read() as con:
        assert journal.verify_chain(con, tmp_path / "home").ok
    engine.close()


def test_a_flush_that_fails_beside_the_calls_loses_nothing(tmp_path: Path) -> None:
    engine, task, batch, own = _taken_after(tmp_path / "home", 3)
    behind = engine.store.behind
    assert behind is not None
    own.close()  # DuckDB refuses the write
    with pytest.raises(StoreError, match="safe in its owner log"):
        behind.write(batch, own)
    engine.observe(task, "result", tool="Bash", args={"i": 3}, result="3\n" + HEAD)
    assert behind.due(10**6) and behind.take() is None  # the failed rows go first
    assert _count(engine, "SELECT count(*) FROM calls") == 4
    assert _count(engine, "SELECT count(*) FROM events WHERE kind = 'observe.result'") == 4
    assert not owner_log.has_records(tmp_path / "home")
    engine.close()


def test_a_crash_while_a_flush_writes_beside_the_calls_loses_nothing(tmp_path: Path) -> None:
    """SIGKILL with rows taken by a flush that never wrote them and later calls in the
    log's other file: the next opener applies both files, in order."""
    home = tmp_path / "home"
    acked = _crash_after(home, 9, taken_at=5)
    first, second = owner_log.log_paths(home)
    taken = [lsn for lsn, _ in owner_log.read_records(first)]
    later = [lsn for lsn, _ in owner_log.read_records(second)]
    assert taken and len(later) == 4 and taken[-1] < later[0]
    store = Store(Settings(home=home), create=False)
    with store.read() as con:
        refs = {r[0] for r in con.execute("SELECT ref FROM task_refs").fetchall()}
        chain = journal.verify_chain(con, home)
        observed = con.execute("SELECT count(*) FROM events WHERE kind = 'observe.result'"
                               ).fetchall()[0][0]
    store.close()
    assert {a["ref"] for a in acked} <= refs and observed == 9
    assert chain.ok, chain
    assert not owner_log.has_records(home)


def test_a_flushed_batch_lands_as_its_rows_would_one_by_one(tmp_path: Path) -> None:
    """A batch goes in as one statement of columns (a column whose values mix types,
    row by row): either way the table holds what single inserts give."""
    ledger = statements.LEDGER
    rows = [[1_700_000_000_000_000 + n, f"t_{n % 3}", n, "result", f"mem://sha256:{n:064x}",
             n * 10, "cl100k_base", n, 0, 3, "openai-auto", n / 7 if n % 2 else n, None,
             json.dumps({"n": n})] for n in range(40)]
    mixed = [row.copy() for row in rows[:6]]
    mixed[2][13] = 42  # detail: an int among JSON texts
    tables = {}
    for name, batched in (("batched", True), ("single", False)):
        store = Store(Settings(home=tmp_path / name))
        store.db.migrate()
        store.close()
        con = duckdb.connect(str(tmp_path / name / "osiris.duckdb"))
        con.execute("BEGIN TRANSACTION")
        for batch in (rows, mixed):
            if batched:
                owner_log.apply(con, [(ledger.sql, row) for row in batch])
            else:
                for row in batch:
                    con.execute(ledger.sql, row)
        con.execute("COMMIT")
        tables[name] = con.execute(
            f"SELECT {', '.join(ledger.columns)} FROM ledger ORDER BY ts_us, detail"
        ).fetchall()
        con.close()
    assert len(tables["batched"]) == 46
    assert tables["batched"] == tables["single"]
