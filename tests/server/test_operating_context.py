"""The operating context of seed 004 §9: dormant, soft layer, hard layer, reloads, health."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from mcp import Client

from osiris.config import Settings
from osiris.core.operating_context import DOCTRINE
from osiris.engine import Engine
from osiris.errors import PolicyError
from osiris.server import build_server
from tests.conftest import run_cli
from tests.server.transports import run

SIDECAR = '''
version = 1
context_revision = "2026-11-30.1"

[instructions]
summary = """
Team rules (rev 2026-11-30.1): agent_id 'claude-code' for Claude Code sessions.
project_id registry: "" (global), "acme-app". Pass "@auto" to resolve your default.
"""

[registry]
project_ids = ["", "acme-app"]
enforce = "{enforce}"

[defaults]
"claude-code" = "acme-app"

[[doctrine]]
name = "recall-discipline"
body = "Recall refs before re-reading files."
'''


def _write(home: Path, enforce: str = "warn", text: str | None = None) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "operating-context.toml"
    path.write_text(text if text is not None else SIDECAR.replace("{enforce}", enforce))
    return path


async def _instructions(settings: Settings) -> str | None:
    async with Client(build_server(settings)) as client:
        return client.instructions


def test_no_sidecar_off_or_malformed_means_dormant(settings: Settings,
                                                    osiris_home: Path) -> None:
    assert run(_instructions(settings)) == DOCTRINE
    engine = Engine(settings)
    assert engine.plan("context")["active"] is False
    start = engine.plan("start", objective="o", project_id="anything")
    assert "operating_context_warning" not in start
    engine.close()
    _write(osiris_home)
    off = Settings(home=osiris_home, operating_context_enabled=False)
    assert run(_instructions(off)) == DOCTRINE
    _write(osiris_home, text="version = 1\n[registry\nbroken")
    assert run(_instructions(settings)) == DOCTRINE  # the server starts anyway
    broken = Engine(settings)
    view = broken.plan("context")
    assert view["active"] is False
    assert "malformed" in view["problems"][0]
    broken.close()
    health = json.loads(run_cli("health").stdout)
    assert any("operating_context_parse" in f for f in health["operating_context"]["findings"])


def test_instructions_carry_the_summary_verbatim_after_the_doctrine(
        settings: Settings, osiris_home: Path) -> None:
    _write(osiris_home)
    text = run(_instructions(settings))
    assert text.startswith(DOCTRINE + "\n\nTeam rules (rev 2026-11-30.1)")
    assert len(text) <= 1500


def test_override_path_and_kill_switch_from_the_environment(tmp_path: Path) -> None:
    custom = tmp_path / "elsewhere.toml"
    custom.write_text(SIDECAR.replace("{enforce}", "warn"))
    s = Settings.from_env({"OSIRIS_HOME": str(tmp_path / "h"),
                           "OSIRIS_OPERATING_CONTEXT_PATH": str(custom)})
    assert s.sidecar_path == custom
    assert "Team rules" in run(_instructions(s))
    off = Settings.from_env({"OSIRIS_HOME": str(tmp_path / "h"),
                             "OSIRIS_OPERATING_CONTEXT": "off"})
    assert off.sidecar_path is None


@pytest.mark.parametrize("enforce", ["off", "warn", "reject"])
@pytest.mark.parametrize("project", ["acme-app", "", "rogue"])
def test_registry_modes_for_writes_and_reads(settings: Settings, osiris_home: Path,
                                             enforce: str, project: str) -> None:
    _write(osiris_home, enforce)
    engine = Engine(settings)
    unknown = project == "rogue"
    if unknown and enforce == "reject":
        with pytest.raises(PolicyError, match="not in registry"):
            engine.plan("start", objective="write", project_id=project)
    else:
        start = engine.plan("start", objective="write", project_id=project)
        warned = "operating_context_warning" in start
        assert warned == (unknown and enforce == "warn")
    # Reads never fail on an unknown id: at most a warning.
    reader = engine.plan("start", objective="reader")["task_id"]
    read = engine.plan("memory", task_id=reader, project_id=project, memory={"kind": "fact"})
    assert read["entries"] == []
    engine.close()


def test_auto_sentinel(settings: Settings, osiris_home: Path) -> None:
    _write(osiris_home, "reject")
    engine = Engine(settings)
    mapped = engine.plan("start", objective="o", project_id="@auto", agent_id="claude-code")
    assert mapped["resolved_project_id"] == "acme-app"
    explicit = engine.plan("start", objective="o", project_id="acme-app", agent_id="codex")
    assert "resolved_project_id" not in explicit  # explicit values are never rewritten
    with engine.store.read() as con:
        assert con.execute("SELECT project_id FROM tasks WHERE task_id = ?",
                           [explicit["task_id"]]).fetchone()[0] == "acme-app"
    with pytest.raises(PolicyError, match="no default for agent_id 'codex'"):
        engine.plan("start", objective="o", project_id="@auto", agent_id="codex")
    _write(osiris_home, "warn")
    os.utime(osiris_home / "operating-context.toml", ns=(2, 2))
    unmapped = engine.plan("start", objective="o", project_id="@auto", agent_id="codex")
    assert unmapped["resolved_project_id"] == ""
    assert "no default" in unmapped["operating_context_warning"]
    engine.close()


def test_hard_layer_reloads_on_edit_but_instructions_stay_frozen(settings: Settings,
                                                                 osiris_home: Path) -> None:
    path = _write(osiris_home, "warn")
    server = build_server(settings)

    async def flow() -> None:
        async with Client(server) as client:
            before = client.instructions
            first = await client.call_tool("osiris_plan", {"mode": "start", "objective": "o",
                                                           "project_id": "newproj"})
            assert "operating_context_warning" in first.structured_content
            path.write_text(SIDECAR.replace("{enforce}", "warn")
                            .replace('["", "acme-app"]', '["", "acme-app", "newproj"]')
                            .replace("Team rules", "Edited rules"))
            os.utime(path, ns=(3, 3))
            second = await client.call_tool("osiris_plan", {"mode": "start", "objective": "o",
                                                            "project_id": "newproj"})
            assert "operating_context_warning" not in second.structured_content
            context = await client.read_resource("osiris://context")
            assert "newproj" in json.loads(context.contents[0].text)["registry"]["project_ids"]
        async with Client(server) as again:  # a new session on the same process
            assert again.instructions == before
            assert "Team rules" in again.instructions
    run(flow())


def test_context_is_read_only_over_mcp(settings: Settings, osiris_home: Path) -> None:
    _write(osiris_home)
    engine = Engine(settings)
    view = engine.plan("context")
    assert view["doctrine_sections"] == ["recall-discipline"]
    assert view["registry"] == {"project_ids": ["", "acme-app"], "enforce": "warn"}
    section = engine.plan("context", section="recall-discipline")
    assert section["body"] == "Recall refs before re-reading files."
    assert engine.plan("context", section="nope")["found"] is False
    engine.close()


def test_health_size_finding(settings: Settings, osiris_home: Path) -> None:
    _write(osiris_home, text=SIDECAR.replace("{enforce}", "warn")
           .replace("Team rules", "x" * 3200))
    doc = json.loads(run_cli("health").stdout)
    assert any("operating_context_size" in f and "> 3,000" in f
               for f in doc["operating_context"]["findings"])
