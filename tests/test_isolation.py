"""No test may touch the user's home: HOME is a scratch directory for the whole run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO


def test_the_run_sees_a_scratch_user_home(tmp_path_factory: pytest.TempPathFactory) -> None:
    scratch = tmp_path_factory.getbasetemp()
    assert Path.home().is_relative_to(scratch), Path.home()
    # A process a test starts (the Inspector's server, a client, a hook) inherits it.
    child = subprocess.run([sys.executable, "-c", "import pathlib; print(pathlib.Path.home())"],
                           capture_output=True, text=True, check=True)
    assert Path(child.stdout.strip()).is_relative_to(scratch)
    for name in ("CODEX_HOME", "CLAUDE_CONFIG_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME",
                 "XDG_CACHE_HOME", "XDG_STATE_HOME"):
        assert name not in os.environ, name


def _inner_run(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    """pytest with this suite's conftest, in a process whose real HOME is ``tmp_path/user``."""
    user = tmp_path / "user"
    user.mkdir(exist_ok=True)
    test = tmp_path / "test_inner.py"
    test.write_text(f"from pathlib import Path\n\n\ndef test_inner() -> None:\n    {body}\n")
    env = {**os.environ, "HOME": str(user), "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "tests.conftest",
                           "-p", "no:cacheprovider", str(test)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.slow
def test_a_run_that_writes_to_the_real_osiris_home_fails(tmp_path: Path) -> None:
    real = tmp_path / "user" / ".osiris"
    clean = _inner_run(tmp_path, "assert Path.home().name.startswith('user-home')")
    assert clean.returncode == 0, clean.stdout
    leaked = _inner_run(tmp_path, f"Path({str(real)!r}).mkdir()")
    assert leaked.returncode == 1, leaked.stdout
    assert f"touched the user's real {real} (created)" in leaked.stdout
    changed = _inner_run(tmp_path, f"(Path({str(real)!r}) / 'osiris.duckdb').write_text('x')")
    assert changed.returncode == 1, changed.stdout
    assert "changed: osiris.duckdb" in changed.stdout


def test_the_tests_run_one_at_a_time_are_still_there() -> None:
    """conftest's list names modules by path: a renamed one would run beside the others."""
    from tests.conftest import ONE_AT_A_TIME, REPO

    assert all((REPO / path).is_file() for path in ONE_AT_A_TIME)
