"""Sessions: `nox -s tests`, `nox -s lint`, `nox -s bench` (see README)."""

from __future__ import annotations

import shutil
from pathlib import Path

import nox

nox.options.default_venv_backend = "venv"
nox.options.sessions = ["tests", "lint"]


@nox.session
def tests(session: nox.Session) -> None:
    """The whole test suite (Node-based clients are installed when npm is present)."""
    session.install("-e", ".[test,analysis]")
    if shutil.which("npm"):
        session.run("bash", ".ci/install-node-tools", external=True)
        bin_dir = Path(".tools/node/node_modules/.bin").resolve()
        session.env["TEST_MCP_INSPECTOR"] = str(bin_dir / "mcp-inspector")
    session.run("pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff on everything, strict mypy on osiris/."""
    session.install("-e", ".[test,analysis,dev]")
    session.run("ruff", "check", "osiris", "tests", "bench", "noxfile.py")
    session.run("mypy")


@nox.session
def bench(session: nox.Session) -> None:
    """The benchmark: regenerates reports/ (pass --quick for a small subset)."""
    session.install("-e", ".[analysis]")
    session.run("python", "bench/run_bench.py", *session.posargs)
