"""The product on the install the README gives a user: ``pip install`` of the package,
no extras, in a virtual environment of its own (issue 40). Every documented command
runs there — the tests' own environment has the ``test`` and ``analysis`` extras, which
once hid a dashboard that answered 500 on every page without them."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import venv
from pathlib import Path

import httpx2
import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import REPO, SHOWN_REF
from tests.dashboard.process import dashboard
from tests.server.transports import run

pytestmark = pytest.mark.slow

REF = re.compile(SHOWN_REF)
TRACE = REPO / "datasets/corpus/claude-code/strato.jsonl"


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with OSIRIS installed from this clone, no extras."""
    env_dir = tmp_path_factory.mktemp("plain") / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False).create(env_dir)
    done = subprocess.run([str(env_dir / "bin" / "python"), "-m", "pip", "install",
                           "--disable-pip-version-check", "--quiet", str(REPO)],
                          capture_output=True, text=True, timeout=1_200, check=False)
    assert done.returncode == 0, done.stderr[-3_000:]
    return env_dir / "bin"


def _env(home: Path) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items()
            if not k.startswith(("OSIRIS_", "PYTHON", "VIRTUAL_ENV"))}
    return {**keep, "HOME": str(home / "user"), "OSIRIS_HOME": str(home / "osiris")}


def _run(bin_dir: Path, name: str, *args: str, env: dict[str, str],
         cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(bin_dir / name), *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=300, check=False)


def test_no_extra_package_is_installed(plain: Path) -> None:
    probe = subprocess.run(
        [str(plain / "python"), "-c", "import importlib.util as u; "
         "print([m for m in ('polars', 'pytest', 'matplotlib', 'minisweagent') "
         "if u.find_spec(m)])"], capture_output=True, text=True, timeout=60, check=False)
    assert probe.stdout.strip() == "[]", probe.stdout + probe.stderr


def test_every_documented_command_works_without_extras(plain: Path, tmp_path: Path) -> None:
    env = _env(tmp_path)
    (tmp_path / "user").mkdir()
    project = tmp_path / "project"
    project.mkdir()
    install = _run(plain, "osiris", "install", "claude-code", "--user", env=env, cwd=project)
    assert install.returncode == 0, install.stderr
    assert (tmp_path / "user" / ".claude" / "settings.json").exists()
    # osiris run: a large output becomes a preview and a ref, which osiris recall expands.
    ran = _run(plain, "osiris", "run", "--", "seq 1 20000", env=env, cwd=project)
    assert ran.returncode == 0, ran.stderr
    ref = REF.search(ran.stdout)
    assert ref is not None, ran.stdout[-500:]
    recall = _run(plain, "osiris", "recall", ref.group(0), "--grep", "^19999$", env=env)
    assert recall.returncode == 0 and "19999" in recall.stdout, recall.stderr
    health = _run(plain, "osiris", "health", env=env)
    assert health.returncode == 0 and json.loads(health.stdout)["healthy"], health.stderr
    parquet = tmp_path / "replay"
    replay = _run(plain, "osiris", "replay", str(TRACE), "--parquet", str(parquet),
                  "--quiet", env=env)
    assert replay.returncode == 0, replay.stderr
    assert list(parquet.glob("*.parquet")), replay.stderr
    # The dashboard reads the home through the store owner that osiris run started.
    with dashboard(env, command=[str(plain / "osiris-dashboard")]) as base:
        for page in ("/", "/tasks", "/events", "/refs"):
            answer = httpx2.get(base + page, timeout=60)
            assert answer.status_code == 200, (page, answer.text[-800:])

    async def tools() -> list[str]:
        params = StdioServerParameters(command=str(plain / "mcp-osiris"), env=env,
                                       cwd=str(project))
        async with Client(params) as client:
            return [t.name for t in (await client.list_tools()).tools]

    assert "osiris_recall" in run(tools())
    assert sys.executable not in (plain / "osiris").read_text(encoding="utf-8")
