"""The configurations measured, each installed the way its own documentation says.

* ``bare`` — the client as installed, nothing added.
* ``osiris`` — ``python -m osiris install <client> --user`` with HOME (and CODEX_HOME)
  at the scratch home and OSIRIS_HOME scratch too: exactly what a user runs.
* ``context-mode`` — context-mode 1.0.169 (``.tools/context-mode``, by
  ``.ci/install-peers node``) as its README installs it. Claude Code: the plugin
  (``claude plugin marketplace add`` + ``claude plugin install context-mode@context-mode``:
  its MCP server and its hooks), from the package directory, which carries the
  marketplace manifest, instead of from GitHub. Codex: the README's manual route (its
  plugin route adds a GitHub marketplace and needs Codex plugins, which offline runs
  switch off): ``[features] hooks = true``, ``[mcp_servers.context-mode]`` with
  ``CONTEXT_MODE_PLATFORM = "codex"``, ``$CODEX_HOME/hooks.json`` from
  ``configs/codex/hooks.json`` and the routing rules ``configs/codex/AGENTS.md`` in
  ``$CODEX_HOME`` (the README's global choice, so the working directory stays the same
  in every configuration). Codex skips hooks it has not been told to trust; context-mode
  does not record trust, so its runs pass ``--dangerously-bypass-hook-trust`` (a user
  trusts them in Codex's ``/hooks``). OSIRIS's install records Codex's trust itself
  (``--yes``), and its runs pass no such flag.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass, field

import tomlkit

from osiris.harness.real_clients.run import CLAUDE_CODE, CODEX, Tools, Workspace, client_env

BARE = "bare"
OSIRIS = "osiris"
CONTEXT_MODE = "context-mode"
CONFIGURATIONS = (BARE, OSIRIS, CONTEXT_MODE)
"""The configurations whose first prompt is measured
(:mod:`osiris.harness.real_clients.capture`)."""
OSIRIS_FEATURES: dict[str, dict[str, bool]] = {
    "osiris-observe": {"read": False, "read_shape": False, "rereads": False,
                       "reread_changes": False, "shell": False, "mcp_outputs": False,
                       "compaction": False},
    "osiris-read": {"shell": False},
    "osiris-shell": {"read": False, "read_shape": False, "rereads": False,
                     "reread_changes": False},
    "osiris-read-shape": {"read": False, "rereads": False, "reread_changes": False,
                          "shell": False, "read_shape": True},
}
"""OSIRIS with one routing feature at a time (``[routing]`` of an invariants file in a
root of its own): ``osiris-observe`` is OSIRIS before routing (its hooks only watch);
``osiris-read-shape`` is the mid-size read shaping that is off by default, alone."""
SESSION_CONFIGURATIONS = (BARE, OSIRIS, *OSIRIS_FEATURES, CONTEXT_MODE)
_SKIPPED = {CODEX: ("osiris-read", "osiris-shell", "osiris-read-shape")}
"""Codex has no Read tool: reads are shell commands, so osiris-shell is osiris there."""


def configurations_of(client: str, wanted: tuple[str, ...] = SESSION_CONFIGURATIONS,
                      ) -> tuple[str, ...]:
    """The configurations measured in ``client`` (those that differ there)."""
    return tuple(c for c in wanted if c not in _SKIPPED.get(client, ()))
CONTEXT_MODE_VERSION = "1.0.169"
INSTALL_TIMEOUT_S = 300.0


class InstallError(RuntimeError):
    """A configuration could not be installed (the message says which command failed)."""


@dataclass(frozen=True)
class Installed:
    """What a configuration needs at run time besides the files it wrote."""

    configuration: str
    commands: list[str] = field(default_factory=list)
    """What was run or written to install it (for the data file's ``how`` notes)."""
    extra_args: tuple[str, ...] = ()


def install(configuration: str, client: str, workspace: Workspace, tools: Tools,
            *, python: str = sys.executable) -> Installed:
    """Install ``configuration`` for ``client`` into a freshly reset ``workspace``."""
    if configuration == BARE:
        return Installed(BARE)
    if configuration == OSIRIS or configuration in OSIRIS_FEATURES:
        return _install_osiris(client, workspace, tools, python,
                               OSIRIS_FEATURES.get(configuration))
    if configuration == CONTEXT_MODE:
        if not (tools.context_mode / "package.json").exists():
            raise InstallError(f"{tools.context_mode} is missing: run .ci/install-peers node")
        if client == CLAUDE_CODE:
            return _context_mode_claude_code(workspace, tools)
        return _context_mode_codex(workspace, tools)
    raise ValueError(f"unknown configuration {configuration!r}: {', '.join(CONFIGURATIONS)}")


def _run(argv: list[str], workspace: Workspace, client: str, tools: Tools,
         extra_env: dict[str, str] | None = None, *, check_trust: bool = False) -> str:
    env = client_env(client, workspace, "http://127.0.0.1:9", tools, extra_env)
    done = subprocess.run(argv, cwd=workspace.project, env=env, capture_output=True, text=True,
                          timeout=INSTALL_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise InstallError(f"{' '.join(argv)} failed ({done.returncode}): "
                           f"{(done.stderr or done.stdout)[-800:]}")
    if check_trust:  # a run whose hooks Codex skips would measure the bare client
        trust = json.loads(done.stdout).get("hook_trust", {})
        if trust.get("status") != "trusted":
            raise InstallError(f"{' '.join(argv)}: Codex does not trust OSIRIS's hooks "
                               f"({trust.get('status')}): {done.stderr[-800:]}")
    return " ".join(argv)


def _install_osiris(client: str, workspace: Workspace, tools: Tools, python: str,
                    routing: dict[str, bool] | None = None) -> Installed:
    # --roots: the project OSIRIS may read files of (a large Read is windowed only there).
    roots = [str(workspace.project)]
    notes = []
    if routing is not None:  # a root of its own, so the project's tree stays the trace's
        config = workspace.root / "osiris-routing"
        (config / ".osiris").mkdir(parents=True, exist_ok=True)
        text = "[routing]\n" + "".join(f"{k} = {str(v).lower()}\n" for k, v in routing.items())
        (config / ".osiris" / "invariants.toml").write_text(text, encoding="utf-8")
        roots.append(str(config))
        notes.append("ROUTING/.osiris/invariants.toml: " + text.replace("\n", " ").strip())
    argv = [python, "-m", "osiris", "install", client, "--user", "--roots", ";".join(roots)]
    if client == CODEX:  # Codex runs only hooks the user trusted: the user says yes
        argv += ["--yes", "--codex", str(tools.client(CODEX))]
    command = _run(argv, workspace, client, tools, {"OSIRIS_HOME": str(workspace.osiris_home)},
                   check_trust=client == CODEX)
    command = (command.replace(python, "python").replace(str(workspace.project), "PROJECT")
               .replace(str(workspace.root / "osiris-routing"), "ROUTING")
               .replace(str(tools.client(CODEX)), "codex"))
    return Installed(OSIRIS, [*notes, command])


def _context_mode_claude_code(workspace: Workspace, tools: Tools) -> Installed:
    claude = str(tools.client(CLAUDE_CODE))
    commands = [_run([claude, "plugin", "marketplace", "add", str(tools.context_mode)],
                     workspace, CLAUDE_CODE, tools),
                _run([claude, "plugin", "install", "context-mode@context-mode"],
                     workspace, CLAUDE_CODE, tools)]
    return Installed(CONTEXT_MODE, [c.replace(claude, "claude") for c in commands])


def _context_mode_codex(workspace: Workspace, tools: Tools) -> Installed:
    config = workspace.codex_home / "config.toml"
    document = tomlkit.parse(config.read_text(encoding="utf-8"))
    features = document.setdefault("features", tomlkit.table())
    features["hooks"] = True
    servers = document.setdefault("mcp_servers", tomlkit.table(is_super_table=True))
    server = tomlkit.table()
    server["command"] = "context-mode"
    server["env"] = {"CONTEXT_MODE_PLATFORM": "codex"}
    servers[CONTEXT_MODE] = server
    config.write_text(tomlkit.dumps(document), encoding="utf-8")
    package = tools.context_mode / "configs" / "codex"
    shutil.copyfile(package / "hooks.json", workspace.codex_home / "hooks.json")
    shutil.copyfile(package / "AGENTS.md", workspace.codex_home / "AGENTS.md")
    return Installed(CONTEXT_MODE, [
        "config.toml: [features] hooks = true; [mcp_servers.context-mode] command = "
        '"context-mode", env CONTEXT_MODE_PLATFORM = "codex"',
        "cp configs/codex/hooks.json $CODEX_HOME/hooks.json",
        "cp configs/codex/AGENTS.md $CODEX_HOME/AGENTS.md"],
        extra_args=("--dangerously-bypass-hook-trust",))


__all__ = ["BARE", "CODEX", "CONFIGURATIONS", "CONTEXT_MODE", "OSIRIS", "OSIRIS_FEATURES",
           "SESSION_CONFIGURATIONS", "InstallError", "Installed", "configurations_of",
           "install"]
