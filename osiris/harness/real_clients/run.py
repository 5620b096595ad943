"""One real client session against the scripted model: binaries, scratch home, limits.

The recipe is ``../shared/FACTS.md`` ("Real clients, offline"): Claude Code reads its
endpoint from ``ANTHROPIC_BASE_URL`` and its permissions from
``$HOME/.claude/settings.json``; Codex reads ``$CODEX_HOME/config.toml`` with a custom
model provider on the Responses API. Nothing but loopback is used.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomlkit

from osiris.harness.real_clients.model_script import ModelRequest
from osiris.harness.real_clients.model_server import LoggedRequest, ModelServer, prompts_of
from osiris.harness.real_clients.workspaces import GIT_DATE

CLAUDE_CODE = "claude-code"
CODEX = "codex"
MINI_SWE_AGENT = "mini-swe-agent"
"""A Python agent loop (PyPI ``mini-swe-agent``), not an npm binary: see
:mod:`osiris.harness.real_clients.mini`."""
CLIENTS = (CLAUDE_CODE, CODEX)
VERSIONS = {CLAUDE_CODE: "2.1.328", CODEX: "0.169.0"}
"""The pinned versions (``.ci/install-node-tools``)."""
NPM_PACKAGES = {CLAUDE_CODE: "@anthropic-ai/claude-code", CODEX: "@openai/codex"}
_BINARIES = {
    # npm 11 skips Claude Code's postinstall: run the platform package's native binary.
    CLAUDE_CODE: ("@anthropic-ai", "claude-code-linux-x64", "claude"),
    CODEX: ("@openai", "codex-linux-x64", "vendor", "x86_64-unknown-linux-musl", "bin",
            "codex"),
}
CLAUDE_ALLOW = ["Bash(*)", "Read(*)", "Edit(*)", "Write(*)", "Glob(*)", "Grep(*)",
                "mcp__osiris", "mcp__plugin_context-mode_context-mode"]
"""Claude Code's permission rules for every configuration (as root
``--dangerously-skip-permissions`` is refused, and ``-p`` cannot ask)."""
CODEX_PROVIDER = "scripted"
DEFAULT_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Tools:
    """Where the project's install scripts put the Node-side tools (``.tools/``)."""

    root: Path

    @classmethod
    def of_repo(cls, repo: Path) -> Tools:
        """The tools of a checkout (``REPO/.tools``)."""
        return cls(repo.resolve() / ".tools")

    def client(self, name: str) -> Path:
        """The client's executable (``.tools/clients``, by ``.ci/install-node-tools``)."""
        return self.root.joinpath("clients", "node_modules", *_BINARIES[name])

    @property
    def context_mode(self) -> Path:
        """context-mode's package directory (``.ci/install-peers node``)."""
        return self.root / "context-mode" / "node_modules" / "context-mode"

    @property
    def context_mode_bin(self) -> Path:
        """``context-mode`` and Node 22, as ``npm install`` linked them."""
        return self.root / "context-mode" / "node_modules" / ".bin"

    def missing(self, names: Sequence[str] = CLIENTS) -> list[str]:
        """The clients whose binary is not installed."""
        return [name for name in names if not os.access(self.client(name), os.X_OK)]


@dataclass(frozen=True)
class Workspace:
    """A scratch user for one configuration, at fixed paths under ``root``.

    The paths reach the prompt (Claude Code names the working directory and its memory
    folder under HOME; Codex names the working directory and its skills folder under
    CODEX_HOME), so measurements use the same ``root`` every time. Codex refuses to put
    helper binaries under the temporary directory, so TMPDIR is inside ``root`` too."""

    root: Path

    @property
    def home(self) -> Path:
        """HOME of the client and of every hook and server it starts."""
        return self.root / "home"

    @property
    def project(self) -> Path:
        """The working directory of the session."""
        return self.root / "project"

    @property
    def osiris_home(self) -> Path:
        """OSIRIS_HOME for ``osiris install`` (the server and hooks it writes use it)."""
        return self.root / "osiris-home"

    @property
    def tmp(self) -> Path:
        """TMPDIR of the client."""
        return self.root / "tmp"

    @property
    def codex_home(self) -> Path:
        """CODEX_HOME (Codex's default place under HOME)."""
        return self.home / ".codex"

    @property
    def ripgrep_config(self) -> Path:
        """The ripgrep configuration every client's commands read (``RIPGREP_CONFIG_PATH``):
        ``--sort=path``. ripgrep searches files on several threads and prints them in the
        order they finish, so the same search lists its hits in another order from run to
        run, and a client that cuts a long output (Codex keeps its head and tail) then
        shows other lines. Sorted, the same search prints the same text every run."""
        return self.root / "ripgreprc"

    @property
    def claude_settings(self) -> Path:
        """Claude Code's user settings (permissions, hooks)."""
        return self.home / ".claude" / "settings.json"

    def reset(self, client: str) -> Workspace:
        """Start from nothing: empty home, project and OSIRIS home; the client's base
        configuration written (Claude Code's permissions; Codex's provider, filled in
        by :func:`point_codex_at` before each run)."""
        for path in (self.home, self.project, self.osiris_home, self.tmp):
            if path.exists():
                shutil.rmtree(path)
            path.mkdir(parents=True)
        self.ripgrep_config.write_text("--sort=path\n", encoding="utf-8")
        if client == CLAUDE_CODE:
            self.claude_settings.parent.mkdir(parents=True)
            self.claude_settings.write_text(json.dumps(
                {"permissions": {"allow": CLAUDE_ALLOW}}, indent=2) + "\n", encoding="utf-8")
        else:
            self.codex_home.mkdir(parents=True)
            point_codex_at(self, "http://127.0.0.1:9")
        return self


def point_codex_at(workspace: Workspace, base_url: str) -> None:
    """Make ``$CODEX_HOME/config.toml`` use the scripted model at ``base_url``.

    Keeps everything else in the file (an ``osiris install codex`` entry, context-mode's
    server). Without ``features.plugins = false`` and ``analytics.enabled = false`` Codex
    looks up github.com and chatgpt.com names (FACTS.md).

    ``features.login_shell_package_path``: Codex puts its own ripgrep on the PATH of its
    commands through its shell snapshot, which it takes in the background at start and does
    not wait for; a command run before the snapshot is ready runs in a plain login shell,
    whose ``/etc/profile`` sets PATH anew, and ``rg`` is not found (on a busy machine the
    first commands of a session). With the feature the login shell keeps Codex's directory
    too: every command sees the PATH a snapshot gives, whenever it runs. The prompts are the
    same with and without it."""
    path = workspace.codex_home / "config.toml"
    document = tomlkit.parse(path.read_text(encoding="utf-8")) if path.exists() else (
        tomlkit.document())
    document["model_provider"] = CODEX_PROVIDER
    document["approval_policy"] = "never"
    document["sandbox_mode"] = "danger-full-access"
    providers = document.setdefault("model_providers", tomlkit.table(is_super_table=True))
    providers[CODEX_PROVIDER] = {"name": "scripted model", "base_url": f"{base_url}/v1",
                                 "wire_api": "responses", "request_max_retries": 0,
                                 "stream_max_retries": 0}
    features = document.setdefault("features", tomlkit.table())
    features["plugins"] = False
    features["login_shell_package_path"] = True
    analytics = document.setdefault("analytics", tomlkit.table())
    analytics["enabled"] = False
    path.write_text(tomlkit.dumps(document), encoding="utf-8")


FIXED_GIT_DATES = {"GIT_AUTHOR_DATE": GIT_DATE, "GIT_COMMITTER_DATE": GIT_DATE}
"""A commit (a stash too) the session makes is named by a hash of its dates: fixed as the
workspace's own commit's, the same commit gets the same hash every run."""


def client_env(client: str, workspace: Workspace, base_url: str, tools: Tools,
               extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The whole environment of a client process (nothing inherited but PATH).

    ``npm_config_offline``: context-mode's hooks try to ``npm install`` a native module
    they cannot load; offline that waits minutes on the network, told to be offline npm
    fails at once and context-mode carries on (its documented fallback).
    ``npm_config_update_notifier``: npm otherwise tells of a newer npm in some runs and
    not in others (it checks in the background)."""
    # A fixed PATH (config.py is the only reader of the environment): the system's own
    # directories, after context-mode's Node 22.
    path = os.pathsep.join([str(tools.context_mode_bin), "/usr/local/bin", "/usr/bin", "/bin"])
    env = {"PATH": path, "HOME": str(workspace.home), "TMPDIR": str(workspace.tmp),
           "LANG": "C.UTF-8", "TZ": "UTC", "npm_config_offline": "true",
           "npm_config_update_notifier": "false",
           "RIPGREP_CONFIG_PATH": str(workspace.ripgrep_config), **FIXED_GIT_DATES}
    if client == CLAUDE_CODE:
        # MCP_CONNECTION_NONBLOCKING=0: a headless Claude Code (``-p``) sends its first
        # request without waiting for its MCP servers, so a server slower to list its
        # tools than Claude Code is to start (a busy machine, a first start compiling
        # bytecode) is missing from the first requests. An interactive session has its
        # servers connected long before the user's first prompt; so does every run here
        # (OSIRIS's tool definitions are counted in every request, never left out by a
        # race). Claude Code's own evaluation harness sets the same.
        env.update(ANTHROPIC_BASE_URL=base_url, ANTHROPIC_API_KEY="sk-scripted-model",
                   CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_TELEMETRY="1",
                   DISABLE_AUTOUPDATER="1", MCP_CONNECTION_NONBLOCKING="0")
    else:
        env["CODEX_HOME"] = str(workspace.codex_home)
    env.update(extra or {})
    return env


PROMPT_ARG_MAX_BYTES = 100_000
"""A longer prompt is given on stdin: Linux refuses a single argument of 128 KiB or more
(``E2BIG``), and a task prompt with the files it includes can be longer."""


def prompt_on_stdin(prompt: str) -> bool:
    """Whether ``prompt`` goes to the client on stdin rather than on its command line."""
    return len(prompt.encode("utf-8")) > PROMPT_ARG_MAX_BYTES


def client_argv(client: str, tools: Tools, prompt: str,
                extra_args: Sequence[str] = (), codex_approvals: str | None = None,
                codex_resume: Sequence[str] = ()) -> list[str]:
    """The command line of one non-interactive session. ``codex_approvals``: run Codex
    under that approval policy in its ``workspace-write`` sandbox, as a user who kept
    them would (default: both bypassed, as measurements need every call to run). A
    prompt :func:`prompt_on_stdin` is left out (Claude Code's ``-p`` and Codex's ``-``
    read it from stdin)."""
    binary = str(tools.client(client))
    on_stdin = prompt_on_stdin(prompt)
    if client == CLAUDE_CODE:
        return [binary, "-p", *([] if on_stdin else [prompt]), "--output-format", "json",
                *extra_args]
    policy = ["--dangerously-bypass-approvals-and-sandbox"] if codex_approvals is None else [
        "-c", f"approval_policy={codex_approvals}", "--sandbox", "workspace-write"]
    return [binary, "exec", *codex_resume, "--skip-git-repo-check", *policy, "--json",
            *extra_args, "-" if on_stdin else prompt]


@dataclass(frozen=True)
class ClientRun:
    """What one session did."""

    client: str
    argv: list[str]
    returncode: int | None
    """None when the time limit stopped it."""
    seconds: float
    stdout: str
    stderr: str
    requests: list[LoggedRequest] = field(repr=False)
    """Everything the model server received during the session, oldest first."""

    @property
    def timed_out(self) -> bool:
        """Whether the session was stopped by its time limit."""
        return self.returncode is None

    @property
    def prompts(self) -> list[ModelRequest]:
        """The model prompts of the session (count_tokens excluded)."""
        return prompts_of(self.requests)

    def result(self) -> dict[str, Any] | None:
        """Claude Code's ``--output-format json`` result (None for Codex or no JSON)."""
        try:
            value = json.loads(self.stdout)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    def describe(self) -> str:
        """One line for an error message: how it ended, and the end of stderr."""
        ending = "timed out" if self.timed_out else f"exit {self.returncode}"
        return (f"{self.client} {ending} after {self.seconds:.1f}s, {len(self.prompts)} "
                f"prompts; stderr: {self.stderr[-600:].strip()!r}")


def run_client(client: str, server: ModelServer, workspace: Workspace, prompt: str, *,
               tools: Tools, timeout_s: float = DEFAULT_TIMEOUT_S,
               extra_args: Sequence[str] = (), extra_env: Mapping[str, str] | None = None,
               codex_approvals: str | None = None,
               codex_resume: Sequence[str] = ()) -> ClientRun:
    """Run one session of ``client`` in ``workspace.project`` against ``server``.

    The client runs in its own process group; at the time limit the whole group (the
    client, its hooks, its MCP servers) is killed and the run says so. The requests
    logged while it ran come back with it (run sessions one after another on a server
    to keep them apart). ``codex_resume``: ``("resume", "--last")`` goes on with the
    last Codex session instead of starting one."""
    if client == CODEX:
        point_codex_at(workspace, server.base_url)
    argv = client_argv(client, tools, prompt, extra_args, codex_approvals, codex_resume)
    env = client_env(client, workspace, server.base_url, tools, extra_env)
    already = len(server.requests())
    started = time.monotonic()
    on_stdin = prompt_on_stdin(prompt)
    process = subprocess.Popen(argv, cwd=workspace.project, env=env,
                               stdin=subprocess.PIPE if on_stdin else subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               errors="replace",
                               start_new_session=True)
    returncode: int | None
    try:
        stdout, stderr = process.communicate(prompt if on_stdin else None, timeout=timeout_s)
        returncode = process.returncode
    except subprocess.TimeoutExpired:
        _kill_group(process)
        stdout, stderr = process.communicate()
        returncode = None
    finally:
        _kill_group(process)  # hooks or MCP servers the client left behind
    return ClientRun(client, argv, returncode, time.monotonic() - started, stdout, stderr,
                     server.requests()[already:])


def run_client_turns(client: str, server: ModelServer, workspace: Workspace,
                     prompts: Sequence[str], *, tools: Tools,
                     timeout_s: float = DEFAULT_TIMEOUT_S, extra_args: Sequence[str] = (),
                     extra_env: Mapping[str, str] | None = None) -> ClientRun:
    """An interactive session: ``prompts`` typed one after another, each once the
    client has finished its turn on the one before, in one conversation.

    Claude Code reads the user's messages from stdin (``--input-format stream-json``,
    ``--output-format stream-json --verbose``): the next one is written when the
    previous turn's ``result`` line arrives, and stdin is closed after the last.
    Codex runs ``codex exec`` on the first prompt and ``codex exec resume --last`` on
    each later one (the same thread, its history restored from CODEX_HOME). One prompt
    is :func:`run_client`."""
    if len(prompts) <= 1 or client not in CLIENTS:
        return run_client(client, server, workspace, prompts[0] if prompts else "",
                          tools=tools, timeout_s=timeout_s, extra_args=extra_args,
                          extra_env=extra_env)
    if client == CODEX:
        return _codex_turns(server, workspace, prompts, tools=tools, timeout_s=timeout_s,
                            extra_args=extra_args, extra_env=extra_env)
    binary = str(tools.client(client))
    argv = [binary, "-p", "--input-format", "stream-json", "--output-format", "stream-json",
            "--verbose", *extra_args]
    env = client_env(client, workspace, server.base_url, tools, extra_env)
    already = len(server.requests())
    started = time.monotonic()
    process = subprocess.Popen(argv, cwd=workspace.project, env=env, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               errors="replace", start_new_session=True)
    lines: queue.Queue[str | None] = queue.Queue()
    errors: list[str] = []
    readers = [threading.Thread(target=_pump, args=(process.stdout, lines.put), daemon=True),
               threading.Thread(target=_pump, args=(process.stderr, errors.append),
                                daemon=True)]
    for reader in readers:
        reader.start()
    out: list[str] = []
    returncode: int | None = None
    try:
        returncode = _converse(process, prompts, lines, out, started + timeout_s)
    finally:
        _kill_group(process)
        for reader in readers:
            reader.join(timeout=10)
        for pipe in (process.stdin, process.stdout, process.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):  # stdin: a write the client never read
                    pipe.close()
    return ClientRun(client, argv, returncode, time.monotonic() - started, "".join(out),
                     "".join(e for e in errors if e is not None), server.requests()[already:])


def _pump(stream: Any, put: Any) -> None:
    """Copy a pipe line by line to ``put``, then None (end of stream)."""
    for line in stream:
        put(line)
    put(None)


def _user_message(text: str) -> str:
    return json.dumps({"type": "user", "message": {"role": "user", "content": text}}) + "\n"


def _is_result(line: str) -> bool:
    """Whether a stream-json line is the end of a turn (``{"type": "result", …}``)."""
    try:
        event = json.loads(line)
    except ValueError:
        return False
    return isinstance(event, dict) and event.get("type") == "result"


def _converse(process: subprocess.Popen[str], prompts: Sequence[str],
              lines: queue.Queue[str | None], out: list[str], deadline: float) -> int | None:
    """Write each prompt after the previous turn's ``result``; the exit code, or None
    when the deadline passed first."""
    assert process.stdin is not None
    pending = list(prompts)
    process.stdin.write(_user_message(pending.pop(0)))
    process.stdin.flush()
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            return None
        if line is None:
            break
        out.append(line)
        if not _is_result(line):
            continue
        if pending:
            process.stdin.write(_user_message(pending.pop(0)))
            process.stdin.flush()
        else:
            process.stdin.close()
    try:
        return process.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return None


def _codex_turns(server: ModelServer, workspace: Workspace, prompts: Sequence[str], *,
                 tools: Tools, timeout_s: float, extra_args: Sequence[str],
                 extra_env: Mapping[str, str] | None) -> ClientRun:
    """``codex exec`` on the first prompt, ``codex exec resume --last`` on the others."""
    already = len(server.requests())
    started = time.monotonic()
    runs: list[ClientRun] = []
    for n, prompt in enumerate(prompts):
        left = timeout_s - (time.monotonic() - started)
        resume = () if n == 0 else ("resume", "--last")
        run = run_client(CODEX, server, workspace, prompt, tools=tools, timeout_s=left,
                         extra_args=extra_args, extra_env=extra_env, codex_resume=resume)
        runs.append(run)
        if run.returncode != 0:
            break
    last = runs[-1]
    return ClientRun(CODEX, last.argv, last.returncode, time.monotonic() - started,
                     "".join(r.stdout for r in runs), "".join(r.stderr for r in runs),
                     server.requests()[already:])


def _kill_group(process: subprocess.Popen[str]) -> None:
    """SIGKILL the process group this module started (by its id, never by name)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    if process.poll() is None:
        process.wait(timeout=10)
