"""A user's own session through its real client, bare and with OSIRIS:
``osiris bench clients --session FILE --workspace DIR_OR_TARBALL [--json]``.

The session file is what the client wrote (a Claude Code session file or stream-json log,
a Codex rollout or ``exec --json`` log); the workspace is the project it ran in, as a
folder or a tarball (``.tar``, ``.tar.gz``, ``.tgz``), copied into a scratch directory
for every configuration, never touched in place. Each configuration plays the session
through the real binary against the scripted model, exactly as the benchmark plays its
own sessions (:mod:`osiris.harness.real_clients.sessions`), and is measured from the requests
the client sent. What cannot be used is said before anything runs
(:class:`OwnSessionError`).
"""

from __future__ import annotations

import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from osiris.harness.importers.traces import Trace, load_trace, problem

__all__ = ["OwnSessionError", "Workspace", "check_session", "summary"]

CLIENT_OF_FORMAT = {"claude-code": "claude-code", "codex-cli": "codex"}
_TARBALLS = (".tar", ".tar.gz", ".tgz")


class OwnSessionError(ValueError):
    """A session file or workspace that cannot be played (the message says why and what
    to do)."""


def check_session(path: Path) -> tuple[Trace, str]:
    """The session and its client, or :class:`OwnSessionError`."""
    if not path.is_file():
        raise OwnSessionError(f"{path}: no such file (give the session file the client "
                              "wrote: ~/.claude/projects/*/*.jsonl or "
                              "~/.codex/sessions/**/rollout-*.jsonl)")
    try:
        trace = load_trace(path)
    except OSError as exc:
        raise OwnSessionError(f"{path}: unreadable ({exc.strerror})") from None
    reason = problem(trace)
    if reason is not None:
        raise OwnSessionError(f"{path}: {reason}")
    client = CLIENT_OF_FORMAT.get(trace.format)
    if client is None:
        raise OwnSessionError(f"{path}: a {trace.format} session has no real client here "
                              "(Claude Code and Codex sessions do); `osiris replay` models "
                              "it instead")
    return trace, client


@dataclass(frozen=True)
class Workspace:
    """The project a session ran in: a folder or a tarball, checked before use."""

    source: Path

    @classmethod
    def check(cls, path: Path) -> Workspace:
        """The workspace, or :class:`OwnSessionError` (missing, not a folder or tarball,
        a tarball with a path outside itself or a link)."""
        if path.is_dir():
            return cls(path)
        if not path.exists():
            raise OwnSessionError(f"{path}: no such folder or tarball (give the project the "
                                  "session ran in)")
        if not path.name.endswith(_TARBALLS):
            raise OwnSessionError(f"{path}: neither a folder nor a tarball (.tar, .tar.gz, "
                                  ".tgz)")
        try:
            with tarfile.open(path) as archive:
                for member in archive.getmembers():
                    name = PurePosixPath(member.name)
                    if name.is_absolute() or ".." in name.parts:
                        raise OwnSessionError(f"{path}: {member.name!r} would land outside "
                                              "the workspace; refusing the tarball")
                    if member.issym() or member.islnk():
                        target = PurePosixPath(member.linkname)
                        if target.is_absolute() or ".." in target.parts:
                            raise OwnSessionError(f"{path}: the link {member.name!r} points "
                                                  f"outside the workspace ({member.linkname})")
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise OwnSessionError(f"{path}: not a readable tarball ({exc})") from None
        return cls(path)

    def fill(self, project: Path) -> None:
        """Copy the workspace into the empty folder ``project`` (a tarball whose entries
        all sit under one top folder gives that folder's content)."""
        if self.source.is_dir():
            shutil.copytree(self.source, project, symlinks=True, dirs_exist_ok=True)
            return
        staging = project.parent / f".{project.name}-unpack"
        if staging.exists():
            shutil.rmtree(staging)
        staging.mkdir(parents=True)
        with tarfile.open(self.source) as archive:
            archive.extractall(staging, filter="data")
        tops = list(staging.iterdir())
        inner = tops[0] if len(tops) == 1 and tops[0].is_dir() else staging
        project.mkdir(parents=True, exist_ok=True)
        for entry in inner.iterdir():
            shutil.move(str(entry), project / entry.name)
        shutil.rmtree(staging)


def summary(rows: list[dict[str, Any]], models: list[str]) -> dict[str, Any]:
    """Per configuration what ``--json`` prints: cumulative input, billed cost per cost
    model, needs kept and total, compactions, refused prompts, extra calls and the
    milliseconds added per call (median, against the bare client)."""
    out: dict[str, Any] = {}
    for row in rows:
        ok = row.get("status") == "ok"
        out[row["configuration"]] = {
            "status": row.get("status"),
            "seconds": row.get("seconds"),
            "cumulative_input_tokens": row.get("cumulative_input_tokens") if ok else None,
            "vs_bare_cumulative_input": row.get("net_gain_cumulative_input_tokens"),
            "billed_cost_usd": {m: row.get(f"billed_cost_{m}") for m in models} if ok else {},
            "vs_bare_billed_cost": {m: row.get(f"net_gain_billed_cost_{m}") for m in models}
            if ok else {},
            "needs_kept": (int(row.get("needs_kept") or 0) + int(row.get("needs_retrieved")
                                                               or 0)) if ok else None,
            "needs_total": row.get("needs_total") if ok else None,
            "compactions": row.get("compaction_requests") if ok else None,
            "reactive_compactions": row.get("reactive_compactions") if ok else None,
            "refused_prompts": row.get("refused_requests") if ok else None,
            "extra_calls": row.get("extra_calls") if ok else None,
            "added_ms_per_call": row.get("added_ms_per_call"),
        }
    return out


def play(session_file: Path, workspace_path: Path, repo: Path, *,
         configurations: tuple[str, ...] | None = None,
         say: Any = lambda _m: None) -> dict[str, Any]:
    """Play the session bare, with OSIRIS and with context-mode (where installed), each in
    a fresh scratch copy of the workspace; the ``--json`` document. Raises
    :class:`OwnSessionError` before running anything when the file, the workspace or the
    client cannot be used."""
    import tempfile

    from osiris.core.cost_models import default_cost_models
    from osiris.harness.real_clients.configs import BARE, CONTEXT_MODE, OSIRIS
    from osiris.harness.real_clients.run import VERSIONS, Tools
    from osiris.harness.real_clients.sessions import run_own_session, session_rows

    trace, client = check_session(session_file)
    workspace = Workspace.check(workspace_path)
    tools = Tools.of_repo(repo)
    if tools.missing([client]):
        raise OwnSessionError(f"{client} is not installed at {tools.client(client)}: run "
                              ".ci/install-node-tools from the repository")
    chosen = configurations or (BARE, OSIRIS, CONTEXT_MODE)
    if BARE not in chosen:
        chosen = (BARE, *chosen)
    measured = []
    # A store owner the OSIRIS run started may still be closing its files when the
    # client is gone: the scratch folder is removed once it is done, errors ignored.
    with tempfile.TemporaryDirectory(prefix="osiris-own-session-",
                                     ignore_cleanup_errors=True) as scratch:
        for configuration in chosen:
            say(f"clients: {session_file.name} in {client} ({configuration})")
            measured.append(run_own_session(session_file, trace, client, workspace.fill,
                                            configuration, tools=tools, repo=repo,
                                            root=Path(scratch) / configuration))
            say(f"clients: {measured[-1].status} in {measured[-1].seconds:.0f} s")
    rows = session_rows(measured)
    models = [m.name for m in default_cost_models().models]
    return {"session": str(session_file), "workspace": str(workspace_path),
            "client": client, "client_version": VERSIONS[client],
            "tool_calls": len(trace.steps),
            "typed_prompts": sum(1 for p in trace.user_prompts if p.kind == "typed"),
            "configurations": summary(rows, models)}
