"""Shared fixtures: every test gets its own OSIRIS_HOME (simonw/llm's habit)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from osiris.config import Settings
from osiris.engine import Engine
from osiris.store.state import Store

REPO = Path(__file__).resolve().parent.parent
TRACES = REPO / "datasets" / "traces"


@pytest.fixture(autouse=True)
def osiris_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point OSIRIS_HOME at a fresh directory and clear other OSIRIS_* variables."""
    for name in list(os.environ):
        if name.startswith("OSIRIS_"):
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    monkeypatch.setenv("OSIRIS_HOME", str(home))
    return home


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


def home_rows(home: Path, sql: str, params: list[Any] | None = None,
              ) -> list[tuple[Any, ...]]:
    """The rows of a query on the home ``home`` (through OSIRIS's own read lock)."""
    store = Store(Settings(home=home))
    try:
        with store.read() as con:
            return [tuple(r) for r in con.execute(sql, params or []).fetchall()]
    finally:
        store.close()


@pytest.fixture
def engine(settings: Settings) -> Iterator[Engine]:
    """The real engine on the test home."""
    eng = Engine(settings)
    yield eng
    eng.close()
