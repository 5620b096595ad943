"""``osiris run -- COMMAND`` as a real process: exact, lossless, fail-open."""

from __future__ import annotations

import contextlib
import os
import re
import select
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from osiris.clients.launcher import launch_argv
from osiris.config import Settings
from osiris.engine import Engine
from tests.conftest import SHOWN_REF, home_rows, whole_ref
from tests.mounts import in_small_fs

REF = re.compile(SHOWN_REF)


def run(command: str, *options: str, stdin: bytes | None = None, cwd: Path | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    # As a client runs it once a hook has wrapped the command (clients.launcher).
    return subprocess.run(launch_argv(sys.executable, "run", *options, "--", command),
                          input=stdin, capture_output=True, timeout=120, cwd=cwd,
                          env={**os.environ, **(env or {})}, check=False)


def bash(command: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["bash", "-c", command], input=stdin, capture_output=True,
                          timeout=120, check=False)


def test_small_output_exit_status_and_stdin_are_the_commands_own(tmp_path: Path) -> None:
    cases = [
        "printf '%s|%s\\n' \"$(echo ünï \"q'd\")\" $((6*7))",
        "cat <<'EOF'\n$HOME `x` \"y\"\nEOF",
        "echo out; echo err >&2; exit 7",
        "false && echo no || echo yes",
        "printf 'a\\nb\\nc\\n' | sort -r | head -n 2",
        "read line; echo \"got $line\"",
        "pwd",
    ]
    for command in cases:
        mine = run(command, stdin=b"hello\n", cwd=tmp_path)
        theirs = subprocess.run(["bash", "-c", command], input=b"hello\n", cwd=tmp_path,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60,
                                check=False)
        assert mine.returncode == theirs.returncode, command
        assert mine.stdout == theirs.stdout, command  # stderr merged, in order
        assert mine.stderr == b"", command


def test_a_large_output_is_stored_whole_and_shown_as_a_preview(osiris_home: Path) -> None:
    command = ("for i in $(seq 1 4000); do echo \"line $i of the log\"; done; "
               "echo 'FAILED tests/test_a.py::test_b - AssertionError: 1 != 2' >&2; exit 1")
    done = run(command, "--session", "s-run", "--client", "claude-code")
    assert done.returncode == 1
    shown = done.stdout.decode("utf-8")
    assert len(shown) < 4_000
    assert "FAILED tests/test_a.py::test_b" in shown
    assert "[osiris: exit 1; whole output (4,001 lines" in shown
    (shown_ref,) = set(REF.findall(shown))
    ref = whole_ref(osiris_home, shown_ref)
    with Engine(Settings.from_env()) as engine:
        stored = engine.ref_bytes(shown_ref)[0]  # the short form serves as the whole
    expected = subprocess.run(["bash", "-c", command], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, check=False).stdout
    assert stored == expected
    # The ref belongs to the client session's task, and the journal says so.
    ((task,),) = home_rows(osiris_home, "SELECT task_id FROM client_sessions WHERE"
                                        " session_id = 's-run'")
    assert home_rows(osiris_home, "SELECT count(*) FROM task_refs WHERE task_id = ? AND"
                                  " ref = ?", [task, ref]) == [(1,)]
    assert home_rows(osiris_home, "SELECT count(*) FROM events WHERE task_id = ? AND"
                                  " kind = 'route.output'", [task]) == [(1,)]


_HINT = re.compile(r"`(osiris recall [^`]+)`")


def _as_shell_user(line: str) -> list[str]:
    """A hint's command as a shell user runs it (``osiris`` is this interpreter's)."""
    argv = shlex.split(line)
    assert argv[:2] == ["osiris", "recall"], line
    return [sys.executable, "-m", "osiris", *argv[1:]]


def _recall(argv: list[str]) -> tuple[list[str], str | None]:
    """The lines an ``osiris recall`` printed, and the command its one hint says (None:
    nothing was cut)."""
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    hints = [line for line in lines if line.startswith("[osiris:")]
    assert len(hints) <= 1 and not any("start=" in line for line in lines), done.stdout[-600:]
    if not hints:
        return lines, None
    assert lines[-1] == hints[0]
    found = _HINT.search(hints[0])
    assert found is not None and "go on with" in hints[0], hints[0]
    return lines[:-1], found.group(1)


def test_what_osiris_run_and_recall_print_is_what_a_shell_user_runs(osiris_home: Path) -> None:
    done = run("seq 1 3000")
    footer = done.stdout.decode("utf-8").splitlines()[-1]
    (ref,) = set(REF.findall(footer))
    hinted = _HINT.search(footer)
    assert hinted is not None and "osiris_recall" not in footer, footer
    lines, _ = _recall(_as_shell_user(hinted.group(1).replace("PATTERN", "^2999$")))
    assert lines == ["2999:2999"]
    # Cut answers are followed to the end: every line once, in order, one hint each time.
    for first in (["--lines", "1:3000", "--max-tokens", "200"], ["--grep", "7", "-i"]):
        seen: list[str] = []
        command: str | None = shlex.join(["osiris", "recall", ref, *first])
        while command is not None:
            page, command = _recall(_as_shell_user(command))
            seen += page
        if first[0] == "--lines":
            assert seen == [f"{i}:{i}" for i in range(1, 3001)]
        else:
            assert seen == [f"{i}:{i}" for i in range(1, 3001) if "7" in str(i)]
    # A bare recall shows the first lines, and says so; --tail the last.
    head, more = _recall([sys.executable, "-m", "osiris", "recall", ref])
    assert head == [f"{i}:{i}" for i in range(1, 21)] and more is not None
    assert more.endswith("--lines 21:40")
    tail, before = _recall([sys.executable, "-m", "osiris", "recall", ref, "--tail", "5"])
    assert tail == [f"{i}:{i}" for i in range(2996, 3001)] and before is not None
    assert before.endswith("--lines 2991:2995")
    whole, nothing = _recall([sys.executable, "-m", "osiris", "recall", ref, "--lines", "5:9"])
    assert whole == [f"{i}:{i}" for i in range(5, 10)] and nothing is None


def test_threshold_and_non_utf8_output(osiris_home: Path) -> None:
    small = run("seq 1 50", "--threshold", "10")
    assert "[osiris: exit 0" in small.stdout.decode()  # 50 lines > 10 tokens: previewed
    binary = run("head -c 20000 /dev/urandom | base64 -w0 | head -c 1; printf '\\xff\\xfe'; "
                 "seq 1 3000")
    assert binary.returncode == 0
    assert b"\xff\xfe" in binary.stdout and b"osiris:" not in binary.stdout  # verbatim


@pytest.mark.slow
def test_a_broken_home_prints_the_output_verbatim(tmp_path: Path) -> None:
    home = tmp_path / "broken"
    home.mkdir()
    (home / "osiris.duckdb").write_bytes(b"garbage" * 1000)
    command = "seq 1 5000; exit 2"
    done = run(command, "--home", str(home))
    assert done.returncode == 2
    assert done.stdout == bash(command).stdout
    assert done.stderr == b""
    log = (home / "hooks.log").read_text("utf-8")
    assert "output shown verbatim" in log and len(log.splitlines()) == 1


def test_a_signal_is_passed_on_and_reported(tmp_path: Path) -> None:
    killed = run("kill -TERM $$")
    assert killed.returncode == -signal.SIGTERM
    marker = tmp_path / "started"
    child = subprocess.Popen([sys.executable, "-m", "osiris", "run", "--",
                              f"trap 'echo got-int; exit 5' INT; touch {marker}; "
                              "while :; do sleep 0.05; done"], stdout=subprocess.PIPE)
    try:
        for _ in range(400):
            if marker.exists():
                break
            subprocess.run(["sleep", "0.05"], check=True)
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == 5
    assert out == b"got-int\n"


def test_usage_errors_are_clear() -> None:
    done = subprocess.run([sys.executable, "-m", "osiris", "run", "ls"], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "give the command after --" in done.stderr
    bad = subprocess.run([sys.executable, "-m", "osiris", "run", "--bogus", "x", "--", "ls"],
                         capture_output=True, text=True, timeout=60, check=False)
    assert bad.returncode == 2 and "unknown option '--bogus'" in bad.stderr


def test_a_command_that_kills_its_own_shell_ends_as_it_would_without_osiris() -> None:
    """``kill -9 $$``: the shell dies by SIGKILL; so does ``osiris run``, with no
    traceback (SIGKILL has no handler to reset)."""
    done = run("echo before; kill -9 $$")
    assert done.returncode == -signal.SIGKILL
    assert done.stdout == b"before\n" and done.stderr == b""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_killed_runner_takes_its_command_with_it_and_has_shown_its_head(tmp_path: Path
                                                                         ) -> None:
    """A client that SIGKILLs ``osiris run`` (a timeout) leaves no orphan, and what the
    command printed first has already reached the client."""
    pid_file = tmp_path / "pid"
    with subprocess.Popen(launch_argv(sys.executable, "run", "--",
                                      f"echo started; echo $$ > {pid_file}; exec sleep 600"),
                          stdout=subprocess.PIPE) as runner:
        _kill_runner_and_check(runner, pid_file)


def _kill_runner_and_check(runner: subprocess.Popen[bytes], pid_file: Path) -> None:
    try:
        assert runner.stdout is not None
        # Before the command ended (bounded: a runner that held it back would hang here).
        ready, _, _ = select.select([runner.stdout], [], [], 60)
        assert ready and runner.stdout.readline() == b"started\n"
        for _ in range(400):
            if pid_file.exists() and pid_file.read_text().strip():
                break
            subprocess.run(["sleep", "0.05"], check=True)
        shell = int(pid_file.read_text())
        assert _alive(shell)
        runner.kill()
        runner.wait(timeout=30)
        for _ in range(400):
            if not _alive(shell):
                break
            subprocess.run(["sleep", "0.05"], check=True)
        assert not _alive(shell)
    finally:
        runner.kill()
        if pid_file.exists() and pid_file.read_text().strip():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)


def test_closed_stdout_or_stderr_are_the_commands_to_see(tmp_path: Path) -> None:
    runner = " ".join(shlex.quote(w) for w in launch_argv(sys.executable, "run", "--shell",
                                                             "bash", "--"))
    for command, redirection in (("echo to-stderr >&2; echo to-stdout", "2>&-"),
                                 ("echo to-stdout; echo status=$? >&2", "1>&-")):
        mine = bash(f"{runner} {shlex.quote(command)} {redirection}; echo exit=$?")
        theirs = bash(f"bash -c {shlex.quote(command)} {redirection}; echo exit=$?")
        assert (mine.stdout, mine.stderr) == (theirs.stdout, theirs.stderr), redirection
        assert b"Traceback" not in mine.stderr


@pytest.mark.slow
def test_a_full_disk_keeps_the_output_and_the_exit_status(tmp_path: Path) -> None:
    command = "seq 1 5000; echo 'df says: 100% used' >&2; exit 3"
    root = tmp_path / "fs"
    done = in_small_fs("full", root, [*launch_argv(sys.executable, "run", "--home",
                                                   str(root / "home"), "--", command)])
    expected = subprocess.run(["bash", "-c", command], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, check=False)
    assert done.returncode == 3, done.stderr
    assert done.stdout == expected.stdout
    assert b"Traceback" not in done.stderr
