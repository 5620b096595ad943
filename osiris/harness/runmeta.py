"""Provenance recorded with every benchmark row: run id, commit, versions, encoding."""

from __future__ import annotations

import hashlib
import platform
import shutil
import subprocess
import uuid
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from osiris._version import __version__
from osiris.core.tokens import ENCODING_NAME

_PACKAGES = ("duckdb", "tiktoken", "quicktok-v1", "mcp", "polars", "pyarrow", "google-re2")


MEASURED_PATHS = ("osiris", "bench", "datasets", "noxfile.py", "pyproject.toml")
"""What a benchmark run's figures depend on: a change there not committed yet is said."""
UNCOMMITTED = "+uncommitted"


def _git(repo: Path, *args: str) -> str | None:
    git = shutil.which("git")
    if git is None:
        return None
    try:
        out = subprocess.run([git, "-C", str(repo), *args], capture_output=True, text=True,
                             timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def _git_commit(repo: Path) -> str:
    """HEAD's hash, with :data:`UNCOMMITTED` after it when the measured code differs from
    it (a change or a new file under :data:`MEASURED_PATHS`)."""
    head = (_git(repo, "rev-parse", "HEAD") or "").strip()
    if not head:
        return "unknown"
    changed = _git(repo, "status", "--porcelain", "--untracked-files=normal", "--",
                   *MEASURED_PATHS)
    return head + UNCOMMITTED if changed else head


def commit_label(commit: str) -> str:
    """A run's commit as the reports name it: ```1a94407…``` and, when the run measured
    code not committed yet, says so."""
    if commit.endswith(UNCOMMITTED):
        return f"`{commit[:12]}` with changes not committed yet"
    return f"`{commit[:12]}`"


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "absent"


@dataclass(frozen=True)
class RunMeta:
    """Who, what and with which versions a benchmark run measured."""

    run_id: str
    commit: str
    osiris_version: str
    python: str
    machine: str
    encoding: str
    versions: str

    def as_row(self) -> dict[str, Any]:
        """Columns to prepend to every result row."""
        return asdict(self)


def new_run(repo: Path) -> RunMeta:
    """Describe the run about to start."""
    versions = ";".join(f"{p}={_version(p)}" for p in _PACKAGES)
    return RunMeta(run_id=uuid.uuid4().hex[:12], commit=_git_commit(repo),
                   osiris_version=__version__, python=platform.python_version(),
                   machine=f"{platform.machine()} {platform.system()} cpus="
                           f"{_cpu_count()}", encoding=ENCODING_NAME, versions=versions)


def _cpu_count() -> int:
    import os

    return os.cpu_count() or 0


def file_sha256(path: Path) -> str:
    """Hash of a dataset file (recorded so results name their inputs exactly)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
