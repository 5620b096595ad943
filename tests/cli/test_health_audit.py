"""`osiris health` and `osiris audit` through the real command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from osiris.store.state import Store
from tests.conftest import REPO, run_cli


def test_health_on_a_new_home(store: Store, osiris_home: Path) -> None:
    store.db.migrate()  # what the first MCP server or hook does (health creates no home)
    result = run_cli("health")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    for key in ("version", "python", "duckdb", "home", "schema", "refs", "journal",
                "token_encoding", "warnings"):
        assert key in doc
    assert doc["home"] == str(osiris_home)
    assert doc["token_encoding"] == {"name": "cl100k_base", "ok": True}
    assert doc["refs"] == {"count": 0, "bytes": 0}
    assert doc["journal"]["head_seq"] == 0


def test_audit_unknown_task_is_a_clear_error(store: Store) -> None:
    store.db.migrate()
    result = run_cli("audit", "--task", "does-not-exist")
    assert result.returncode == 2
    assert result.stdout == ""
    assert "task 'does-not-exist' does not exist" in result.stderr
    assert "Traceback" not in result.stderr


def test_audit_of_a_task_without_payloads(store: Store) -> None:
    with store.transaction("t") as tx:
        tx.insert_task("t1", objective="o", state={})
        tx.event("task.start", {}, task_id="t1")
    result = run_cli("audit", "--task", "t1")
    assert result.returncode == 0
    doc = json.loads(result.stdout)
    assert doc["lossless"] is True
    assert (doc["items_externalized"], doc["items_verified"], doc["items_missing"]) == (0, 0, 0)
    assert doc["integrity_violations"] == []


def test_console_scripts_and_python_m_agree() -> None:
    bindir = Path(sys.executable).parent
    version = subprocess.run([str(bindir / "osiris"), "--version"], capture_output=True,
                             text=True, check=True, env=dict(os.environ))
    module = run_cli("--version")
    assert version.stdout == module.stdout
    assert version.stdout.startswith("osiris ")
    assert (bindir / "mcp-osiris").exists()
    assert REPO.exists()
