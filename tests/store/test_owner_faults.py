"""A stuck or broken store owner costs a call milliseconds, never the call (issue 36,
items 7 and 8): a stopped owner, one that never answers, a reader's long query, a
database the owner cannot open, and an owner-log record that cannot be applied.

Real owner processes (SIGSTOPped for real), the real hook command fed Claude Code's
payload, the real ``osiris run``, ``osiris recall`` and ``osiris health``, the real MCP
server over stdio. No timings are asserted: a call that hangs fails by its subprocess
timeout (:data:`WAIT_S`, far past the hooks' bound), one that is bounded passes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from osiris.engine.remote import query
from osiris.harness.bench.owner_load import owner_pid, owner_stats
from osiris.owner_wire import socket_path
from osiris.store import owner_log, statements
from osiris.store.db import ask_owner_to_release
from tests.conftest import home_rows, run_cli
from tests.server.transports import client_for, osiris_env, run
from tests.store.test_owner import _wait_for

WAIT_S = 20.0
"""How long a test lets a hook or command run: far past the hooks' 3 s bound, far short
of forever."""
PRE = {"session_id": "s-stuck", "cwd": "/tmp", "hook_event_name": "PreToolUse",
       "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "toolu_1"}
POST = {**PRE, "hook_event_name": "PostToolUse",
        "tool_response": {"stdout": "a\nb\n", "stderr": "", "interrupted": False}}
ZERO_REF = "mem://sha256:" + "0" * 64
FAILED_NAME = "owner.failed"
"""What an owner that could not open its store leaves in the home."""
LONG_QUERY = "SELECT sum(hash(i)) FROM range(10000000000000) t(i)"
"""Hours of work for DuckDB: only a cancelled query ends within a test."""
READER = f"""
import sys
from osiris.config import Settings
from osiris.engine.remote import query
home, bound = sys.argv[1:]
try:
    query(home, {LONG_QUERY!r}, settings=Settings.from_env(
        {{"OSIRIS_HOME": home, "OSIRIS_QUERY_TIMEOUT_S": bound}}))
except Exception as exc:
    print(type(exc).__name__, exc, flush=True)
"""
"""A notebook's read of a live home, its query bounded by OSIRIS_QUERY_TIMEOUT_S."""
SILENT = """
import socket, sys
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(sys.argv[1])
server.listen(8)
print("listening", flush=True)
held = []
while True:
    held.append(server.accept()[0])
"""


def _hook(event: str, doc: dict[str, Any] = PRE, env: dict[str, str] | None = None,
          ) -> dict[str, Any]:
    """The real hook command's answer (exit 0 always: a hook never blocks a tool)."""
    done = run_cli("hook", "claude-code", event, stdin=json.dumps(doc), env=env,
                   timeout=WAIT_S)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else {}


def _logged(home: Path) -> list[dict[str, Any]]:
    """The lines of hooks.log (calls OSIRIS let through unchecked)."""
    path = home / "hooks.log"
    lines = path.read_text("utf-8").splitlines() if path.exists() else []
    return [json.loads(line) for line in lines]


@contextlib.contextmanager
def _stopped(pid: int) -> Iterator[None]:
    """The process stopped by SIGSTOP, continued whatever the test did."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def _in_flight(home: Path) -> int:
    """Requests the owner is handling, the ping that asks included."""
    stats = owner_stats(home)
    return -1 if stats is None else int(stats["in_flight"])


def test_a_stopped_owner_costs_hooks_a_logged_skip_and_the_cli_a_clear_error(
        osiris_home: Path) -> None:
    assert "systemMessage" not in _hook("pre-tool-use")  # answered: an owner serves
    pid = owner_pid(osiris_home)
    assert pid is not None
    with _stopped(pid):
        for event, doc in (("pre-tool-use", PRE), ("post-tool-use", POST)):
            answer = _hook(event, doc)
            assert set(answer) == {"systemMessage"}, answer  # the call goes ahead as is
            assert "owner_timeout" in answer["systemMessage"]
            assert f"kill -CONT {pid}" in answer["systemMessage"]
        assert [(e["event"], e["problem"].split(":")[0]) for e in _logged(osiris_home)] == [
            ("pre-tool-use", "owner_timeout"), ("post-tool-use", "owner_timeout")]
        # A routed command's output (over the threshold: it would be stored) is shown
        # as without OSIRIS, and one line says why.
        ran = run_cli("run", "--", "seq 1 5000", timeout=WAIT_S)
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout == "".join(f"{i}\n" for i in range(1, 5001))
        assert "OwnerTimeout" in _logged(osiris_home)[-1]["problem"]
        # The CLI: an error that says what is wrong and what to do.
        recall = run_cli("recall", ZERO_REF, timeout=WAIT_S)
        assert recall.returncode == 1
        assert "owner_timeout" in recall.stderr and f"kill -CONT {pid}" in recall.stderr
        assert "Traceback" not in recall.stderr
        health = run_cli("health", timeout=WAIT_S)
        assert health.returncode == 1
        doc = json.loads(health.stdout)
        assert doc["store_owner"]["state"] == "not answering"
        assert doc["store_owner"]["pid"] == pid
        assert any(f"kill -CONT {pid}" in problem for problem in doc["problems"])
    # Continued, it serves again: nothing was replaced or lost.
    assert "systemMessage" not in _hook("pre-tool-use", {**PRE, "session_id": "s-after"})
    assert owner_pid(osiris_home) == pid


@pytest.mark.parametrize("bound", [None, "1.5"], ids=["default", "configured"])
def test_an_owner_that_never_answers_costs_a_hook_its_bound(osiris_home: Path,
                                                            bound: str | None) -> None:
    # A process that holds the owner's socket and never answers: what an owner stuck
    # inside a call (not stopped: that is given up on at once) looks like to a client.
    osiris_home.mkdir(parents=True)
    with subprocess.Popen([sys.executable, "-c", SILENT, str(socket_path(osiris_home))],
                          stdout=subprocess.PIPE, text=True) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "listening\n"
            env = None if bound is None else {"OSIRIS_HOOK_TIMEOUT_S": bound}
            answer = _hook("pre-tool-use", env=env)
        finally:
            holder.kill()
    assert set(answer) == {"systemMessage"}
    assert f"did not answer within {bound or 3}s" in answer["systemMessage"]
    assert _logged(osiris_home)[-1]["problem"].startswith("owner_timeout: ")


def test_a_long_query_holds_no_hook_and_stops_when_its_reader_goes(osiris_home: Path,
                                                                   ) -> None:
    assert "systemMessage" not in _hook("pre-tool-use")
    # A first read loads the owner's Arrow writer, so that the long one is in DuckDB
    # within milliseconds of its request (before the hook below can start).
    assert query(osiris_home, "SELECT 1 AS one").num_rows == 1
    with subprocess.Popen([sys.executable, "-c", READER, str(osiris_home), "3600"],
                          stdout=subprocess.DEVNULL) as reader:
        try:
            assert _wait_for(lambda: _in_flight(osiris_home) == 2)  # the query runs
            # A hook meanwhile is answered by the owner, not held until the query ends.
            answer = _hook("pre-tool-use", {**PRE, "session_id": "s-during-query"})
            assert "systemMessage" not in answer, answer
            assert _in_flight(osiris_home) == 2  # and the query still runs
        finally:
            reader.kill()  # the notebook is gone mid-query
    assert _wait_for(lambda: _in_flight(osiris_home) == 1)  # so is its query
    assert _logged(osiris_home) == []


def test_a_query_past_its_time_is_stopped_with_a_clear_error(osiris_home: Path) -> None:
    assert "systemMessage" not in _hook("pre-tool-use")
    done = subprocess.run([sys.executable, "-c", READER, str(osiris_home), "1"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.stdout.startswith("QueryCancelled "), done.stdout + done.stderr
    assert "ran past 1s (OSIRIS_QUERY_TIMEOUT_S)" in done.stdout
    assert _in_flight(osiris_home) == 1  # nothing of it runs on


def test_a_corrupt_database_is_found_once_reported_by_health_and_skipped_fast(
        osiris_home: Path) -> None:
    osiris_home.mkdir(parents=True)
    db = osiris_home / "osiris.duckdb"
    db.write_bytes(b"not a DuckDB file " * 4000)
    # A hook bound far past WAIT_S: the hook must see its owner die, not wait it out.
    patient = {"OSIRIS_HOOK_TIMEOUT_S": "600"}

    def starts() -> int:
        return (osiris_home / "owner.log").read_text("utf-8").count("cannot open the store")

    answer = _hook("pre-tool-use", env=patient)
    assert "owner_failed" in answer["systemMessage"], answer
    assert str(db) in answer["systemMessage"] and "osiris health" in answer["systemMessage"]
    assert starts() == 1
    for event, doc in (("pre-tool-use", PRE), ("post-tool-use", POST)):
        answer = _hook(event, doc, env=patient)
        assert "owner_failed" in answer["systemMessage"]
        assert "remembered" in answer["systemMessage"]
    assert starts() == 1  # remembered: no owner started again to fail the same way
    assert [e["problem"].split(":")[0] for e in _logged(osiris_home)] == ["owner_failed"] * 3
    health = run_cli("health", timeout=WAIT_S)
    assert health.returncode == 1 and "Traceback" not in health.stderr
    doc = json.loads(health.stdout)
    failure = doc["store_owner"]["failed_start"]
    assert failure["database"] == str(db)
    assert "not a valid DuckDB database" in failure["message"]
    assert any(f"mv {db} {db}.damaged" in problem for problem in doc["problems"])
    # Reported: forgotten, so the next call tries once more (and remembers again).
    assert not (osiris_home / FAILED_NAME).exists()
    _hook("pre-tool-use", env=patient)
    assert starts() == 2
    assert (osiris_home / FAILED_NAME).exists()
    # What health says to do: the damaged file moved aside, the next call starts anew.
    db.rename(osiris_home / "osiris.duckdb.damaged")
    assert "systemMessage" not in _hook("pre-tool-use", env=patient)
    assert not (osiris_home / FAILED_NAME).exists()


def _record(lsn: int, items: list[list[Any]]) -> bytes:
    """An owner-log line, checksummed as the owner writes it."""
    text = json.dumps([lsn, items], separators=(",", ":"))
    return f"{zlib.crc32(text.encode()):08x} {text}\n".encode()


def _ledger(kind: str, ts_us: object = 1_700_000_000_000_000) -> list[Any]:
    """A ledger row, as the owner logs one."""
    return [statements.LEDGER.sql, [ts_us, None, None, kind, None, 0, "cl100k_base", 0, 0,
                                    0, None, 0.0, 0, "{}"]]


def test_a_bad_owner_log_record_is_set_aside_and_the_rest_applied(osiris_home: Path,
                                                                  ) -> None:
    assert "systemMessage" not in _hook("pre-tool-use")
    assert ask_owner_to_release(osiris_home)
    # (Read through OSIRIS's lock: the owner has closed the file and emptied its log.)
    ((done,),) = home_rows(osiris_home, "SELECT applied_lsn FROM owner_log")
    refused = _record(done + 1, [_ledger("refused", ts_us="not a time")])  # checksummed
    flipped = _record(done + 2, [_ledger("flipped")]).replace(b"flipped", b"flopped")
    good = _record(done + 3, [_ledger("after.the.bad.ones")])
    log = owner_log.log_path(osiris_home)
    log.write_bytes(refused + flipped + good)
    # osiris health opens the store itself (no owner runs): it applies the log first.
    health = run_cli("health", timeout=WAIT_S)
    assert "Traceback" not in health.stderr, health.stderr
    doc = json.loads(health.stdout)
    assert doc["healthy"], doc["problems"]
    kept = owner_log.quarantine_path(osiris_home)
    assert doc["owner_log"]["quarantine"] == str(kept) and doc["owner_log"]["records"] == 2
    assert any(str(kept) in warning for warning in doc["warnings"])
    entries = [json.loads(line) for line in kept.read_text("utf-8").splitlines()]
    assert sorted(e["record"].encode() + b"\n" for e in entries) == sorted([refused, flipped])
    assert "ConversionException" in entries[0]["problem"] or \
        "ConversionException" in entries[1]["problem"]
    assert home_rows(osiris_home, "SELECT count(*) FROM ledger WHERE kind ="
                     " 'after.the.bad.ones'") == [(1,)]
    assert not owner_log.has_records(osiris_home)
    # The same left for an owner, whose first call applies the log: the hooks go on.
    log.write_bytes(_record(done + 4, [_ledger("refused again", ts_us="never")])
                    + _record(done + 5, [_ledger("applied.by.the.owner")]))
    assert "systemMessage" not in _hook("pre-tool-use", {**PRE, "session_id": "s-next"})
    assert "systemMessage" not in _hook("post-tool-use", {**POST, "session_id": "s-next"})
    assert len(owner_log.quarantined(osiris_home)) == 3
    assert home_rows(osiris_home, "SELECT count(*) FROM ledger WHERE kind ="
                     " 'applied.by.the.owner'") == [(1,)]
    assert _logged(osiris_home) == []


def test_a_stopped_owner_costs_an_mcp_tool_hook_a_warning_not_the_call(
        osiris_home: Path) -> None:
    assert "systemMessage" not in _hook("pre-tool-use")
    pid = owner_pid(osiris_home)
    assert pid is not None
    arguments = {"event": "pre-tool-use", "session_id": "s-mcp", "cwd": "/tmp",
                 "hook_event_name": "PreToolUse", "tool_name": "Bash",
                 "tool_input": json.dumps({"command": "ls"})}

    async def flow() -> Any:
        async with client_for("stdio", "auto", env=osiris_env(OSIRIS_HOOK_TOOL="on")) \
                as client:
            await client.list_tools()  # the server is up and has reached the owner
            with _stopped(pid):
                return await asyncio.wait_for(client.call_tool("osiris_hook", arguments),
                                              WAIT_S)

    result = run(flow())
    assert not result.is_error  # an error result could stop the user's tool
    answer = json.loads(result.content[0].text)
    assert set(answer) == {"systemMessage"} and "owner_timeout" in answer["systemMessage"]
    assert _logged(osiris_home)[-1]["problem"].startswith("owner_timeout: ")
