"""In the path, safely: with OSIRIS installed the real clients decide and run every
shell command exactly as without it (issue 36, items 1 to 3).

Each test runs the same scripted calls twice in the real binary (Claude Code 2.1.328,
Codex 0.169.0; ``.ci/install-node-tools``), bare and with OSIRIS installed as a user
installs it, and compares what the model was shown and what the commands did on disk.
One large output in each script shows that OSIRIS's hooks really ran (it reaches the
model as OSIRIS's preview only in the OSIRIS run).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from osiris.harness.real_clients.configs import BARE, OSIRIS, install
from osiris.harness.real_clients.model_script import (
    Action,
    FinalText,
    ModelRequest,
    ScriptedTurns,
    ToolCall,
    tool_results,
)
from osiris.harness.real_clients.model_server import ModelServer
from osiris.harness.real_clients.run import CLAUDE_CODE, CODEX, Workspace, run_client
from tests.harness.real_clients import TOOLS, require_client

pytestmark = pytest.mark.slow  # real Claude Code and Codex sessions

CODEX_ARGS = ("-m", "gpt-5-codex")
LARGE = "seq 1 4000"
"""A command whose output OSIRIS shows as a preview (its hooks ran)."""
PREVIEWED = "stored as mem://sha256:"
# What differs from run to run in the clients' own text: Codex's chunk id, wall time and
# token count (of an output naming the run's own folder), Claude Code's ids.
_VOLATILE = re.compile(r"Chunk ID: \w+|Wall time: [\d.]+ seconds|toolu_\w+|"
                       r"Original token count: \d+|"
                       r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class _AfterShellSnapshot(ScriptedTurns):
    """Codex takes its snapshot of the user's shell (functions, aliases) while the first
    request is on its way, and a command that runs before it is ready runs without it
    (seen here under load, bare or not): the first call waits, bounded, until the
    snapshot file is there, so both runs compare like with like."""

    def __init__(self, calls: list[ToolCall], snapshots: Path | None) -> None:
        super().__init__([*calls, FinalText("Done.")])
        self.snapshots = snapshots

    def reply(self, request: ModelRequest) -> Action:
        if self.snapshots is not None and self.is_agent(request):
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not any(self.snapshots.glob("*")):
                time.sleep(0.05)
            self.snapshots = None
        return super().reply(request)


def _session(tmp_path: Path, client: str, configuration: str, calls: list[ToolCall], *,
             home_files: dict[str, str] | None = None,
             claude_permissions: dict[str, list[str]] | None = None,
             codex_rules: str | None = None,
             codex_approvals: str | None = None) -> tuple[list[str], list[str]]:
    """The tool results the model got, and the project's files afterwards."""
    workspace = Workspace(tmp_path / f"{client}-{configuration}").reset(client)
    extra = install(configuration, client, workspace, TOOLS).extra_args
    for name, text in (home_files or {}).items():
        (workspace.home / name).write_text(text, encoding="utf-8")
    if claude_permissions is not None:  # the user's rules, beside what install wrote
        settings = json.loads(workspace.claude_settings.read_text("utf-8"))
        settings["permissions"] = claude_permissions
        workspace.claude_settings.write_text(json.dumps(settings, indent=2), "utf-8")
    if codex_rules is not None:
        (workspace.codex_home / "rules").mkdir()
        (workspace.codex_home / "rules" / "default.rules").write_text(codex_rules, "utf-8")
    (workspace.project / "sub").mkdir()
    snapshots = workspace.codex_home / "shell_snapshots" if client == CODEX else None
    with ModelServer(_AfterShellSnapshot(calls, snapshots)) as server:
        run = run_client(client, server, workspace, "go", tools=TOOLS, timeout_s=240,
                         extra_args=(*extra, *(CODEX_ARGS if client == CODEX else ())),
                         extra_env={"SHELL": "/bin/bash"}, codex_approvals=codex_approvals)
    assert run.returncode == 0, run.describe()
    results = [tool_results(prompt)[-1] for prompt in run.prompts[1:]]
    assert len(results) == len(calls), run.describe()
    files = sorted(p.name for p in workspace.project.iterdir())
    return [_VOLATILE.sub("…", r).replace(str(workspace.root), "ROOT") for r in results], \
        files


def _compare(bare: tuple[list[str], list[str]], osiris: tuple[list[str], list[str]],
             large_at: int) -> None:
    """Every result the same but the large output's, which OSIRIS previewed; the same
    files on disk."""
    (bare_results, bare_files), (osiris_results, osiris_files) = bare, osiris
    assert osiris_files == bare_files
    assert PREVIEWED in osiris_results[large_at] and PREVIEWED not in bare_results[large_at]
    for i, (seen_bare, seen_osiris) in enumerate(zip(bare_results, osiris_results,
                                                     strict=True)):
        if i != large_at:
            assert seen_osiris == seen_bare, (i, seen_bare, seen_osiris)


def test_claude_code_permission_rules_decide_as_without_osiris(tmp_path: Path) -> None:
    """Claude Code matches its allow, ask and deny rules against the command the agent
    wrote: a denied command is denied, an asked one asked (headless: refused), an
    allowed one runs without prompting, and OSIRIS grants nothing."""
    require_client(CLAUDE_CODE)
    permissions = {"allow": ["Bash(touch allowed.txt)", "Bash(seq:*)", "mcp__osiris"],
                   "ask": ["Bash(touch asked.txt)"],
                   "deny": ["Bash(git push:*)", "Bash(touch denied.txt)"]}
    calls = [ToolCall("Bash", {"command": "touch denied.txt"}),
             ToolCall("Bash", {"command": "git push --force origin main"}),
             ToolCall("Bash", {"command": "touch asked.txt"}),
             ToolCall("Bash", {"command": "touch unlisted.txt"}),
             ToolCall("Bash", {"command": "touch allowed.txt"}),
             ToolCall("Bash", {"command": LARGE})]
    runs = {c: _session(tmp_path, CLAUDE_CODE, c, calls, claude_permissions=permissions)
            for c in (BARE, OSIRIS)}
    _compare(runs[BARE], runs[OSIRIS], large_at=5)
    results, files = runs[OSIRIS]
    assert files == ["allowed.txt", "sub"]
    assert "denied" in results[0].lower() or "permission" in results[0].lower()


@pytest.mark.parametrize("policy", ["never", "on-request", "on-failure"])
def test_codex_approval_policy_and_rules_decide_as_without_osiris(tmp_path: Path,
                                                                  policy: str) -> None:
    """Codex under the user's approval policy, sandbox and rules: a forbidden command is
    refused, one the rules say to ask about is asked (``codex exec`` cannot ask: it is
    refused), a write outside the sandbox is refused, and OSIRIS's hooks answer no
    ``allow`` that would skip any of it."""
    require_client(CODEX)
    rules = ('prefix_rule(pattern=["touch", "forbidden.txt"], decision="forbidden")\n'
             'prefix_rule(pattern=["touch", "prompted.txt"], decision="prompt")\n')
    calls = [ToolCall("exec_command", {"cmd": "touch forbidden.txt"}),
             ToolCall("exec_command", {"cmd": "touch prompted.txt"}),
             ToolCall("exec_command", {"cmd": "touch /outside-the-sandbox.txt"}),
             ToolCall("exec_command", {"cmd": "touch plain.txt"}),
             ToolCall("exec_command", {"cmd": LARGE})]
    runs = {c: _session(tmp_path, CODEX, c, calls, codex_rules=rules,
                        codex_approvals=policy) for c in (BARE, OSIRIS)}
    _compare(runs[BARE], runs[OSIRIS], large_at=4)
    results, files = runs[OSIRIS]
    assert "forbidden.txt" not in files and "prompted.txt" not in files
    assert "plain.txt" in files
    assert "rejected" in results[0].lower()
    assert not Path("/outside-the-sandbox.txt").exists()


BASHRC = """\
osiris_probe_fn() { echo "function ran with $1"; }
alias probe_alias='echo alias ran'
export PROBE_FROM_RC=rc-value
"""


@pytest.mark.parametrize("client", [CLAUDE_CODE, CODEX])
def test_commands_run_in_the_clients_own_shell(tmp_path: Path, client: str) -> None:
    """The user's functions and aliases (the client's shell snapshot of ~/.bashrc), a
    ``cd`` or ``export`` that the next call sees or not exactly as without OSIRIS, a
    command that kills its own shell, closed streams and a long quoted command: all as
    the bare client."""
    require_client(client)
    tool, key = ("Bash", "command") if client == CLAUDE_CODE else ("exec_command", "cmd")
    commands = ["osiris_probe_fn x", "probe_alias", "echo $PROBE_FROM_RC",
                "cd sub && export PROBE_EXPORTED=yes && pwd", "pwd; echo ${PROBE_EXPORTED:-unset}",
                "cd sub", "pwd", "kill -9 $$", "echo after", LARGE,
                # Closed streams (in a subshell whose stderr joins its stdout: the
                # clients read the two streams apart, in no fixed order).
                "(printf 'a\\nb\\n' 1>&-; echo closed-stdout-status=$?) 2>&1",
                "(echo to-stderr >&2 2>&-; echo done) 2>&1",
                # 10,000 single quotes: within the kernel's argument limit as the client
                # quotes them, past it if quoted once more
                'echo "' + "'" * 10_000 + '" | wc -c']
    calls = [ToolCall(tool, {key: c}) for c in commands]
    home = {".bashrc": BASHRC, ".bash_profile": "source ~/.bashrc\n"}
    runs = {c: _session(tmp_path, client, c, calls, home_files=home) for c in (BARE, OSIRIS)}
    _compare(runs[BARE], runs[OSIRIS], large_at=commands.index(LARGE))
