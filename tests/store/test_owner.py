"""The store owner (osiris.owner) as clients meet it: real processes, a real socket,
a real DuckDB file. Start on first use, one owner per home, stale state, security, bad
input, SIGKILL under writers, idle exit, stepping aside, and reads of a live home."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from osiris import owner_wire
from osiris.clients.launcher import launch_argv
from osiris.config import Settings, settings_to_wire
from osiris.engine.remote import RemoteEngine, query
from osiris.harness.bench.owner_load import kill_owners, owner_pid, spawn_observer, verify
from osiris.owner_wire import OwnerClient, socket_path
from osiris.store.db import ask_owner_to_release
from osiris.store.state import Store
from tests.conftest import run_cli

PRE = {"session_id": "s-owner", "hook_event_name": "PreToolUse", "tool_name": "Bash",
       "tool_input": {"command": "ls"}, "cwd": "/tmp"}


REAL_ANSWER = "governs this session"
"""What the first answer in a session says (a fail-open skip says "hook skipped")."""


def _hook(event: str = "pre-tool-use", doc: dict[str, object] = PRE,
          env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli("hook", "claude-code", event, stdin=json.dumps(doc), env=env)


def _wait_for(predicate, timeout_s: float = 20.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def test_first_hook_starts_an_owner_that_the_next_calls_reuse(osiris_home: Path) -> None:
    first = _hook()
    assert first.returncode == 0, first.stderr
    assert REAL_ANSWER in first.stdout  # the real answer, not a fail-open skip
    pid = owner_pid(osiris_home)
    assert pid is not None
    path = socket_path(osiris_home)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    for _ in range(3):
        assert _hook().returncode == 0
    assert owner_pid(osiris_home) == pid  # the same owner served them all
    engine = RemoteEngine(Settings(home=osiris_home))
    task = engine.plan("start", objective="through the owner")["task_id"]
    answer = engine.observe(task, "result", tool="Bash", args={"command": "seq 5000"},
                            result="\n".join(str(i) for i in range(5000)))
    assert answer["ref"].startswith("mem://sha256:")
    engine.close()


def test_a_sessions_reads_keep_the_owner_off_duckdb_and_health_says_so(
        osiris_home: Path, tmp_path: Path) -> None:
    """Claude Code's hooks as installed (a process per call, one owner): reads of a file
    inside the roots, read again (a pointer), changed and read again (the changed lines),
    and shell calls. Every one is answered from the owner's memory: ``osiris health``
    lists what went to DuckDB, and it is only the session's creation."""
    project = tmp_path / "project"
    project.mkdir()
    module = project / "module.py"
    module.write_text("".join(f"value_{i} = {i}\n" for i in range(600)), encoding="utf-8")
    env = {"OSIRIS_ROOTS": str(project)}
    read = {"session_id": "s-reads", "cwd": str(project), "tool_name": "Read",
            "tool_input": {"file_path": str(module)}}
    answers = []
    for step in range(5):
        if step == 3:  # the agent's edit, between two reads
            module.write_text(module.read_text("utf-8").replace("value_300 = 300",
                                                                "value_300 = -1"))
        text = module.read_text("utf-8")
        post = {**read, "hook_event_name": "PostToolUse", "tool_use_id": f"toolu_{step}",
                "tool_response": {"type": "text", "file": {
                    "filePath": str(module), "content": text, "numLines": 600,
                    "startLine": 1, "totalLines": 600}}}
        for event, doc in (("pre-tool-use", {**read, "hook_event_name": "PreToolUse",
                                             "tool_use_id": f"toolu_{step}"}),
                           ("post-tool-use", post)):
            done = _hook(event, doc, env=env)
            assert done.returncode == 0 and "hook skipped" not in done.stdout, done.stdout
            answers.append(done.stdout)
        bash = {**PRE, "session_id": "s-reads", "cwd": str(project)}
        assert _hook("pre-tool-use", bash, env=env).returncode == 0
    # What OSIRIS knew of the reads it answered with: a pointer to the unchanged
    # second read, the changed lines after the edit.
    assert '"permissionDecision":"deny"' in answers[2], answers[2]
    assert "is unchanged since you read it (tool call toolu_0)" in answers[2]
    assert '"startLine":298' in answers[7] and "value_300 = -1" in answers[7], answers[7]
    assert "value_0 = 0" not in answers[7]
    health = run_cli("health", env=env)
    doc = json.loads(health.stdout)
    on_duckdb = doc["store_owner"]["on_duckdb"]
    assert on_duckdb["statements"] == {
        "INSERT INTO client_sessions VALUES (?, ?, ?, ?, ?)": 1}, on_duckdb
    assert on_duckdb["transactions"] == 1


def test_two_owners_never_serve_one_home(osiris_home: Path) -> None:
    starts = [subprocess.Popen([sys.executable, "-m", "osiris", "owner", "--home",
                                str(osiris_home)], stderr=subprocess.DEVNULL)
              for _ in range(3)]
    assert _wait_for(lambda: owner_pid(osiris_home) is not None)
    # Two of the three found the home claimed and left at once, without an error.
    exited = []
    assert _wait_for(lambda: sum(p.poll() is not None for p in starts) >= 2)
    for proc in starts:
        if proc.poll() is not None:
            exited.append(proc.returncode)
    assert exited == [0, 0]
    serving = [p for p in starts if p.poll() is None]
    assert [p.pid for p in serving] == [owner_pid(osiris_home)]
    serving[0].terminate()
    serving[0].wait(timeout=20)
    assert not socket_path(osiris_home).exists()  # a clean exit removes its socket


def test_a_stale_socket_and_lock_of_a_dead_owner_are_recovered(osiris_home: Path) -> None:
    osiris_home.mkdir(parents=True)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(socket_path(osiris_home)))
    stale.close()  # the file stays: nobody listens behind it (ECONNREFUSED)
    (osiris_home / "owner.lock").write_text("999999\n")
    result = _hook()
    assert result.returncode == 0 and REAL_ANSWER in result.stdout, result.stderr
    assert owner_pid(osiris_home) is not None


def test_another_user_cannot_use_the_owner() -> None:
    if os.getuid() != 0:
        pytest.skip("needs root to act as another user")
    # A home another user could reach (pytest's own directories are closed to them).
    base = Path(tempfile.mkdtemp(prefix="osiris-peer-", dir="/tmp"))
    base.chmod(0o711)
    osiris_home = base / "home"
    env = {"OSIRIS_HOME": str(osiris_home)}
    try:
        _another_user_probe(osiris_home, env)
    finally:
        ask_owner_to_release(osiris_home)
        shutil.rmtree(base, ignore_errors=True)


def _another_user_probe(osiris_home: Path, env: dict[str, str]) -> None:
    assert _hook(env=env).returncode == 0
    path = socket_path(osiris_home)
    probe = (
        "import os, socket, sys\n"
        "os.setgid(65534); os.setuid(65534)\n"
        "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        "try:\n    s.connect(sys.argv[1])\nexcept PermissionError:\n    print('refused')\n"
        "    sys.exit(0)\n"
        "try:\n    s.sendall(b'\\x00\\x00\\x00\\x0f{\"op\": \"ping\"}')\n"
        "    data = s.recv(100)\n"
        # The owner may hang up before the request is even written (EPIPE).
        "except (BrokenPipeError, ConnectionResetError):\n    data = b''\n"
        "print('answered' if data else 'cut off')\n")
    # The socket file is mode 0600: another user cannot even connect.
    out = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True,
                         text=True, timeout=30, check=False)
    assert out.stdout.strip() == "refused", out.stderr
    # Opened up by mistake, the peer-credential check still cuts them off unanswered.
    os.chmod(path, 0o666)
    osiris_home.chmod(0o755)
    out = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True,
                         text=True, timeout=30, check=False)
    assert out.stdout.strip() == "cut off", out.stderr
    assert owner_pid(osiris_home) is not None  # and the owner still serves its user


def _raw(home: Path, data: bytes, *, read: bool = True) -> bytes:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(10)
    sock.connect(str(socket_path(home)))
    sock.sendall(data)
    try:
        return sock.recv(1 << 16) if read else b""
    finally:
        sock.close()


def test_garbage_and_broken_clients_do_not_harm_the_owner(osiris_home: Path) -> None:
    assert _hook().returncode == 0
    pid = owner_pid(osiris_home)
    not_json = b"this is not json"
    reply = _raw(osiris_home, struct.pack(">I", len(not_json)) + not_json)
    doc = json.loads(reply[4:])
    assert doc["ok"] is False and "not UTF-8 JSON" in doc["error"]["message"]
    huge = _raw(osiris_home, struct.pack(">I", 0xFFFFFFF0))
    assert b"over the limit" in huge
    _raw(osiris_home, struct.pack(">I", 1000) + b'{"op": "pi', read=False)  # cut off
    _raw(osiris_home, b"\x00\x00", read=False)  # inside the header
    unknown = json.dumps({"op": "format-disk"}).encode()
    doc = json.loads(_raw(osiris_home, struct.pack(">I", len(unknown)) + unknown)[4:])
    assert "unknown store owner operation" in doc["error"]["message"]
    client = OwnerClient(osiris_home, settings_to_wire(Settings(home=osiris_home)))
    with pytest.raises(Exception, match="does not run"):
        client.call("close")
    with pytest.raises(Exception, match="bad arguments"):
        client.call("plan", "start", no_such_argument=1)
    client.close()
    assert owner_pid(osiris_home) == pid  # the same owner, still serving
    assert _hook().returncode == 0


@pytest.mark.slow
def test_sigkill_of_the_owner_under_three_writers_loses_no_acknowledged_call(
        osiris_home: Path) -> None:
    run = kill_owners(osiris_home, kills=100, writers=3, size=2000, timeout_s=400)
    assert run.kills == 100
    assert not run.errors, run.errors[:2]
    assert len(run.acknowledged) > 100
    assert len(run.recoveries_s) >= 99  # writers went on after (nearly) every kill
    verdict = verify(osiris_home, run.acknowledged)
    assert verdict.missing == 0
    assert verdict.chain_ok
    assert verdict.audit_lossless


def test_an_idle_owner_exits_and_closes_the_database(osiris_home: Path) -> None:
    result = _hook(env={"OSIRIS_OWNER_IDLE_S": "0.5"})
    assert result.returncode == 0
    # (watched from outside: a ping would be a request, and keep it busy)
    assert _wait_for(lambda: not socket_path(osiris_home).exists(), 20)
    pid = int((osiris_home / "owner.lock").read_text())
    assert _wait_for(lambda: not Path(f"/proc/{pid}").exists(), 20)
    import duckdb  # nobody holds the file now: a plain duckdb.connect opens it

    con = duckdb.connect(str(osiris_home / "osiris.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM events").fetchone()[0] > 0
    con.close()


def test_a_direct_open_makes_the_owner_step_aside(osiris_home: Path) -> None:
    assert _hook().returncode == 0
    first = owner_pid(osiris_home)
    store = Store(Settings(home=osiris_home, lock_timeout_s=10))
    with store.read() as con:  # the owner released the file when asked
        assert con.execute("SELECT count(*) FROM tasks").fetchone()[0] == 1
    store.close()
    assert _hook().returncode == 0  # and the next client started a new owner
    assert owner_pid(osiris_home) not in (None, first)


def test_a_notebook_reads_a_live_home_through_the_owner(osiris_home: Path) -> None:
    writer = spawn_observer(osiris_home, "live", 20, 500)
    _, err = writer.communicate(timeout=120)
    assert writer.returncode == 0, err
    table = query(osiris_home, "SELECT kind, count(*) AS n FROM events GROUP BY kind "
                  "ORDER BY kind")
    kinds = dict(zip(table.column("kind").to_pylist(), table.column("n").to_pylist(),
                     strict=True))
    assert kinds == {"observe.result": 20, "task.start": 1}
    assert owner_pid(osiris_home) is not None  # read without stopping the writer's owner
    with pytest.raises(Exception, match="read-only"):
        query(osiris_home, "DELETE FROM events")
    with pytest.raises(Exception, match="read-only"):
        query(osiris_home, "SELECT 1; DROP TABLE events")
    with pytest.raises(Exception, match="does not parse"):
        query(osiris_home, "SELEKT nothing")


def test_an_unwritable_home_is_reported_and_the_tool_call_goes_ahead(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    env = {"OSIRIS_HOME": str(blocker / "home")}
    result = _hook(env=env)
    assert result.returncode == 0
    doc = json.loads(result.stdout)
    assert set(doc) == {"systemMessage"}
    assert f"cannot create the OSIRIS home {blocker / 'home'}: Not a directory" \
        in doc["systemMessage"]
    assert "hook pre-tool-use skipped" in result.stderr


def test_the_owner_socket_lives_outside_a_home_too_long_for_an_address(tmp_path: Path,
                                                                       ) -> None:
    home = tmp_path / ("h" * 60) / ("o" * 60)
    path = socket_path(home)
    assert path.parent.name == f"osiris-{os.getuid()}"
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    result = _hook(env={"OSIRIS_HOME": str(home)})
    assert result.returncode == 0 and REAL_ANSWER in result.stdout, result.stderr
    assert owner_pid(home) is not None
    owner_client_release(home)


def test_a_tmpdir_too_deep_for_an_address_puts_the_socket_in_slash_tmp(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A client's sandbox sets TMPDIR inside the workspace: under a deep test directory
    # (pytest-xdist's popen-gwN/) $TMPDIR/osiris-UID/HASH.sock passed 107 bytes, and every
    # hook went through unrouted with "AF_UNIX path too long" in hooks.log.
    import tempfile

    home = tmp_path / ("h" * 60) / ("o" * 60)
    deep = tmp_path / ("t" * 60) / ("m" * 40)
    deep.mkdir(parents=True)
    result = _hook(env={"OSIRIS_HOME": str(home), "TMPDIR": str(deep)})
    assert result.returncode == 0 and REAL_ANSWER in result.stdout, result.stderr
    assert owner_pid(home) is not None  # hooks reach it: no "path too long"
    monkeypatch.setenv("TMPDIR", str(deep))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    path = socket_path(home)
    assert path.parent == Path("/tmp") / f"osiris-{os.getuid()}"
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    owner_client_release(home)


def owner_client_release(home: Path) -> None:
    assert ask_owner_to_release(home)
    assert _wait_for(lambda: owner_pid(home) is None)


def test_off_switch_opens_the_database_in_each_process(osiris_home: Path) -> None:
    result = _hook(env={"OSIRIS_STORE_OWNER": "off"})
    assert result.returncode == 0 and REAL_ANSWER in result.stdout
    assert owner_pid(osiris_home) is None
    assert not socket_path(osiris_home).exists()
    assert owner_wire.try_connect(socket_path(osiris_home)) is None


def test_the_dashboard_reads_a_live_home_without_stopping_its_owner(osiris_home: Path,
                                                                    ) -> None:
    import httpx2

    from tests.dashboard.process import dashboard
    from tests.server.transports import osiris_env

    first = spawn_observer(osiris_home, "before", 5, 300)
    assert first.communicate(timeout=120)[0].count('"ack"') == 5
    pid = owner_pid(osiris_home)
    assert pid is not None
    with dashboard(osiris_env()) as base:
        writer = spawn_observer(osiris_home, "during", 15, 300)
        pages = [httpx2.get(f"{base}/events", timeout=30) for _ in range(5)]
        out, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err
        assert out.count('"ack"') == 15
        final = httpx2.get(f"{base}/tasks", timeout=30)
    assert all(p.status_code == 200 for p in pages)
    assert "owner load during" in final.text  # the writer's task, read through the owner
    assert owner_pid(osiris_home) == pid  # nobody made it step aside


HEAVY = ("duckdb", "tiktoken", "mcp", "pyarrow", "polars")


def _imported(result: subprocess.CompletedProcess[str]) -> set[str]:
    """Top-level packages a ``python -X importtime`` run imported."""
    names = set()
    for line in result.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    return names


# What the installed commands (clients.launcher: python -S) leave out on top: each costs
# every tool call milliseconds of imports (reports/PERF.md).
START_UP = ("site", "dataclasses", "pathlib", "typing", "subprocess", "socket", "signal",
            "osiris.config", "osiris.core")


def _imported_modules(result: subprocess.CompletedProcess[str]) -> set[str]:
    return {line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines()
            if line.startswith("import time:") and "|" in line}


@pytest.mark.parametrize("installed", [True, False], ids=["launcher", "python -m osiris"])
def test_hooks_and_osiris_run_import_nothing_heavy(osiris_home: Path, installed: bool) -> None:
    assert _hook().returncode == 0  # the owner runs: the next calls take the light path
    python, *launcher = launch_argv(sys.executable)
    words = [python, "-X", "importtime", *(launcher if installed else ["-m", "osiris"])]
    for event, doc in (("pre-tool-use", PRE),
                       ("post-tool-use", {**PRE, "hook_event_name": "PostToolUse",
                                          "tool_response": {"stdout": "x\n" * 5000}})):
        result = subprocess.run([*words, "hook", "claude-code", event], input=json.dumps(doc),
                                capture_output=True, text=True, timeout=60, check=False)
        assert result.returncode == 0, result.stderr[-500:]
        assert "skipped" not in result.stdout + result.stderr  # the owner answered
        assert not _imported(result) & set(HEAVY), event
        if installed:  # nor json (and the re and enum it imports): owner_wire's codec
            assert not _imported_modules(result) & {*START_UP, "json", "re", "enum"}, event
    run = subprocess.run([*words, "run", "--", "echo small"], capture_output=True, text=True,
                         timeout=60, check=False)
    assert run.stdout == "small\n"
    assert not _imported(run) & set(HEAVY)
    if installed:
        assert not _imported_modules(run) & {*START_UP, "json"}


def test_the_owner_serves_only_its_own_home(osiris_home: Path, tmp_path: Path) -> None:
    assert _hook().returncode == 0
    other = settings_to_wire(Settings(home=tmp_path / "elsewhere"))
    client = OwnerClient(osiris_home, other)
    with pytest.raises(Exception, match="this owner serves"):
        client.call("plan", "start", objective="in the wrong home")
    client.close()
    assert not (tmp_path / "elsewhere").exists()


SECRET = "AKIA" + "Q" * 16


def _payload(i: int) -> str:
    return (f"run {i}\nexport AWS_ACCESS_KEY_ID={SECRET}\n"
            + "".join(f"line {n} of the output\n" for n in range(300))
            + "FAILED tests/test_x.py::test_y - AssertionError\n")


def test_a_payload_worked_on_by_the_client_is_stored_and_answered_as_the_owner_would(
        osiris_home: Path, tmp_path: Path) -> None:
    from osiris.engine import Engine

    remote = RemoteEngine(Settings(home=osiris_home))
    local = Engine(Settings(home=tmp_path / "local", store_owner=False))
    try:
        answers = []
        for engine in (remote, local):
            task = engine.plan("start", objective="handed work")["task_id"]
            answer = engine.observe(task, "result", tool="Bash", args={"command": "make"},
                                    result=_payload(1))
            data, _ = engine.ref_bytes(answer["ref"])
            answers.append((answer, data))
    finally:
        remote.close()
        local.close()
    (handed, handed_blob), (own, own_blob) = answers
    assert SECRET not in handed_blob.decode() and handed_blob == own_blob
    for key in ("ref", "tokens", "mode", "redacted", "preview", "lines", "strategy",
                "preview_tokens"):
        assert handed.get(key) == own.get(key), key


def test_the_owner_takes_no_work_it_cannot_check(osiris_home: Path) -> None:
    """A handed work that does not fit its text (another digest, another version), or one
    slipped in among an engine call's arguments, is not taken: the owner scrubs and
    counts the payload itself."""
    from osiris._version import __version__
    from osiris.core.engagement import Thresholds
    from osiris.core.payload_work import client_work, to_wire
    from osiris.core.tokens import default_counter

    client = OwnerClient(osiris_home, settings_to_wire(Settings(home=osiris_home)))
    try:
        task = client.call("plan", "start", objective="unchecked work")["task_id"]
        text = _payload(2)
        work = to_wire(client_work(text, kind="result", args={}, thresholds=Thresholds(),
                                   counter=default_counter()), __version__, "cl100k_base")
        for label, doc, kwargs in (
                ("digest of another text", work, {}),
                ("another version", {**work, "version": "0.0.0",
                                     "digest": __import__("hashlib").sha256(
                                         text.encode()).hexdigest()}, {}),
                ("inside the arguments", None, {"prepared": work})):
            request = {"op": "call", "method": "observe", "args": [task, "result"],
                       "kwargs": {"tool": "Bash", "args": {"i": label}, "result": text,
                                  **kwargs}}
            if doc is not None:
                request["prepared"] = doc
            answer, _ = client.request(request)
            blob = client.request({"op": "call", "method": "ref_bytes",
                                   "args": [answer["ref"]], "kwargs": {}})[1].decode()
            assert SECRET not in blob, label
            assert answer["redacted"] == 1, label
        # A work that fits is taken as it is (here its preview, marked), text unscrubbed
        # again: the owner trusts its own user's clients to have done it right.
        scrubbed = client_work(text, kind="result", args={}, thresholds=Thresholds(),
                               counter=default_counter())
        fitting = to_wire(scrubbed, __version__, "cl100k_base")
        fitting["preview"][0] = "MARKED PREVIEW"
        answer, _ = client.request({"op": "call", "method": "observe", "args": [task, "result"],
                                    "kwargs": {"tool": "Bash", "args": {"i": "fits"},
                                               "result": scrubbed.scrubbed.text},
                                    "prepared": fitting})
        assert "MARKED PREVIEW" in json.dumps(answer)
        assert answer["redacted"] == 1
    finally:
        client.close()
