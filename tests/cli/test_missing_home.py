"""Read-only commands never create a home: a mistyped OSIRIS_HOME is reported, not
silently turned into a new empty home."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from osiris.config import Settings
from osiris.errors import NotFoundError
from osiris.store.state import Store
from tests.conftest import run_cli

CREATED_BY = "it is created by the first MCP server / hook that writes"


def test_health_on_a_missing_home_is_unhealthy_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "mistyped-home"
    result = run_cli("health", env={"OSIRIS_HOME": str(missing)})
    assert result.returncode == 1, result.stdout + result.stderr
    doc = json.loads(result.stdout)
    assert doc["healthy"] is False
    assert f"no OSIRIS home at {missing}" in doc["problems"][0]
    assert CREATED_BY in doc["problems"][0]
    assert not missing.exists()


def test_audit_on_a_missing_home_exits_2_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "mistyped-home"
    result = run_cli("audit", "--task", "t1", env={"OSIRIS_HOME": str(missing)})
    assert result.returncode == 2
    assert result.stdout == ""
    assert f"no OSIRIS home at {missing}" in result.stderr and CREATED_BY in result.stderr
    assert "Traceback" not in result.stderr
    assert not missing.exists()


def test_an_empty_directory_is_not_a_home_either(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run_cli("health", env={"OSIRIS_HOME": str(empty)})
    assert result.returncode == 1
    assert list(empty.iterdir()) == []  # no lock files, no database


def test_the_dashboard_says_what_to_start(tmp_path: Path) -> None:
    missing = tmp_path / "nothing-ran-here"
    bindir = Path(sys.executable).parent
    result = subprocess.run([str(bindir / "osiris-dashboard"), "--port", "1"],
                            env={"OSIRIS_HOME": str(missing), "PATH": str(bindir)},
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2
    assert "mcp-osiris" in result.stderr and "osiris serve" in result.stderr, result.stderr
    assert "OSIRIS_HOME" in result.stderr
    assert not missing.exists()


def test_help_says_what_creates_a_home() -> None:
    result = run_cli("--help")
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    assert "creates" in text and "mcp-osiris" in text and "osiris hook" in text, text
    assert "never create" in text


def test_a_store_opened_without_create_refuses_a_missing_home(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(NotFoundError, match="no OSIRIS home at"):
        Store(Settings(home=missing), create=False)
    assert not missing.exists()
    Store(Settings(home=missing)).db.migrate()  # what a writer does: now it exists
    store = Store(Settings(home=missing), create=False)
    with store.read() as con:
        assert con.execute("SELECT count(*) FROM events").fetchone() == (0,)
    store.close()
