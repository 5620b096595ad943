"""Measuring a client's head from its requests, and the committed measurements."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from osiris.core.tokens import default_counter
from osiris.harness.real_clients import capture as client_heads
from osiris.harness.real_clients.behaviour import bisect
from osiris.harness.real_clients.configs import CONFIGURATIONS, OSIRIS, install
from osiris.harness.real_clients.heads import (
    FIXED_DATE,
    Neutraliser,
    added_texts,
    delta,
    measure_head,
)
from osiris.harness.real_clients.model_script import ANTHROPIC, OPENAI, ModelRequest
from osiris.harness.real_clients.run import (
    CLAUDE_CODE,
    CLIENTS,
    CODEX,
    VERSIONS,
    Tools,
    Workspace,
    point_codex_at,
)
from tests.conftest import REPO
from tests.server.transports import run

COUNTER = default_counter()
ENVIRONMENT = ("# Environment\n - Primary working directory: /tmp/run/project\n"
               "Today's date is 2026-12-01.\n\n"
               "The following deferred tools are now available via ToolSearch:\n"
               "WebFetch\nmcp__osiris__osiris_plan\n\nAnd more.")
BASH = {"name": "Bash", "description": "Runs a command.", "input_schema": {"type": "object"}}


def _claude_body(environment: str = ENVIRONMENT, tools: list[Any] | None = None
                 ) -> dict[str, Any]:
    return {"model": "claude-x", "tools": [BASH] if tools is None else tools,
            "system": [{"type": "text", "text": "billing line"},
                       {"type": "text", "text": "You are a test agent."}],
            "messages": [
                {"role": "user", "content": [
                    {"type": "text", "text": "<system-reminder>\nremember\n</system-reminder>"},
                    {"type": "text", "text": "hi"}]},
                {"role": "system", "content": [{"type": "text", "text": environment}]}]}


def test_a_head_is_system_tools_and_added_parts_without_the_prompt() -> None:
    neutralise = Neutraliser({"/tmp/run": "/scratch"})
    head = measure_head(ModelRequest(0, ANTHROPIC, "/v1/messages", _claude_body()), "hi",
                        COUNTER, neutralise)
    assert head.system.tokens == (COUNTER.count("billing line")
                                  + COUNTER.count("You are a test agent."))
    assert head.tools.tokens == COUNTER.count(json.dumps([BASH], separators=(",", ":")))
    assert [(p.role, p.label) for p in head.parts] == [("user", "<system-reminder>"),
                                                        ("system", "# Environment")]
    expected = ENVIRONMENT.replace("/tmp/run", "/scratch").replace("2026-12-01", FIXED_DATE)
    assert head.parts[1].size.tokens == COUNTER.count(expected)
    assert head.total == head.system + head.tools + head.messages
    assert head.tool_names == ["Bash"]
    assert head.deferred_tool_names == ["WebFetch", "mcp__osiris__osiris_plan"]
    assert head.mcp_tools_deferred
    assert dict(neutralise.replaced) == {"path /scratch": 1, "date": 1}
    written = head.as_json()
    assert written["total"]["tokens"] == head.total.tokens
    assert "You are" not in json.dumps(written)  # sizes and labels only, no text


def test_a_name_mktemp_made_under_the_sessions_tmpdir_is_counted_as_one_fixed_name() -> None:
    neutralise = Neutraliser({"/tmp/run/codex": "/scratch"})
    one = neutralise("/tmp/run/codex/tmp/agentv-sdk-workers.yeu4Xk/boundary.md\n"
                     "/tmp/run/codex/tmp/tmp.AbC1dEfGh2 made")
    other = neutralise("/tmp/run/codex/tmp/agentv-sdk-workers.s9emJ2/boundary.md\n"
                       "/tmp/run/codex/tmp/tmp.x8YqPw3LmZ made")
    assert one == other == ("/scratch/tmp/agentv-sdk-workers.XXXXXX/boundary.md\n"
                            "/scratch/tmp/tmp.XXXXXX made")
    # A file's own extension is not a random name, nor is a path outside the scratch.
    kept = "/scratch/tmp/notes.markdown /scratch/tmp/a.tar.gz /home/u/tmp/cache.Ab12Cd"
    assert neutralise(kept) == kept
    assert neutralise.replaced["mktemp name"] == 4


def test_the_id_claude_code_gives_a_background_command_is_counted_as_one_fixed_id() -> None:
    texts = [f"Command running in background with ID: {i}. Output is being written to: "
             f"/scratch/tasks/{i}.output\n<task-id>{i}</task-id>" for i in ("bmd248rpq",
                                                                            "bz0y2qobz")]
    assert Neutraliser()(texts[0]) == Neutraliser()(texts[1])
    assert "bmd248rpq" not in Neutraliser()(texts[0])


def test_codex_tools_in_additional_tools_and_deferred_namespaces() -> None:
    body = {"model": "gpt-x", "input": [
        {"type": "additional_tools", "role": "developer", "tools": [
            {"type": "namespace", "name": "functions", "description": "",
             "tools": [{"type": "custom", "name": "exec", "description": "Run JS"}]}]},
        {"type": "message", "role": "developer", "content": [
            {"type": "input_text", "text": "<tools>\nDeferred tool namespaces:\n"
                                           "- mcp__osiris: task state.\n</tools>"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}]}
    head = measure_head(ModelRequest(0, OPENAI, "/v1/responses", body), "hi", COUNTER,
                        Neutraliser())
    assert head.tool_names == ["functions.exec"]
    assert head.tools.tokens > 0
    assert head.system.tokens == 0
    assert [p.label for p in head.parts] == ["<tools>"]
    assert head.deferred_tool_names == ["mcp__osiris"]
    assert head.mcp_tools_deferred


def test_delta_counts_what_a_configuration_adds() -> None:
    bare = measure_head(ModelRequest(0, ANTHROPIC, "/v1/messages", _claude_body()), "hi",
                        COUNTER, Neutraliser())
    extra_tool = {**BASH, "name": "mcp__osiris__osiris_recall"}
    added_line = "## osiris\nKeep big outputs outside your context."
    more = measure_head(ModelRequest(0, ANTHROPIC, "/v1/messages",
                                     _claude_body(f"{ENVIRONMENT}\n{added_line}",
                                                  [BASH, extra_tool])),
                        "hi", COUNTER, Neutraliser())
    change = delta(more, bare, COUNTER)
    assert change["total"]["tokens"] == more.total.tokens - bare.total.tokens
    assert change["tools_added"] == ["mcp__osiris__osiris_recall"]
    assert change["tools_removed"] == []
    assert change["text_lines_added"]["count"] == 2
    assert change["text_lines_removed"]["count"] == 0
    assert not more.mcp_tools_deferred  # its definition was sent


def test_added_texts_tell_the_result_from_what_a_hook_added() -> None:
    before = _claude_body()
    turn = [{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read",
                                               "input": {"file_path": "/x"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                          "content": [{"type": "text", "text": "1\talpha"}]}]},
            {"role": "system", "content": [{"type": "text", "text": "hook: read carefully"}]}]
    after = {**before, "messages": [*before["messages"], *turn]}
    found = added_texts(ModelRequest(0, ANTHROPIC, "/v1/messages", before),
                        ModelRequest(1, ANTHROPIC, "/v1/messages", after))
    assert [(a.role, a.text, a.tool_result) for a in found] == [
        ("user", "1\talpha", True), ("system", "hook: read carefully", False)]


def test_bisect_brackets_a_threshold_within_the_resolution() -> None:
    probes: list[int] = []

    def over(n: int) -> bool:
        probes.append(n)
        return n >= 30_042

    low, high = bisect(over, 1_000, 500_000, 500)
    assert low < 30_042 <= high
    assert high - low <= 500
    assert len(probes) <= 12


def test_codex_endpoint_is_set_beside_an_osiris_install(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path / "w").reset(CODEX)
    install(OSIRIS, CODEX, workspace, Tools.of_repo(REPO))
    point_codex_at(workspace, "http://127.0.0.1:4321")
    config = tomllib.loads((workspace.codex_home / "config.toml").read_text())
    assert config["mcp_servers"]["osiris"]["args"] == ["-m", "osiris"]
    assert config["mcp_servers"]["osiris"]["env"]["OSIRIS_HOME"] == str(workspace.osiris_home)
    assert config["model_provider"] == "scripted"
    assert config["model_providers"]["scripted"]["base_url"] == "http://127.0.0.1:4321/v1"
    assert config["features"]["plugins"] is False
    assert config["analytics"]["enabled"] is False


def _longest_string(value: Any) -> int:
    """Length of the longest string anywhere inside ``value``."""
    longest, pending = 0, [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            longest = max(longest, len(item))
        elif isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return longest


def test_the_committed_measurements_are_complete_and_hold_no_vendor_text() -> None:
    data = client_heads.load()
    assert data["schema_version"] == client_heads.SCHEMA_VERSION
    assert data["encoding"] == "cl100k_base"
    assert set(data["clients"]) == set(CLIENTS)
    for client, entry in data["clients"].items():
        assert entry["version"] == VERSIONS[client]
        assert entry["heads"]["repeat_identical"]
        for heads in entry["heads"]["by_model"].values():
            assert set(heads) == set(CONFIGURATIONS)
            for configuration, head in heads.items():
                assert head["total"]["tokens"] == (head["system"]["tokens"]
                                                   + head["tools"]["tokens"]
                                                   + head["messages"]["tokens"])
                assert ("delta_over_bare" in head) == (configuration != "bare")
        summary = data["summary"][client]
        assert all(t > 0 for model in summary["head_tokens"].values() for t in model.values())
    cc, cx = data["summary"]["claude-code"], data["summary"]["codex"]
    assert cc["read"]["token_cap"] == 25_000
    assert cc["bash_persist"]["persisted_from_chars"] - cc["bash_persist"][
        "kept_chars_up_to"] <= 1_000
    assert cx["shell_cut"]["exec_command"]["head_bytes"] > 0
    # Counts, names, labels and short shapes only: the request bodies stay out (the
    # `how` notes are ours).
    assert _longest_string({k: v for k, v in data.items() if k != "how"}) < 400
    text = client_heads.DATA_FILE.read_text()
    assert "You are" not in text and "/tmp/" not in text


def test_the_report_says_what_osiris_adds_on_codexs_default_model() -> None:
    """The replays play Codex with the traces' gpt-5-codex, which gets OSIRIS's MCP tool
    definitions in full; Codex's default model lists them by name behind its tool search,
    so a user on it pays less: the client profile says both, from the measurements."""
    from osiris.harness.reports.report import _profile_lines

    heads = client_heads.load()["clients"]["codex"]["heads"]["by_model"]
    default = heads["default"]["osiris"]
    assert default["mcp_tools_deferred"]
    assert not heads[client_heads.load()["clients"]["codex"]["trace_model"]]["osiris"][
        "mcp_tools_deferred"]
    codex, claude = _profile_lines([{"client": CODEX}, {"client": "claude-code"}])[::-1]
    added = default["delta_over_bare"]["total"]["tokens"]
    assert (f"({added:,} on the client's default model, {default['model']}, which defers "
            "MCP tool definitions") in codex
    # Claude Code defers them with both models: nothing to add.
    assert "default model" not in claude


@pytest.mark.parametrize("client", [CLAUDE_CODE, CODEX])
def test_the_committed_heads_list_the_tools_an_install_serves_today(
        tmp_path: Path, client: str) -> None:
    """The replays charge OSIRIS the head measured in client_heads.json, so it must be
    measured on the surface ``osiris install`` sets up now: the tools the installed
    server lists over stdio are the OSIRIS tools the capture saw in the client's request
    (a capture older than the install's surface charged Claude Code 299 tokens a prompt
    where the install adds 20)."""
    workspace = Workspace(tmp_path / "w").reset(client)
    install(OSIRIS, client, workspace, Tools.of_repo(REPO))
    if client == CODEX:
        server = tomllib.loads((workspace.codex_home / "config.toml").read_text())[
            "mcp_servers"]["osiris"]
    else:
        server = json.loads((workspace.home / ".claude.json").read_text())[
            "mcpServers"]["osiris"]

    async def served() -> set[str]:
        params = StdioServerParameters(command=server["command"], args=server["args"],
                                       env={**os.environ, **server["env"]},
                                       cwd=str(workspace.project))
        async with Client(params) as mcp:
            return {t.name for t in (await mcp.list_tools()).tools}

    listed = run(served())
    captured = []
    for heads in client_heads.load()["clients"][client]["heads"]["by_model"].values():
        head = heads[OSIRIS]
        names = {n.removeprefix("mcp__osiris__").removeprefix("mcp__osiris.")
                 for n in head["deferred_tool_names"] + head["mcp_tools_defined"]
                 if n.startswith(("mcp__osiris__", "mcp__osiris."))}
        if names:  # Codex's default model lists the namespace only
            captured.append(names)
    assert captured and all(names == listed for names in captured), (captured, listed)
