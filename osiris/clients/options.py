"""Command-line values of ``osiris install`` / ``uninstall`` turned into a request.

Paths typed by the user are taken as the shell would have meant them: ``~`` is the
user's home (from :class:`~osiris.config.Settings`, never the environment directly)
and relative paths start at the working directory.
"""

from __future__ import annotations

import sys
from pathlib import Path

from osiris.clients.install import DEFAULT_NAME, InstallRequest
from osiris.config import Settings
from osiris.errors import InvalidInputError

DEFAULT_HOOKS = {"claude-code": "mcp_tool"}
"""Claude Code calls the running server for its tool hooks (no process per call);
Codex has only command hooks."""


def build_request(settings: Settings, *, client: str, scope: str | None, cwd: Path,
                  project_dir: str | None = None, python: str | None = None,
                  home: str | None = None, roots: list[str] | None = None,
                  name: str = DEFAULT_NAME, hooks: str | None = None,
                  force: bool = False) -> InstallRequest:
    """An :class:`InstallRequest` from command-line values, defaults filled in.

    The scope defaults to ``user`` (``--project-dir`` implies ``project``); the home to
    the current OSIRIS_HOME; the roots to the current OSIRIS_ROOTS, else for a project
    the project directory; the interpreter to the one running this command.
    """
    scope, directory = resolve_scope(settings, scope, project_dir, cwd)
    if hooks is not None and client not in ("claude-code", "codex"):
        raise InvalidInputError(f"--hooks applies to claude-code and codex only ({client} "
                                "has no tool hooks OSIRIS can use)")
    if hooks == "mcp_tool" and client != "claude-code":
        raise InvalidInputError("--hooks mcp_tool applies to claude-code only: use command "
                                "or none")
    interpreter = user_path(settings, python, cwd) if python else Path(sys.executable)
    if not interpreter.is_file():
        raise InvalidInputError(f"--python {str(interpreter)!r} is not a file: give the "
                                "Python interpreter that has mcp-osiris installed")
    if roots:
        chosen = tuple(_root(settings, part, cwd) for value in roots
                       for part in value.split(";") if part.strip())
    else:
        chosen = settings.roots or ((directory.resolve(),) if scope == "project" else ())
    return InstallRequest(
        client=client, scope=scope, project_dir=directory,
        python=str(interpreter.absolute()),
        osiris_home=user_path(settings, home, cwd) if home else settings.home,
        roots=chosen, name=name, hooks=hooks or DEFAULT_HOOKS.get(client, "command"),
        force=force)


def resolve_scope(settings: Settings, scope: str | None, project_dir: str | None,
                  cwd: Path) -> tuple[str, Path]:
    """The scope (``--project-dir`` implies project) and the project directory."""
    if project_dir is not None and scope == "user":
        raise InvalidInputError("--project-dir goes with --project, not --user")
    directory = user_path(settings, project_dir, cwd) if project_dir else cwd
    if project_dir is not None and not directory.is_dir():
        raise InvalidInputError(f"--project-dir {project_dir!r} is not a directory")
    return scope or ("project" if project_dir else "user"), directory


def user_path(settings: Settings, raw: str, cwd: Path) -> Path:
    """A path from the command line: ``~`` is the user's home, relative is from ``cwd``."""
    if (raw == "~" or raw.startswith("~/")) and settings.user_home is not None:
        return settings.user_home / raw[2:]
    path = Path(raw)
    return path if path.is_absolute() else cwd / path


def _root(settings: Settings, raw: str, cwd: Path) -> Path:
    path = user_path(settings, raw.strip(), cwd)
    if not path.is_dir():
        raise InvalidInputError(f"--roots entry {raw.strip()!r} is not an existing directory")
    return path.resolve()
