"""Shared fixtures: every test gets its own OSIRIS_HOME (simonw/llm's habit), and the whole
run gets a scratch HOME, so no test (nor a process it starts) touches the user's home."""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from osiris.config import Settings
from osiris.engine import Engine
from osiris.store.db import ask_owner_to_release
from osiris.store.state import Store

REPO = Path(__file__).resolve().parent.parent
TRACES = REPO / "datasets" / "traces"
# The user's OSIRIS home as it was before the run redirected HOME (the guard below).
REAL_OSIRIS_HOME = Path(os.path.expanduser("~")) / ".osiris"
# Variables that point at the user's own directories (client configs, XDG data).
_USER_DIR_VARIABLES = ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME",
                       "XDG_CACHE_HOME", "XDG_STATE_HOME")
_REAL_HOME_STATE = pytest.StashKey[tuple[bool, dict[str, tuple[int, int]]]]()


def _tree_state(root: Path) -> dict[str, tuple[int, int]]:
    """(size, mtime) of every file under ``root``: what a write would change."""
    state = {}
    for path in sorted(root.rglob("*")) if root.exists() else []:
        with contextlib.suppress(OSError):  # a file removed while we walk
            info = path.lstat()
            state[str(path.relative_to(root))] = (info.st_size, info.st_mtime_ns)
    return state


# Tests that drive the real Claude Code and Codex, or the benchmark (whose scratch roots
# /tmp/osiris-bench-* are fixed on purpose): one pytest-xdist worker runs them one after
# the other, as a user runs one client session at a time; the other workers run the rest
# beside them, test by test. (xdist's own ``--dist loadgroup`` did not group anything
# with pytest 9.2 and xdist 3.8: hence a scheduler of our own.)
ONE_AT_A_TIME = frozenset({
    "tests/cli/test_bench_session.py", "tests/harness/test_bench.py",
    "tests/harness/test_bench_clients.py", "tests/harness/test_bench_mini.py",
    "tests/harness/test_client_heads.py", "tests/harness/test_codex_path.py",
    "tests/harness/test_codex_trust.py", "tests/harness/test_in_the_path.py",
    "tests/harness/test_notebooks.py", "tests/harness/test_real_clients.py",
    "tests/harness/test_routing_real_clients.py"})


# Suites that start OSIRIS's own processes for each test (MCP servers over HTTP, the
# dashboard, the CLI, store owners killed and restarted): the full run (nox -s tests, CI)
# runs them; the edit-test loop (nox -s fast) leaves them out, as it leaves out the
# store modes other than the default, to stay within a minute and a half. It keeps the
# hooks as installed (tests/clients/test_hooks.py, test_routing_hooks.py) and the MCP
# protocol over stdio and HTTP (tests/server/test_protocol.py).
FULL_RUN_ONLY = frozenset({
    "tests/cli/test_bench_session.py", "tests/cli/test_health_audit.py",
    "tests/cli/test_missing_home.py", "tests/cli/test_replay.py", "tests/cli/test_run.py",
    "tests/clients/test_install.py", "tests/contracts/test_records.py",
    "tests/dashboard/test_http.py", "tests/harness/test_model_server.py",
    "tests/harness/test_real_clients.py", "tests/server/test_early.py",
    "tests/server/test_error_bounds.py", "tests/server/test_errors.py",
    "tests/server/test_http_security.py", "tests/server/test_http_sessions.py",
    "tests/server/test_model_text.py", "tests/server/test_ownership.py",
    "tests/server/test_recall_continuations.py", "tests/server/test_recall_scope.py",
    "tests/server/test_surface.py", "tests/server/test_transports.py",
    "tests/store/test_locking.py", "tests/store/test_owner.py",
    "tests/store/test_owner_faults.py", "tests/store/test_private_home.py",
    "tests/test_agent.py"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``slow`` (left out of ``nox -s fast``) the tests of :data:`FULL_RUN_ONLY` and
    those on a store mode other than the default (:data:`STORE_MODES`)."""
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if item.nodeid.split("::", 1)[0] in FULL_RUN_ONLY \
                or params.get("store_mode", STORE_MODES[0]) != STORE_MODES[0]:
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist's scope scheduling, with :data:`ONE_AT_A_TIME` as one scope and every other
    test a scope of its own."""
    from xdist.scheduler import LoadScopeScheduling

    class OneAtATime(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return "one-at-a-time" if nodeid.split("::", 1)[0] in ONE_AT_A_TIME else nodeid

    return OneAtATime(config, log)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Remember the real ~/.osiris before any test runs."""
    session.config.stash[_REAL_HOME_STATE] = (REAL_OSIRIS_HOME.exists(),
                                              _tree_state(REAL_OSIRIS_HOME))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run if the real ~/.osiris was created or changed while it ran: some test
    started OSIRIS without the test's OSIRIS_HOME and without the scratch HOME (an
    environment built from nothing falls back to the passwd entry's home)."""
    before = session.config.stash.get(_REAL_HOME_STATE, None)
    if before is None:
        return
    after = (REAL_OSIRIS_HOME.exists(), _tree_state(REAL_OSIRIS_HOME))
    if after == before:
        return
    changed = sorted(set(before[1].items()) ^ set(after[1].items()))
    names = sorted({name for name, _ in changed})[:10]
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    message = (f"the test run touched the user's real {REAL_OSIRIS_HOME} "
               f"({'created' if not before[0] else 'changed: ' + ', '.join(names)}); "
               "no test may write there (an OSIRIS of your own writing to it at the same "
               "time changes it too)")
    if reporter is not None:
        reporter.write_line(f"ERROR: {message}", red=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session", autouse=True)
def scratch_user_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """HOME is a scratch directory for the whole run, for this process and every process
    a test starts (the MCP Inspector passes HOME on to the server it spawns even when it
    drops everything else): ~/.osiris, ~/.claude, ~/.codex, ~/.mcp-inspector, ~/.ipython
    all land there."""
    home = tmp_path_factory.mktemp("user-home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        for name in _USER_DIR_VARIABLES:
            patch.delenv(name, raising=False)
        yield home


@pytest.fixture(autouse=True)
def osiris_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Point OSIRIS_HOME at a fresh directory and clear other OSIRIS_* variables."""
    for name in list(os.environ):
        if name.startswith("OSIRIS_"):
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    monkeypatch.setenv("OSIRIS_HOME", str(home))
    yield home
    # A store owner a test's processes started ends with the test (else it idles on).
    ask_owner_to_release(home)


@pytest.fixture
def settings(osiris_home: Path) -> Settings:
    """Settings read from the test environment."""
    return Settings.from_env()


@pytest.fixture
def store(settings: Settings) -> Iterator[Store]:
    """A Store on the test home."""
    st = Store(settings)
    yield st
    st.close()


def run_cli(*args: str, env: dict[str, str] | None = None,
            stdin: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``python -m osiris ARGS`` as a real process."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run([sys.executable, "-m", "osiris", *args], capture_output=True,
                          text=True, env=full_env, input=stdin, timeout=timeout, check=False)


def release_owner_and_wait(home: Path, timeout_s: float = 20) -> None:
    """Ask the store owner of ``home`` to exit and wait until it has: it answers once the
    database is closed, and then still unlinks its socket and frees ``owner.lock``."""
    ask_owner_to_release(home)
    lock_path = home / "owner.lock"
    if not lock_path.exists():
        return
    deadline = time.monotonic() + timeout_s
    with lock_path.open("a") as lock:
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                assert time.monotonic() < deadline, "the owner did not exit"
                time.sleep(0.02)
                continue
            fcntl.flock(lock, fcntl.LOCK_UN)
            return


def home_rows(home: Path, sql: str, params: list[Any] | None = None,
              ) -> list[tuple[Any, ...]]:
    """The rows of a query on the home ``home`` (through OSIRIS's own read lock)."""
    store = Store(Settings(home=home))
    try:
        with store.read() as con:
            return [tuple(r) for r in con.execute(sql, params or []).fetchall()]
    finally:
        store.close()


SHOWN_REF = r"mem://sha256:[0-9a-f]{16}\b"
"""A ref as OSIRIS shows it to a model: its short form (``osiris.core.hashing.short_ref``)."""


def whole_ref(home: Path, shown: str) -> str:
    """The one ref of ``home`` whose short form ``shown`` is (what the store and journal
    hold)."""
    (found,) = home_rows(home, "SELECT ref FROM refs WHERE starts_with(ref, ?)", [shown])
    return str(found[0])


STORE_MODES = ("owner", "owner-no-write-behind", "no-owner")
"""How a shipped configuration opens the home's store: the store owner with write-behind
(the default: what every server, hook and ``osiris run`` reaches), the owner with
``OSIRIS_WRITE_BEHIND=off``, and each process on its own (``OSIRIS_STORE_OWNER=off``)."""

OpenEngine = Callable[[Settings], Engine]


@pytest.fixture(params=STORE_MODES)
def store_mode(request: pytest.FixtureRequest) -> str:
    """Each of :data:`STORE_MODES` in turn: a suite that takes it runs on every one."""
    return str(request.param)


@pytest.fixture
def in_store_mode(store_mode: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The settings read from the environment from now on (this test's and those of the
    processes it starts: servers, hooks, the CLI) open the store as ``store_mode``."""
    monkeypatch.setenv("OSIRIS_STORE_OWNER", "off" if store_mode == "no-owner" else "on")
    monkeypatch.setenv("OSIRIS_WRITE_BEHIND", "on" if store_mode == "owner" else "off")
    return store_mode


@pytest.fixture
def open_engine(osiris_home: Path, store_mode: str) -> Iterator[OpenEngine]:
    """Open the real engine for some settings of the test home, on the store mode of
    ``store_mode``. With an owner, a real :class:`~osiris.owner.Owner` serves the home's
    socket from a thread of this process (the processes a test starts reach it as they
    reach any owner) and each engine is the one it runs for a client with those
    settings; without, each engine opens the database itself, as a process would. All
    are closed at the end of the test."""
    from osiris.config import settings_to_wire
    from osiris.owner import Owner

    owner: Owner | None = None
    serving: threading.Thread | None = None
    opened: list[Engine] = []

    def open_(settings: Settings) -> Engine:
        nonlocal owner, serving
        if store_mode == "no-owner":
            opened.append(Engine(replace(settings, store_owner=False)))
            return opened[-1]
        if owner is None:
            owner = Owner(replace(settings, write_behind=store_mode == "owner"))
            assert owner.claim(), "another store owner serves the test's home"
            owner.open_store()
            serving = threading.Thread(target=owner.serve, daemon=True, name="test-owner")
            serving.start()
        return owner.engine_for({"settings": settings_to_wire(settings)})  # type: ignore[no-any-return]

    yield open_
    for eng in opened:
        eng.close()
    if owner is not None and serving is not None:
        owner.stop()
        serving.join(30)
        assert not serving.is_alive(), "the test's store owner did not stop"


@pytest.fixture
def engine(settings: Settings, open_engine: OpenEngine) -> Engine:
    """The real engine on the test home, on each store mode that ships."""
    return open_engine(settings)
