"""`osiris hook claude-code …` through the real command, with payloads from real traces."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from osiris.clients.launcher import launch_argv
from osiris.core import routing
from osiris.core.tokens import default_counter
from tests.clients import payloads
from tests.conftest import REPO, home_rows, run_cli
from tests.mounts import in_small_fs
from tests.server.transports import client_for, osiris_env, run

RULES = '''
[[invariant]]
id = "no-force-push"
when = { tool = "Bash", args = { command = "git push .*--force" } }
verdict = "block"
message = "Never force-push"

[[invariant]]
id = "prefer-grep-tool"
when = { tool = "Bash", args = { command = "^grep -r" } }
verdict = "suggest_alternative"
alternative = "use the Grep tool"
message = "grep -r is slow here"

[[invariant]]
id = "no-test-edit"
when = { tool = "Edit", path_glob = "tests/**" }
verdict = "require_approval"
message = "Editing tests needs approval"

[[invariant]]
id = "careful-with-migrations"
when = { path_glob = "**/migrations/*.py" }
verdict = "warn"
message = "Migrations are append-only"
'''


def hook(event: str, payload: Any, *, env: dict[str, str] | None = None,
         raw: str | None = None) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    """Run the real hook command; its stdout parsed ({} when silent)."""
    done = run_cli("hook", "claude-code", event, env=env,
                   stdin=raw if raw is not None else json.dumps(payload))
    assert done.returncode == 0, done.stderr  # a hook never blocks by exit code
    lines = done.stdout.splitlines()
    assert len(lines) <= 1, done.stdout  # one JSON line or nothing
    return (json.loads(lines[0]) if lines else {}), done


def decision(doc: dict[str, Any]) -> tuple[str | None, str]:
    out = doc.get("hookSpecificOutput", {})
    return out.get("permissionDecision"), out.get("permissionDecisionReason") or \
        out.get("additionalContext", "")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".osiris").mkdir(parents=True)
    (root / ".osiris" / "invariants.toml").write_text(RULES)
    return root


def test_the_recorded_payloads_are_the_traces() -> None:
    recorded = json.loads(payloads.RECORDED.read_text("utf-8"))
    assert recorded == payloads.recorded_sample()
    assert set(recorded) == {"Bash", "Read", "Edit", "Grep", "mcp"}


@pytest.mark.parametrize("tool", ["Bash", "Read", "Edit", "Grep", "mcp"])
def test_recorded_calls_are_prechecked_and_observed(tool: str, osiris_home: Path) -> None:
    sample = json.loads(payloads.RECORDED.read_text("utf-8"))[tool]
    before, _ = hook("pre-tool-use", sample["pre"])
    session = sample["pre"]["session_id"]
    (task,) = home_rows(osiris_home, "SELECT task_id FROM client_sessions WHERE session_id = ?",
                   [session])[0]
    # No decision (OSIRIS never grants a permission itself); on first sight of the
    # session the agent is told which task governs it.
    note = f"OSIRIS task {task} governs this session: use it as task_id with OSIRIS tools."
    again = hook("pre-tool-use", sample["pre"])[0]
    assert before == {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                             "additionalContext": note}}
    assert again == {}  # then silent while allowed
    after, _ = hook("post-tool-use", sample["post"])
    assert after == {}
    kinds = [k for (k,) in home_rows(osiris_home, "SELECT kind FROM events WHERE task_id = ?"
                                             " ORDER BY seq", [task])]
    assert kinds == ["task.start", "precheck", "precheck", "observe.result"]
    # Only what reaches the model is booked as OSIRIS's overhead: the note, once.
    booked = home_rows(osiris_home, "SELECT kind, tokens FROM ledger WHERE task_id = ? AND"
                               " kind LIKE 'answer.%'", [task])
    assert booked == [("answer.precheck", default_counter().count(note))]
    (tool_name,) = home_rows(osiris_home, "SELECT tool FROM calls WHERE task_id = ?", [task])[0]
    assert tool_name == sample["pre"]["tool_name"]
    # What the tool returned is stored whole, behind a ref the agent can recall.
    answer = json.loads(home_rows(osiris_home, "SELECT body FROM events WHERE task_id = ? AND"
                                          " kind = 'observe.result'", [task])[0][0])
    assert answer.get("tokens", 0) > 0


def test_on_the_hooks_surface_the_first_call_adds_no_note(osiris_home: Path) -> None:
    """``OSIRIS_SURFACE=hooks`` (what ``osiris install claude-code`` sets): the agent
    has only osiris_recall, which needs no task id, so it is not told one; the call is
    still prechecked and observed in the session's task."""
    sample = json.loads(payloads.RECORDED.read_text("utf-8"))["Bash"]
    env = {**os.environ, "OSIRIS_SURFACE": "hooks"}
    assert hook("pre-tool-use", sample["pre"], env=env)[0] == {}
    assert hook("post-tool-use", sample["post"], env=env)[0] == {}
    kinds = [k for (k,) in home_rows(osiris_home, "SELECT kind FROM events ORDER BY seq")]
    assert kinds == ["task.start", "precheck", "observe.result"]


def test_a_whole_session_through_the_hooks(osiris_home: Path) -> None:
    """issue-271: 41 calls, all in one task; the re-read of commands.ts after the
    compaction passes (the file left the prompt with the compaction, which OSIRIS cannot
    see, and Claude Code edits only a file it has read: denying it made the next edit
    fail in the real client), and so does every other call of the trace."""
    calls = list(payloads.trace_calls(payloads.TRACE_271))
    decisions: list[tuple[str, str | None, str]] = []
    posts: list[str] = []
    for call in calls:
        doc, _ = hook("pre-tool-use", payloads.pre_payload(call))
        verdict, reason = decision(doc)
        decisions.append((call.tool, verdict, reason))
        if verdict == "deny":
            continue  # Claude Code does not run a denied call: nothing to observe
        post, _ = hook("post-tool-use", payloads.post_payload(call))
        posts.append(json.dumps(post))
    ((task, count),) = home_rows(osiris_home, "SELECT task_id, count(*) OVER () FROM"
                                         " client_sessions")
    assert count == 1
    denied = [(i, t, r) for i, (t, v, r) in enumerate(decisions) if v == "deny"]
    assert denied == []
    reads = [json.dumps(c.tool_input, sort_keys=True) for c in calls if c.tool == "Read"]
    assert len(reads) > len(set(reads))  # the trace does re-read a file
    # Claude Code keeps its own history: no answer asks the agent to drop anything.
    assert not any("prune" in p or "dropped" in p for p in posts)
    observed = home_rows(osiris_home, "SELECT count(*) FROM calls WHERE task_id = ?", [task])[0][0]
    assert observed == len(calls) - len(denied)
    prechecks = home_rows(osiris_home, "SELECT count(*) FROM events WHERE task_id = ? AND"
                                  " kind = 'precheck'", [task])[0][0]
    assert prechecks == len(calls)
    actors = {a for (a,) in home_rows(osiris_home, "SELECT DISTINCT actor FROM events WHERE"
                                             " task_id = ?", [task])}
    assert actors == {f"claude-code:{calls[0].session_id}"}
    audit = run_cli("audit", "--task", task)
    assert audit.returncode == 0, audit.stdout


def test_each_verdict_maps_to_a_claude_code_decision(project: Path) -> None:
    env = {"OSIRIS_ROOTS": str(project)}

    def pre(tool: str, tool_input: dict[str, Any]) -> tuple[str | None, str]:
        doc, _ = hook("pre-tool-use", {"session_id": "verdicts", "cwd": str(project),
                                       "hook_event_name": "PreToolUse", "tool_name": tool,
                                       "tool_input": tool_input}, env=env)
        return decision(doc)

    verdict, text = pre("Bash", {"command": "ls"})  # allow: no decision (first sight: a note)
    assert verdict is None and text.startswith("OSIRIS task t_")
    assert pre("Bash", {"command": "ls"}) == (None, "")
    verdict, text = pre("Read", {"file_path": str(project / "app/migrations/0002.py")})
    assert verdict is None and text.startswith("OSIRIS warn:") and "append-only" in text
    verdict, text = pre("Bash", {"command": "grep -r TODO ."})
    assert verdict == "deny" and "Instead: use the Grep tool" in text
    verdict, text = pre("Edit", {"file_path": str(project / "tests/test_app.py"),
                                 "old_string": "a", "new_string": "b"})
    assert verdict == "ask" and "Editing tests needs approval" in text
    verdict, text = pre("Bash", {"command": "git push origin main --force"})
    assert verdict == "deny" and "Never force-push" in text


def test_a_repeated_read_gets_a_pointer_and_a_repeated_search_is_answered_from_the_store(
        project: Path) -> None:
    (project / "notes.txt").write_text("alpha\n" * 50, encoding="utf-8")
    env = {"OSIRIS_ROOTS": str(project)}
    session = {"session_id": "rereads", "cwd": str(project)}

    def call(tool: str, tool_input: dict[str, Any], output: str) -> tuple[str | None, str]:
        pre = {**session, "hook_event_name": "PreToolUse", "tool_name": tool,
               "tool_input": tool_input}
        doc, _ = hook("pre-tool-use", pre, env=env)
        verdict = decision(doc)
        if verdict[0] != "deny":
            hook("post-tool-use", {**pre, "hook_event_name": "PostToolUse",
                                   "tool_response": {"content": output}}, env=env)
        return verdict

    read = {"file_path": str(project / "notes.txt")}
    search = {"pattern": "alpha", "path": str(project)}
    call("Read", read, "alpha\n" * 50)
    call("Grep", search, "notes.txt:1:alpha")
    # The file is unchanged and still in the prompt (no compaction): a pointer to it.
    verdict, reason = call("Read", read, "alpha\n" * 50)
    assert verdict == "deny" and "unchanged since you read it" in reason
    verdict, reason = call("Grep", search, "notes.txt:1:alpha")
    assert verdict == "deny" and "exact_duplicate" in reason and "osiris_recall" in reason
    # With re-reads switched off, LoopGuard's duplicate of a Read still passes (Claude
    # Code edits only a file it has read; tests/clients/test_routing_hooks.py has the
    # compaction case).
    (project / ".osiris" / "invariants.toml").write_text(RULES + "\n[routing]\nrereads = false\n")
    assert call("Read", read, "alpha\n" * 50) == (None, "")


def test_repeated_failures_are_blocked_with_the_required_action() -> None:
    failing = {"session_id": "loop", "cwd": "/w", "tool_name": "Bash",
               "tool_input": {"command": "pytest -q tests/test_x.py"}}
    notes = []
    for _ in range(3):
        doc, _ = hook("pre-tool-use", {**failing, "hook_event_name": "PreToolUse"})
        assert decision(doc)[0] is None
        after, _ = hook("post-tool-use", {**failing, "hook_event_name": "PostToolUseFailure",
                                          "error": "FAILED tests/test_x.py::test_a - "
                                                   "AssertionError: 1 != 2"})
        notes.append(after.get("hookSpecificOutput", {}).get("additionalContext", ""))
    assert "LoopGuard block (repeated_failure)" in notes[-1]
    doc, _ = hook("pre-tool-use", {**failing, "hook_event_name": "PreToolUse"})
    verdict, reason = decision(doc)
    assert verdict == "deny" and "Required first: stop retrying" in reason


def test_a_loop_pattern_is_told_once_after_the_failure_and_blocked_later(
        osiris_home: Path) -> None:
    """The same error from different arguments: after the third failure the agent is
    warned (PostToolUseFailure); the next call's PreToolUse does not say the same
    sentence again (it would stay in the client's history, re-sent on every request),
    though the precheck still journals its warning; at the sixth the call is denied."""
    session = {"session_id": "pattern", "cwd": "/w", "tool_name": "Bash"}
    notes, befores = [], []
    for n in range(6):
        call = {**session, "tool_input": {"command": f"ls -la /w/missing-{n}/"}}
        doc, _ = hook("pre-tool-use", {**call, "hook_event_name": "PreToolUse"})
        befores.append(decision(doc))
        after, _ = hook("post-tool-use", {
            **call, "hook_event_name": "PostToolUseFailure",
            "error": f"Exit code 2\nls: cannot access '/w/missing-{n}/': No such file or "
                     "directory"})
        notes.append(after.get("hookSpecificOutput", {}).get("additionalContext", ""))
    assert "LoopGuard warn (loop_pattern): 3 different" in notes[2]
    assert not any(notes[:2])
    # Said once, after the failure; not again before the fourth and fifth calls.
    assert befores[1:] == [(None, "")] * 5
    verdicts = [json.loads(b)["verdict"] for (b,) in home_rows(
        osiris_home, "SELECT body FROM events WHERE kind = 'precheck' ORDER BY seq")]
    assert verdicts[3:] == ["warn", "warn", "warn"]
    doc, _ = hook("pre-tool-use", {**session, "hook_event_name": "PreToolUse",
                                   "tool_input": {"command": "ls -la /w/missing-6/"}})
    verdict, reason = decision(doc)
    assert verdict == "deny" and "loop_pattern" in reason


def test_a_stale_streak_is_told_after_each_call_not_again_before_the_next(
        osiris_home: Path) -> None:
    """Calls that bring nothing new (the same output again): from LoopGuard's runaway
    count each observed call is followed by its warning, and the next call's PreToolUse
    adds nothing (it would repeat that sentence); the precheck still journals it."""
    session = {"session_id": "stale", "cwd": "/w", "tool_name": "Bash"}
    notes, befores = [], []
    for n in range(14):
        call = {**session, "tool_input": {"command": f"cat status-{n}.txt"}}
        doc, _ = hook("pre-tool-use", {**call, "hook_event_name": "PreToolUse"})
        befores.append(decision(doc))
        after, _ = hook("post-tool-use", {
            **call, "hook_event_name": "PostToolUse",
            "tool_response": {"stdout": "waiting", "stderr": "", "interrupted": False}})
        notes.append(after.get("hookSpecificOutput", {}).get("additionalContext", ""))
    warned = [i for i, note in enumerate(notes) if "LoopGuard warn (runaway)" in note]
    assert warned and warned == list(range(warned[0], 14)), notes
    assert befores[1:] == [(None, "")] * 13
    verdicts = [json.loads(b)["verdict"] for (b,) in home_rows(
        osiris_home, "SELECT body FROM events WHERE kind = 'precheck' ORDER BY seq")]
    assert verdicts.count("warn") == 14 - warned[0] - 1


def test_osiris_own_tools_are_left_alone(osiris_home: Path) -> None:
    own = {"session_id": "own", "cwd": "/w", "hook_event_name": "PreToolUse",
           "tool_name": "mcp__osiris__osiris_recall", "tool_input": {"ref": "x"}}
    assert hook("pre-tool-use", own)[0] == {}
    assert hook("post-tool-use", {**own, "hook_event_name": "PostToolUse",
                                  "tool_response": [{"type": "text", "text": "x"}]})[0] == {}
    assert home_rows(osiris_home, "SELECT count(*) FROM events")[0][0] == 0


@pytest.mark.parametrize(("raw", "problem"), [
    ("", "not JSON"),
    ("{not json", "not JSON"),
    ("[1, 2]", "must be a JSON object"),
    ('{"tool_name": "Bash", "tool_input": {}}', "session_id is missing"),
    ('{"session_id": "s", "tool_input": {}}', "tool_name is missing"),
    ('{"session_id": "s", "tool_name": "Bash", "tool_input": "ls"}', "tool_input must be"),
    ('{"session_id": "s", "tool_name": "Bash", "hook_event_name": "Stop"}', "not a pre-tool"),
    ('{"session_id": "../../etc", "tool_name": "Bash", "tool_input": {}}', "not a session id"),
])
def test_malformed_input_is_logged_and_allowed(raw: str, problem: str,
                                               osiris_home: Path) -> None:
    doc, done = hook("pre-tool-use", None, raw=raw)
    assert set(doc) == {"systemMessage"} and problem in doc["systemMessage"]
    assert "not checked" in doc["systemMessage"] and "hook pre-tool-use skipped" in done.stderr
    logged = [json.loads(line) for line in
              (osiris_home / "hooks.log").read_text("utf-8").splitlines()]
    assert logged[-1]["event"] == "pre-tool-use" and problem in logged[-1]["problem"]
    assert "input_head" not in logged[-1]  # the input itself may hold secrets


@pytest.mark.parametrize("client", ["claude-code", "codex"])
def test_a_skipped_call_is_logged_under_the_client_that_made_it(client: str,
                                                                osiris_home: Path) -> None:
    # Malformed input reaches the store owner, which logs the call under its client; a
    # broken setting stops the hook before any home is known (stderr says so, no log).
    for env in ({}, {"OSIRIS_STORE_OWNER": "sometimes"}):
        done = run_cli("hook", client, "pre-tool-use", stdin="{not json", env=env)
        assert done.returncode == 0 and "skipped" in done.stderr, done.stderr
    logged = [json.loads(line) for line in
              (osiris_home / "hooks.log").read_text("utf-8").splitlines()]
    assert [entry["client"] for entry in logged] == [client], logged


def test_wrong_arguments_or_a_broken_home_never_block(tmp_path: Path) -> None:
    payload = {"session_id": "s", "tool_name": "Bash", "tool_input": {"command": "ls"}}
    for args in (["hook", "cursor", "pre-tool-use"], ["hook", "claude-code", "before"]):
        done = run_cli(*args, stdin=json.dumps(payload))
        assert done.returncode == 0 and "systemMessage" in json.loads(done.stdout)
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    done = run_cli("hook", "claude-code", "pre-tool-use", stdin=json.dumps(payload),
                   env={"OSIRIS_HOME": str(not_a_dir)})
    assert done.returncode == 0
    assert "configuration error" in json.loads(done.stdout)["systemMessage"]


def test_a_new_session_seen_by_concurrent_hooks_gets_one_task(osiris_home: Path) -> None:
    payload = {"session_id": "parallel", "cwd": "/w", "hook_event_name": "PreToolUse",
               "tool_name": "Read", "tool_input": {"file_path": "/w/a.py"}}

    def one(i: int) -> int:
        body = {**payload, "tool_input": {"file_path": f"/w/f{i}.py"}}
        return subprocess.run(launch_argv(sys.executable, "hook", "claude-code",
                                          "pre-tool-use"), input=json.dumps(body), text=True,
                              capture_output=True, env=osiris_env(), cwd=REPO,
                              timeout=120, check=False).returncode

    with ThreadPoolExecutor(max_workers=4) as pool:
        assert list(pool.map(one, range(6))) == [0] * 6
    assert home_rows(osiris_home, "SELECT count(*) FROM client_sessions") == [(1,)]
    assert home_rows(osiris_home, "SELECT count(*) FROM tasks") == [(1,)]
    assert home_rows(osiris_home, "SELECT count(*) FROM events WHERE kind = 'precheck'") == [(6,)]


def test_mcp_tool_hook_path_answers_the_same_decision(project: Path) -> None:
    """`osiris_precheck(format="claude-code")` from a real stdio client, as an
    ``mcp_tool`` hook calls it (args as the JSON text Claude Code substitutes)."""
    env = osiris_env(OSIRIS_ROOTS=str(project))
    push = {"command": "git push origin main --force"}

    async def flow() -> list[Any]:
        async with client_for("stdio", "auto", env=env) as client:
            out = []
            for args in (json.dumps(push), {"command": "ls"}, "{broken"):
                result = await client.call_tool("osiris_precheck", {
                    "task_id": "session:mcp-hook", "tool": "Bash", "args": args,
                    "format": "claude-code"})
                assert not result.is_error
                out.append(json.loads(result.content[0].text))
            return out

    denied, allowed, broken = run(flow())
    assert decision(denied)[0] == "deny" and "Never force-push" in decision(denied)[1]
    assert allowed == {}
    assert "not checked" in broken["systemMessage"]
    # The command hook and the in-server path share the session's task.
    doc, _ = hook("pre-tool-use", {"session_id": "mcp-hook", "tool_name": "Bash",
                                   "tool_input": push, "hook_event_name": "PreToolUse"},
                  env={"OSIRIS_ROOTS": str(project)})
    assert decision(doc) == decision(denied)
    home = Path(env["OSIRIS_HOME"])
    assert home_rows(home, "SELECT count(*) FROM client_sessions") == [(1,)]


def test_health_reports_calls_that_went_through_unchecked() -> None:
    hook("post-tool-use", None, raw='{"session_id": 7}')
    health = json.loads(run_cli("health").stdout)
    assert health["client_hooks"]["skipped"] == 1
    assert "session_id is missing" in health["client_hooks"]["last"]["problem"]
    assert any("went through unchecked" in w for w in health["warnings"])


def test_the_installed_hook_commands_run(tmp_path: Path, project: Path) -> None:
    """`osiris install claude-code --project`, then the exact commands it wrote, run by a
    shell as Claude Code runs them."""
    home = tmp_path / "installed-home"
    done = run_cli("install", "claude-code", "--project-dir", str(project), "--home",
                   str(home), "--hooks", "command", env={"HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    hooks = json.loads((project / ".claude" / "settings.json").read_text("utf-8"))["hooks"]
    push = {"session_id": "installed", "cwd": str(project), "tool_name": "Bash",
            "tool_input": {"command": "git push -f origin main --force"}}

    def run_installed(event: str, payload: dict[str, Any]) -> dict[str, Any]:
        (group,) = hooks[event]
        command = group["hooks"][0]["command"]
        out = subprocess.run(["sh", "-c", command], input=json.dumps(payload), text=True,
                             capture_output=True, timeout=120, check=False, cwd=project,
                             env={"PATH": "/usr/bin:/bin"})
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout) if out.stdout.strip() else {}

    denied = run_installed("PreToolUse", {**push, "hook_event_name": "PreToolUse"})
    assert decision(denied)[0] == "deny" and "Never force-push" in decision(denied)[1]
    assert run_installed("PostToolUseFailure", {**push, "hook_event_name":
                                                "PostToolUseFailure", "error": "rejected"}
                         ) == {}
    (task,) = home_rows(home, "SELECT task_id FROM client_sessions")[0]
    assert home_rows(home, "SELECT kind FROM events WHERE task_id = ? ORDER BY seq", [task]) == [
        ("task.start",), ("precheck",), ("observe.error",)]


def _interpolated(value: Any, hook_input: dict[str, Any]) -> Any:
    """An mcp_tool hook's input as Claude Code 2.1.328 fills it: a string as it is, an
    object or array as its JSON.stringify text, a missing field as the empty string."""
    if isinstance(value, dict):
        return {k: _interpolated(v, hook_input) for k, v in value.items()}
    if isinstance(value, str) and value.startswith("${") and value.endswith("}"):
        field = hook_input.get(value[2:-1], "")
        return field if isinstance(field, str) else json.dumps(
            field, ensure_ascii=False, separators=(",", ":"))
    return value


def test_the_installed_mcp_tool_hooks_answer_through_the_running_server(
        tmp_path: Path, project: Path) -> None:
    """`osiris install claude-code` (default hooks), then each mcp_tool hook it wrote, as
    Claude Code calls it: a tools/call to the installed server, over real stdio."""
    home = tmp_path / "installed-home"
    done = run_cli("install", "claude-code", "--project-dir", str(project), "--home",
                   str(home), env={"HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    hooks = json.loads((project / ".claude" / "settings.json").read_text("utf-8"))["hooks"]
    server = json.loads((project / ".mcp.json").read_text("utf-8"))["mcpServers"]["osiris"]
    assert server["env"]["OSIRIS_HOOK_TOOL"] == "on"
    handlers = {event: group["hooks"][0] for event, (group,) in hooks.items()}
    assert {e: h["type"] for e, h in handlers.items()} == {
        "PreToolUse": "mcp_tool", "PostToolUse": "mcp_tool", "PostToolUseFailure": "mcp_tool",
        "SessionStart": "command"}  # SessionStart runs before any MCP server is connected
    push = {"session_id": "mcp-installed", "cwd": str(project), "tool_name": "Bash",
            "tool_input": {"command": "git push -f origin main --force"},
            "tool_use_id": "toolu_1"}
    as_json = '{"rows": [1, 2], "ok": true}'  # a string result that looks like JSON
    calls = [("PreToolUse", {**push, "hook_event_name": "PreToolUse"}),
             ("PostToolUseFailure", {**push, "hook_event_name": "PostToolUseFailure",
                                     "error": "rejected"}),
             ("PostToolUse", {**push, "hook_event_name": "PostToolUse",
                              "tool_name": "mcp__other__rows", "tool_input": {},
                              "tool_response": as_json}),
             ("PostToolUse", {**push, "hook_event_name": "PostToolUse",
                              "tool_input": {"command": "seq 3"}, "tool_use_id": "toolu_2",
                              "tool_response": {"stdout": "1\n2\n3", "stderr": "ünï",
                                                "interrupted": False}}),
             ("PreToolUse", {"hook_event_name": "PreToolUse", "tool_name": "Bash"})]
    env = {**osiris_env(), **server["env"]}

    async def flow() -> tuple[list[str], list[str]]:
        async with client_for("stdio", "auto", env=env) as client:
            listed = [t.name for t in (await client.list_tools()).tools]
            texts = []
            for event, hook_input in calls:
                handler = handlers[event]
                result = await client.call_tool(handler["tool"],
                                                _interpolated(handler["input"], hook_input))
                assert not result.is_error, result
                texts.append(result.content[0].text)
            return listed, texts

    listed, (denied, failure, observed, shell, broken) = run(flow())
    assert "osiris_hook" in listed
    assert decision(json.loads(denied))[0] == "deny"
    assert "Never force-push" in decision(json.loads(denied))[1]
    assert failure == observed == shell == ""  # nothing to tell the agent
    # Input a hook cannot use: a warning for the user, never an error that stops the tool.
    assert "session_id is missing" in json.loads(broken)["systemMessage"]
    (task,) = home_rows(home, "SELECT task_id FROM client_sessions")[0]
    assert home_rows(home, "SELECT kind FROM events WHERE task_id = ? ORDER BY seq", [task]) == [
        ("task.start",), ("precheck",), ("observe.error",), ("observe.result",),
        ("observe.result",)]
    # Both results were stored as the command hook stores them: the string as the text
    # it was (not parsed), the Bash response (JSON text in the mcp_tool input) as the
    # object it was.
    for _, hook_input in calls[2:4]:
        hook("post-tool-use", {**hook_input, "session_id": "by-command"},
             env={"OSIRIS_HOME": str(home)})
    refs = {task_id: {ref for (ref,) in home_rows(
        home, "SELECT ref FROM task_refs WHERE task_id = ?", [task_id])}
        for (task_id,) in home_rows(home, "SELECT task_id FROM client_sessions")}
    (by_command,) = (r for t, r in refs.items() if t != task)
    assert by_command <= refs[task]


@pytest.mark.slow
@pytest.mark.parametrize(("owner", "problem", "bound"), [
    ("on", "owner_timeout", "did not start within 3s"), ("off", "store_busy", "5s")])
def test_a_busy_store_is_a_logged_skip_before_the_hook_times_out(
        osiris_home: Path, owner: str, problem: str, bound: str) -> None:
    """The installed hook has 10 s. With the store owner, the hook waits for it at most
    OSIRIS_HOOK_TIMEOUT_S (3 s), starting it included (here the new owner waits for the
    store's lock); without one, the hook waits at most 5 s for the lock itself. Either way
    a busy store ends in a skip the user sees, not in Claude Code killing the hook."""
    import fcntl
    import os

    from osiris.config import Settings
    from osiris.store.state import Store

    store = Store(Settings(home=osiris_home))
    store.db.migrate()
    fd = os.open(store.db.lock_path, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)  # another process's long write
    try:
        doc, _ = hook("pre-tool-use", {"session_id": "busy", "tool_name": "Bash",
                                       "tool_input": {"command": "ls"},
                                       "hook_event_name": "PreToolUse"},
                      env={"OSIRIS_LOCK_TIMEOUT_S": "30", "OSIRIS_STORE_OWNER": owner})
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
        store.close()
    assert problem in doc["systemMessage"] and bound in doc["systemMessage"]
    assert problem in (osiris_home / "hooks.log").read_text("utf-8")


def test_a_post_commit_failure_is_logged_as_recorded_not_as_unchecked(
        osiris_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A call that commits on DuckDB moves the witness on its own path; with write-behind
    # the witness moves at the owner's flush (tests/store/test_write_behind.py covers a
    # failure there).
    monkeypatch.setenv("OSIRIS_WRITE_BEHIND", "off")
    post = {"session_id": "s-witness", "cwd": "/work", "hook_event_name": "PostToolUse",
            "tool_name": "Bash", "tool_use_id": "toolu_w1",
            "tool_input": {"command": "ls"},
            "tool_response": {"stdout": "a\nb\n", "stderr": "", "exit_code": 0}}
    hook("post-tool-use", post)
    witness = osiris_home / "journal.witness"
    witness.unlink()
    witness.mkdir()  # the witness cannot be replaced: the commit succeeds, the write fails
    doc, done = hook("post-tool-use", {**post, "tool_use_id": "toolu_w2",
                                       "tool_input": {"command": "pwd"}})
    witness.rmdir()
    assert "committed_with_errors" in done.stderr and "recorded, but" in done.stderr
    assert "systemMessage" in doc  # the user sees it; the tool result is untouched
    logged = [json.loads(x) for x in (osiris_home / "hooks.log").read_text().splitlines()]
    assert [entry["recorded"] for entry in logged] == [True]
    observed = home_rows(osiris_home, "SELECT count(*) FROM events WHERE kind = "
                         "'observe.result'")
    assert observed == [(2,)]  # both calls are in the journal
    health = json.loads(run_cli("health").stdout)
    hooks = health["client_hooks"]
    assert hooks["skipped"] == 0 and hooks["recorded_with_problems"] == 1


def test_the_light_entry_points_name_what_the_core_names() -> None:
    # hook_entry and runner keep copies so that a hook's start imports no core module.
    from osiris.clients import adapters, hook_entry, hook_input, runner

    assert hook_entry.CLIENTS == adapters.CLIENTS
    assert hook_entry.EVENTS == hook_input.EVENTS
    assert routing.RoutingConfig().shell_preview_tokens == runner.DEFAULT_THRESHOLD


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["full", "read-only"])
@pytest.mark.parametrize("client", ["claude-code", "codex"])
def test_a_full_or_read_only_home_leaves_every_call_as_it_was(tmp_path: Path, kind: str,
                                                              client: str) -> None:
    """The hooks as installed (through the store owner) on a home that cannot be
    written: exit 0, no decision, no replaced output, no traceback: the client goes on
    exactly as without OSIRIS (issue 36, item 5)."""
    root = tmp_path / "fs"
    big = "\n".join(str(i) for i in range(1, 9001))
    calls = {"pre-tool-use": {"hook_event_name": "PreToolUse",
                              "tool_input": {"command": "df -h"}},
             "post-tool-use": {"hook_event_name": "PostToolUse",
                               "tool_input": {"command": "du -a /"},
                               "tool_response": {"stdout": big, "stderr": "",
                                                 "interrupted": False, "isImage": False}
                               if client == "claude-code" else big}}
    for event, payload in calls.items():
        doc = {"session_id": "s-full", "cwd": str(tmp_path), "tool_name": "Bash",
               "tool_use_id": "t1", **payload}
        done = in_small_fs(kind, root, [*launch_argv(sys.executable, "hook", client, event)],
                           stdin=json.dumps(doc),
                           env={"OSIRIS_HOME": str(root / "home"),
                                "OSIRIS_STORE_OWNER": "on"})
        assert done.returncode == 0, done.stderr
        assert b"Traceback" not in done.stderr, done.stderr.decode()
        out = json.loads(done.stdout) if done.stdout.strip() else {}
        assert set(out) <= {"systemMessage"}, out  # a note for the user, nothing else
