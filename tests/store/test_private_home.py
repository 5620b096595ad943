"""The home is private to its owner, whatever the umask (issue 36, item 10): another
local user read a password from a WAL of mode 0644 in a home of mode 0755."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from osiris.clients import hook_entry, runner
from osiris.clients.launcher import launch_argv
from osiris.config import Settings
from osiris.store import fsutil
from osiris.store.state import Store
from tests.conftest import REPO, release_owner_and_wait, run_cli
from tests.server.transports import observe_a_result, osiris_env, run, stdio_params


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The common umask 022 for this process and every process it starts."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _modes(home: Path) -> dict[str, str]:
    """``type mode`` of the home and everything under it, by path below the home."""
    found = {".": _mode(home)}
    for path in home.rglob("*"):
        found[str(path.relative_to(home))] = _mode(path)
    return found


def _mode(path: Path) -> str:
    info = path.lstat()
    kind = "dir" if stat.S_ISDIR(info.st_mode) else \
        "socket" if stat.S_ISSOCK(info.st_mode) else \
        "link" if stat.S_ISLNK(info.st_mode) else "file"
    return f"{kind} {stat.S_IMODE(info.st_mode):o}"


PRIVATE = ("dir 700", "file 600", "socket 600", "link 777")
"""A symlink's own mode is always 777 and means nothing (what it points to decides)."""


def _open_to_others(home: Path) -> dict[str, str]:
    return {name: mode for name, mode in _modes(home).items() if mode not in PRIVATE}


def _mcp_session(env: dict[str, str]) -> None:
    """A real MCP client over stdio: a task, a large result stored as a ref, a recall."""

    async def flow() -> None:
        async with Client(stdio_params(env)) as client:
            task, _, _ = await observe_a_result(client, "pytest -q", "row\n" * 2000)
            # A statement the owner runs on DuckDB: it writes the deferred rows, so the
            # WAL exists while the owner runs (until its checkpoint).
            await client.call_tool("osiris_checkpoint", {"task_id": task, "mode": "snapshot"})

    run(flow())


def _hook(env: dict[str, str]) -> None:
    """A hook as Claude Code runs it, with a large result."""
    hook = {"session_id": "s-private", "cwd": str(REPO), "hook_event_name": "PostToolUse",
            "tool_name": "Bash", "tool_use_id": "toolu_1", "tool_input": {"command": "ls"},
            "tool_response": {"stdout": "a\n" * 3000, "stderr": "", "exit_code": 0}}
    done = subprocess.run(launch_argv(sys.executable, "hook", "claude-code", "post-tool-use"),
                          input=json.dumps(hook), text=True, capture_output=True, env=env,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr


def _install(env: dict[str, str]) -> None:
    """`osiris install claude-code`, which records the install in the home."""
    user = Path(env["OSIRIS_HOME"]).parent / "user"
    user.mkdir(exist_ok=True)
    installed = run_cli("install", "claude-code", env={**env, "HOME": str(user)})
    assert installed.returncode == 0, installed.stderr


def _osiris_run(env: dict[str, str]) -> None:
    """`osiris run` as a client runs a wrapped command, with a large output."""
    done = subprocess.run(launch_argv(sys.executable, "run", "--", "seq 1 5000"),
                          capture_output=True, env=env, timeout=120, check=False)
    assert done.returncode == 0 and b"mem://sha256:" in done.stdout, done.stderr


@pytest.mark.usefixtures("open_umask")
@pytest.mark.parametrize("owner", ["on", "off"])
def test_a_new_home_is_private_whatever_the_umask(owner: str, osiris_home: Path) -> None:
    env = osiris_env(OSIRIS_STORE_OWNER=owner)
    # Each entry point leaves the home private (`osiris run` aside: see below).
    for step in (_mcp_session, _hook, _install):
        step(env)
        modes = _modes(osiris_home)
        assert not _open_to_others(osiris_home), step.__name__
        if step is _mcp_session and owner == "on":
            # The owner holds the database: its WAL is not checkpointed yet.
            assert modes["osiris.duckdb.wal"] == "file 600"
    _osiris_run(env)
    assert run_cli("health", env=env).returncode == 0
    # What the incident exposed, and what every entry point made: all there, all private.
    modes = _modes(osiris_home)
    for name in ("osiris.duckdb", "refs", "clients/installs.json", "journal.witness",
                 "server-start.json", "spool",
                 *(["owner.log", "owner.lock"] if owner == "on" else [])):
        assert name in modes, sorted(modes)
    assert not _open_to_others(osiris_home)
    release_owner_and_wait(osiris_home)  # the owner checkpoints and exits
    assert not _open_to_others(osiris_home)


@pytest.mark.usefixtures("open_umask")
def test_osiris_run_beside_a_running_owner_makes_its_spool_private(osiris_home: Path) -> None:
    env = osiris_env()
    _hook(env)  # the store owner now runs, and has made the home private
    _osiris_run(env)
    assert _modes(osiris_home)["spool"] == "dir 700"


@pytest.mark.usefixtures("open_umask")
def test_the_wal_of_a_database_held_open_in_process_is_private(settings: Settings) -> None:
    # DuckDB makes the WAL again after each checkpoint, with the process's umask: a
    # process that holds the database itself (the benchmark's workspace) is no owner.
    wal = settings.db_path.with_name("osiris.duckdb.wal")
    store = Store(settings, exclusive=True)
    try:
        for round_ in range(2):
            with store.transaction() as tx:
                tx.event("note", {"text": f"round {round_}"}, task_id=None)
            assert _mode(wal) == "file 600" and _mode(settings.db_path) == "file 600"
            with store.db.hold() as con:
                con.execute("CHECKPOINT")
            assert not wal.exists()  # the next write makes it anew
    finally:
        store.close()
    assert not _open_to_others(settings.home)


def _open_up(home: Path) -> None:
    """The home as an OSIRIS before this made it: 0755 folders, 0644 files."""
    for path in [home, *home.rglob("*")]:
        if path.is_symlink() or stat.S_ISSOCK(path.lstat().st_mode):
            continue
        path.chmod(0o755 if path.is_dir() else 0o644)


@pytest.mark.usefixtures("open_umask")
@pytest.mark.parametrize("owner", ["on", "off"])
def test_an_open_home_is_made_private_when_it_is_opened(owner: str, osiris_home: Path,
                                                         tmp_path: Path) -> None:
    env = osiris_env(OSIRIS_STORE_OWNER=owner)
    for step in (_mcp_session, _hook, _install, _osiris_run):
        step(env)
    release_owner_and_wait(osiris_home)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "shared.txt").write_text("not OSIRIS's\n")
    (osiris_home / "link").symlink_to(outside)
    _open_up(osiris_home)
    opened = _open_to_others(osiris_home)
    assert opened["osiris.duckdb"] == "file 644" and opened["refs"] == "dir 755"

    async def one_call() -> Any:
        async with Client(stdio_params(env)) as client:
            return await client.call_tool("osiris_plan", {
                "mode": "start", "objective": "again", "steps": ["a"]})

    assert not run(one_call()).is_error
    assert not _open_to_others(osiris_home)
    # A symlink is neither followed nor changed.
    assert _mode(outside) == "dir 755" and _mode(outside / "shared.txt") == "file 644"


@pytest.mark.usefixtures("open_umask")
@pytest.mark.parametrize("owner", ["on", "off"])
def test_a_hook_that_logs_a_problem_in_a_new_home_keeps_it_private(
        owner: str, osiris_home: Path) -> None:
    # Malformed input: the hook (itself, or the owner it started) writes hooks.log, and
    # without the owner no store is opened to tighten anything afterwards.
    done = subprocess.run(launch_argv(sys.executable, "hook", "claude-code", "pre-tool-use"),
                          input="not json", text=True, capture_output=True, timeout=120,
                          env=osiris_env(OSIRIS_STORE_OWNER=owner), check=False)
    assert done.returncode == 0 and "malformed hook input" in done.stdout
    assert _modes(osiris_home)["hooks.log"] == "file 600"
    assert not _open_to_others(osiris_home)


def test_the_light_processes_use_the_stores_modes() -> None:
    assert hook_entry.PRIVATE_UMASK == fsutil.PRIVATE_UMASK
    assert runner.PRIVATE_DIR == fsutil.PRIVATE_DIR
