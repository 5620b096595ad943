"""What the scripted model replays of a trace: its tool calls, each mapped onto the live
client's tool and the live workspace's paths, or skipped with the reason
(:class:`~osiris.harness.real_clients.trace_script.TraceScript` issues them)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from osiris.harness.real_clients.run import CODEX, MINI_SWE_AGENT
from osiris.harness.replay.workloads import Session

SKIPPED_TOOLS = {
    "WebFetch": "needs the network", "WebSearch": "needs the network",
    "Task": "a sub-agent runs its own model conversation",
    "Agent": "a sub-agent runs its own model conversation",  # Task's name since 2.1
    "apply_patch": "the exec --json log keeps only the paths a patch changed",
    "format_error": "the trace's model answered out of format (no command ran)",
}


_PROCESS_LISTING = re.compile(r"(?:^|[;&|(]|\bthen|\bdo)\s*(?:sudo\s+)?(ps|pgrep|pidof|top)"
                              r"(?=[\s;|&)]|$)")
"""A command that lists processes: on the replaying machine its output is the machine's
process table (the other sessions the benchmark runs beside it included, their ids and
ages), not the author's, and it differs from run to run."""
LISTS_PROCESSES = "lists the replaying machine's processes, which differ from run to run"


def lists_processes(command: str) -> bool:
    """Whether a shell command runs ``ps``, ``pgrep``, ``pidof`` or ``top``."""
    return bool(_PROCESS_LISTING.search(command))


_HOME = re.compile(r"^(?:/Users|/home)/[^/]+")
"""The user's home in a trace's working directory (macOS or Linux; the M-Claude corpus
redacts the name to ``[USER]``)."""


@dataclass(frozen=True)
class PathMap:
    """Maps the trace's working directory (and its ``/tmp``) onto the workspace, and with
    ``home`` the author's home folder (``/Users/x``, ``/Users/[USER]``) onto the client's
    HOME, so a path the author typed outside the project lands in the scratch user."""

    cwd: str | None
    project: Path
    tmp: Path
    home: Path | None = None

    def __call__(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self(v) for v in value]
        if isinstance(value, dict):
            return {k: self(v) for k, v in value.items()}
        return value

    def text(self, text: str) -> str:
        """One string mapped: the cwd first, then the author's home, then ``/tmp/``."""
        marker, home_marker = "\x00project\x00", "\x00home\x00"
        if self.cwd:
            text = text.replace(self.cwd.rstrip("/"), marker)
            found = _HOME.match(self.cwd)
            if self.home is not None and found:
                text = re.sub(re.escape(found.group(0)) + r"(?![\w.-])", home_marker, text)
                text = text.replace("~/", home_marker + "/")
        text = re.sub(r"(?<![\w./-])/tmp/", f"{self.tmp}/", text)
        return text.replace(marker, str(self.project)).replace(home_marker, str(self.home))


@dataclass(frozen=True)
class Planned:
    """One call of the trace, as the live model will issue it."""

    step: int
    tool: str
    input: Mapping[str, Any] | str
    trace_tool: str
    skip: str | None = None
    """Why the call is not replayed (None: it is)."""


@dataclass(frozen=True)
class Turn:
    """A later typed prompt of an interactive session: the user typed ``prompt`` after
    the model answered ``answer`` (the trace's text ending the turn before); the trace's
    calls from ``step`` on belong to it."""

    step: int
    prompt: str
    answer: str = "Done."

    def received_in(self, last_user_text: str) -> bool:
        """Whether a request's last user message is this prompt (the client may put
        reminders before it, never change it)."""
        return self.prompt.strip()[:200] in last_user_text


def live_tool(client: str, tool: str, args: Mapping[str, Any]) -> tuple[str, Any] | None:
    """The live client's tool and input for a trace call (None: not replayable)."""
    if tool in SKIPPED_TOOLS:
        return None
    if client == MINI_SWE_AGENT:
        command = args.get("command")
        return ("bash", {"command": str(command)}) if tool == "bash" and command else None
    if client == CODEX:
        if tool in {"shell", "exec_command", "local_shell"}:
            command = args.get("command", args.get("cmd"))
            if isinstance(command, list):
                command = shlex.join(str(c) for c in command)
            return ("exec_command", {"cmd": str(command)}) if command else None
        return None
    return tool, dict(args)


def plan(session: Session, client: str, paths: PathMap) -> list[Planned]:
    """The trace's calls for ``client`` (see the module docstring); a shell command that
    lists processes is skipped (:data:`LISTS_PROCESSES`)."""
    calls = []
    for step in session.steps:
        live = live_tool(client, step.tool, step.args)
        command = _shell_command(live)
        if command is not None and lists_processes(command):
            calls.append(Planned(step.i, step.tool, {}, step.tool, skip=LISTS_PROCESSES))
        elif live is None:
            reason = SKIPPED_TOOLS.get(step.tool, f"{step.tool} has no {client} equivalent")
            calls.append(Planned(step.i, step.tool, {}, step.tool, skip=reason))
        else:
            calls.append(Planned(step.i, live[0], paths(live[1]), step.tool))
    return calls


def _shell_command(live: tuple[str, Any] | None) -> str | None:
    """The command of a live shell call (Claude Code's and mini-swe-agent's ``command``,
    Codex's ``cmd``), else None."""
    if live is None or not isinstance(live[1], Mapping):
        return None
    command = live[1].get("cmd", live[1].get("command")) if live[0] in {
        "Bash", "bash", "exec_command"} else None
    return command if isinstance(command, str) else None
