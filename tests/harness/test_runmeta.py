"""A benchmark run names the commit it measured, and says so when the code it ran differs
from that commit (a run from a working tree with changes not committed yet)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from osiris.harness.runmeta import commit_label, new_run


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_a_run_from_a_tree_with_uncommitted_code_says_so(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "osiris").mkdir(parents=True)
    (repo / "reports").mkdir()
    (repo / "osiris" / "engine.py").write_text("x = 1\n")
    _git(repo, "init", "-q")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    head = _git(repo, "rev-parse", "HEAD")
    assert new_run(repo).commit == head
    assert commit_label(head) == f"`{head[:12]}`"
    # What a run writes (reports/) is not code it measured.
    (repo / "reports" / "PERF.md").write_text("# speed\n")
    assert new_run(repo).commit == head
    (repo / "osiris" / "engine.py").write_text("x = 2\n")
    changed = new_run(repo).commit
    assert changed.startswith(head) and changed != head
    assert commit_label(changed) == f"`{head[:12]}` with changes not committed yet"
    _git(repo, "checkout", "-q", "--", "osiris/engine.py")
    (repo / "osiris" / "new.py").write_text("y = 1\n")  # a new module counts too
    assert new_run(repo).commit != head
