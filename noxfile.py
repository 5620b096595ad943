"""Sessions: `nox -s tests`, `nox -s lint`, `nox -s bench` (see README)."""

from __future__ import annotations

import glob
import os
import shutil
from pathlib import Path

import nox

nox.options.default_venv_backend = "venv"
nox.options.sessions = ["tests", "lint"]
# One pytest-xdist worker per core; the tests that drive the real clients or the
# benchmark stay together on one worker (tests/conftest.py, ONE_AT_A_TIME).
PARALLEL = ("-n", "auto")


@nox.session
def tests(session: nox.Session) -> None:
    """The whole test suite (Node-based clients are installed when npm is present)."""
    session.install("-e", ".[test,analysis]")
    # One peer (contextweaver, PyPI) in its own venv: the peer end-to-end test.
    session.run("bash", ".ci/install-peers", "cw", external=True)
    if shutil.which("npm"):
        session.run("bash", ".ci/install-node-tools", external=True)
        bin_dir = Path(".tools/node/node_modules/.bin").resolve()
        session.env["TEST_MCP_INSPECTOR"] = str(bin_dir / "mcp-inspector")
    # Headless Chromium + chromedriver (Debian packages) for the browser tests. Without
    # root or sudo the install fails; the browser tests then skip (fail in .ci/run).
    if shutil.which("apt-get") or (shutil.which("chromium") and shutil.which("chromedriver")):
        session.run("bash", ".ci/install-browser", external=True, success_codes=[0, 1])
    session.run("pytest", *PARALLEL, *session.posargs)
    # The npm launcher (npm/): Node's own test runner, end to end against this session's
    # Python. Without Node the launcher tests cannot run: an error in CI, a note here.
    if shutil.which("node"):
        python = Path(session.bin) / "python"
        session.run("node", "--test", *sorted(glob.glob("npm/test/*.test.mjs")),
                    external=True, env={"TEST_OSIRIS_PYTHON": str(python)})
    elif os.environ.get("TEST_REQUIRE_NODE_TOOLS") == "1":
        session.error("node is required for the npm launcher tests (npm/test)")
    else:
        session.warn("node not found: the npm launcher tests (npm/test) did not run")


@nox.session
def fast(session: nox.Session) -> None:
    """The edit-test loop: every test not marked ``slow`` (the ones that run the
    benchmark, real clients, a browser or several processes for seconds), without the
    installs of Node, the browser and the peer. ``nox -s tests`` (CI) runs them all."""
    session.install("-e", ".[test,analysis]")
    session.run("pytest", "-m", "not slow", *PARALLEL, *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff on everything, strict mypy on osiris/, the layers' import contracts
    (``[tool.importlinter]`` in pyproject.toml), the generated notebooks and schemas."""
    session.install("-e", ".[test,analysis,dev]")
    session.run("ruff", "check", "osiris", "tests", "bench", "noxfile.py")
    session.run("mypy")
    session.run("lint-imports", "--no-cache")
    # The notebooks' .ipynb files say what their jupytext .py sources say.
    session.run("python", "-m", "osiris.harness.notebooks", "--check")
    # The tools' published outputSchema is what the answer records give.
    session.run("python", "-m", "osiris.contracts.schemas", "--check")


@nox.session
def bench(session: nox.Session) -> None:
    """The benchmark: regenerates reports/ and README.md's measured blocks (pass --quick
    for a small subset, written to .osiris-bench/quick/)."""
    session.install("-e", ".[analysis,minisweagent]")
    # The peers: PyPI ones always; context-mode (npm) when npm is there. A peer that
    # does not install is reported in BENCHMARK.md with its error, not silently left out.
    kinds = ["python", "node"] if shutil.which("npm") else ["python"]
    session.run("bash", ".ci/install-peers", *kinds, external=True, success_codes=[0, 1])
    # The real clients (Claude Code, Codex; npm) for the `clients` stage. Without them the
    # stage reports each session as not installed instead of measuring it.
    if shutil.which("npm"):
        session.run("bash", ".ci/install-node-tools", external=True)
    # The checkouts the mini-swe-agent trajectories run in (sdists from PyPI).
    session.run("bash", ".ci/install-swe-sources", external=True)
    session.run("python", "bench/run_bench.py", *session.posargs)


@nox.session
def notebooks(session: nox.Session) -> None:
    """Execute every notebook on the committed reports (they fail if the tables drift)."""
    session.install("-e", ".[analysis]")
    session.run("python", "-c",
                "from pathlib import Path; from osiris.harness.notebooks import execute, "
                "NOTEBOOKS; [print('ok', n, execute(Path('notebooks') / n, {}) and '') "
                "for n in NOTEBOOKS]")
