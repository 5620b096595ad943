"""The source tree a trace's agent worked in, unpacked for a real client to work in again.

``datasets/workspaces/`` holds one tarball per tielec trace (``SOURCES.md`` there): the
repository at the commit before the trace's log. :func:`unpack` checks the tarball's
sha256 against ``MANIFEST.txt``, extracts ``ai-workflow-agent/`` into the session's
project directory, lays the trace's ``prompt_includes/`` over it (the files the task
prompt's ``@`` mentions named, as the agent saw them), and commits the whole tree to a
fresh git repository with a fixed author and fixed dates, so that ``git status``, ``git
diff`` and ``git checkout`` work as they did for the agent and answer the same way on
every run.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

from osiris.harness.importers.traces import find_traces

TREE = "ai-workflow-agent"
"""The top folder of every tarball (it becomes the project root)."""
GIT_DATE = "2026-01-01T00:00:00Z"
GIT_ENV = {"GIT_AUTHOR_NAME": "osiris-bench", "GIT_AUTHOR_EMAIL": "bench@osiris.invalid",
           "GIT_COMMITTER_NAME": "osiris-bench", "GIT_COMMITTER_EMAIL": "bench@osiris.invalid",
           "GIT_AUTHOR_DATE": GIT_DATE, "GIT_COMMITTER_DATE": GIT_DATE}


class WorkspaceError(RuntimeError):
    """A workspace tarball is missing, altered or unsafe (the message says which)."""


def tarball_for(trace_rel: str, workspaces: Path) -> Path | None:
    """The tarball of a trace (``claude-code__tielec-ai-workflow-agent/issue-18/
    04_implementation/execute/agent_log_raw.txt`` →
    ``claude-code__issue-18__04_implementation__execute.tar.gz``), None if there is none."""
    parts = Path(trace_rel).parts
    if len(parts) < 5:
        return None
    client = parts[0].split("__", 1)[0]
    path = workspaces / f"{client}__{parts[1]}__{parts[2]}__{parts[3]}.tar.gz"
    return path if path.exists() else None


def manifest(workspaces: Path) -> dict[str, str]:
    """tarball name → sha256, from ``MANIFEST.txt``."""
    found: dict[str, str] = {}
    text = (workspaces / "MANIFEST.txt").read_text(encoding="utf-8")
    for line in text.splitlines():
        name, *fields = line.split()
        for field in fields:
            if field.startswith("sha256="):
                found[name] = field.removeprefix("sha256=")
    return found


def unpack(tarball: Path, project: Path, *, includes: Path | None = None,
           tree: str = TREE) -> None:
    """Fill the empty directory ``project`` with the tree of ``tarball`` (see the
    module docstring; ``tree``: its top folder, for the corpus the file's stem); raises
    :class:`WorkspaceError` if the tarball does not match its folder's manifest or
    holds a path outside the tree. A folder without ``MANIFEST.txt`` (the corpus, whose
    ``SOURCES.md`` names the commit of each tree instead) is not checked."""
    if (tarball.parent / "MANIFEST.txt").exists():
        expected = manifest(tarball.parent).get(tarball.name)
        actual = hashlib.sha256(tarball.read_bytes()).hexdigest()
        if expected != actual:
            raise WorkspaceError(f"{tarball} has sha256 {actual}, MANIFEST.txt says "
                                 f"{expected}")
    staging = project.parent / f".{project.name}-unpack"
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    with tarfile.open(tarball, "r:gz") as archive:
        for member in archive.getmembers():
            if not (member.name == tree or member.name.startswith(f"{tree}/")):
                raise WorkspaceError(f"{tarball}: {member.name!r} is outside {tree}/")
        archive.extractall(staging, filter="data")
    for entry in (staging / tree).iterdir():
        shutil.move(str(entry), project / entry.name)
    shutil.rmtree(staging)
    if includes is not None and includes.is_dir():
        shutil.copytree(includes, project, dirs_exist_ok=True)
    commit_tree(project)


def commit_tree(project: Path) -> None:
    """Commit ``project`` whole to a fresh git repository (fixed author and dates)."""
    env = {"PATH": os.defpath + ":/usr/local/bin", "HOME": str(project), **GIT_ENV,
           "GIT_CONFIG_NOSYSTEM": "1", "LANG": "C.UTF-8"}
    for argv in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"],
                 ["git", "commit", "-q", "--no-gpg-sign", "-m", "workspace"]):
        done = subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True,
                              check=False)
        if done.returncode != 0:
            raise WorkspaceError(f"{' '.join(argv)} failed in {project}: {done.stderr[-400:]}")


def traces_with_workspaces(traces: Path, workspaces: Path) -> list[tuple[Path, Path]]:
    """(trace, tarball) for every trace that has a workspace, in a fixed order."""
    found = []
    for path in find_traces(traces):
        tarball = tarball_for(str(path.relative_to(traces)), workspaces)
        if tarball is not None:
            found.append((path, tarball))
    return found
