"""mini-swe-agent with OSIRIS, end to end: the real ``mini`` command (PyPI
mini-swe-agent 2.x, litellm) against the scripted model over Chat Completions, with
OSIRIS on and off; what the model received is read from the model server's log."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest

from osiris.harness.real_clients.model_script import ToolCall, prompt_tokens
from osiris.harness.real_clients.model_server import ModelServer
from tests.conftest import run_cli
from tests.loop_script import SUBMIT, RecallScript, big_file

pytestmark = pytest.mark.slow  # real mini-swe-agent sessions

NEED = "row 2500: value 17500"
OSIRIS_AGENT = "osiris.clients.minisweagent.OsirisAgent"
BARE_AGENT = "minisweagent.agents.default.DefaultAgent"


def _mini(tmp_path: Path, agent: str, script: RecallScript, env: dict[str, str],
          ) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]], dict[str, Any]]:
    """One ``mini`` run in ``tmp_path/project``: the run, the prompts, the trajectory."""
    scripts = Path(sysconfig.get_path("scripts"))
    with ModelServer(script) as server:
        argv = [str(scripts / "mini"), "-y", "--exit-immediately", "-t", "Which value has "
                "row 2500?", "-m", "openai/scripted", "-c", "mini.yaml",
                "-c", f"agent.agent_class={agent}",
                "-c", f"model.model_kwargs.api_base={server.base_url}/v1",
                "-c", "model.cost_tracking=ignore_errors",
                "-c", f"environment.cwd={tmp_path / 'project'}",
                "-o", str(tmp_path / "run.traj.json")]
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
            env={"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
                 "HOME": str(tmp_path / "user"), "MSWEA_CONFIGURED": "true",
                 "MSWEA_GLOBAL_CONFIG_DIR": str(tmp_path / "mswea"),
                 "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_API_KEY": "sk-scripted",
                 **env}, check=False)
        bodies = [dict(p.body) for p in server.prompts()]
    trajectory = json.loads((tmp_path / "run.traj.json").read_text())
    return done, bodies, trajectory


def _project(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "big.txt").write_text(big_file())
    for k in range(4):
        (project / f"part{k}.txt").write_text(
            "".join(f"part {k} line {i}: {i * k}\n" for i in range(60)))


def _script() -> RecallScript:
    return RecallScript(["cat big.txt", *[f"cat part{k}.txt" for k in range(4)]], NEED,
                        "big.txt", final=ToolCall("bash", {"command": SUBMIT}))


def test_mini_swe_agent_with_osiris_sends_previews_and_stubs_and_recalls_through_bash(
        tmp_path: Path) -> None:
    _project(tmp_path)
    home = tmp_path / "osiris-home"
    runs = {}
    for agent in (BARE_AGENT, OSIRIS_AGENT):
        script = _script()
        done, bodies, trajectory = _mini(
            tmp_path, agent, script, {"OSIRIS_HOME": str(home),
                                      "OSIRIS_PRUNE_THRESHOLD_TOKENS": "600"})
        assert done.returncode == 0, done.stderr[-2000:]
        assert trajectory["info"]["exit_status"] == "Submitted"
        runs[agent] = (bodies, script, trajectory)
    bare, osiris = runs[BARE_AGENT][0], runs[OSIRIS_AGENT][0]
    # Bare: mini-swe-agent's own cut (5,000 characters of head and of tail) in every
    # prompt after it; the need was cut, so the model greps the file again.
    assert len(bare) == 7 and all("elided_chars" in json.dumps(b) for b in bare[1:])
    assert runs[BARE_AGENT][1].recalled == [] and f"2501:{NEED}" in json.dumps(bare[6])
    # OSIRIS: the preview and its recall command instead; once the context is over the
    # threshold the prune advice stubs it; the model finds the need again through bash.
    second = json.dumps(osiris[1])
    assert "row 3000: value 21000" not in second and "osiris recall mem://sha256:" in second
    assert any("[osiris: output dropped from the conversation;" in json.dumps(b)
               for b in osiris[2:])
    assert len(osiris) == 7 and runs[OSIRIS_AGENT][1].recalled
    assert f"2501:{NEED}" in json.dumps(osiris[6])
    total = {name: sum(prompt_tokens(b) for b in bodies) for name, (bodies, _, _) in
             runs.items()}
    assert total[OSIRIS_AGENT] * 3 < total[BARE_AGENT], total  # 8,907 vs 41,271 here
    # The trajectory keeps the whole output; the ledger proves the saving.
    messages = runs[OSIRIS_AGENT][2]["messages"]
    first = next(m for m in messages if m.get("role") == "tool")
    assert first["extra"]["raw_output"].endswith("row 3999: value 27993\n")
    assert first["extra"]["osiris_ref"].startswith("mem://sha256:")
    tasks = run_cli("health", env={"OSIRIS_HOME": str(home)})
    assert tasks.returncode == 0, tasks.stdout
    task = _the_task(home)
    audit = run_cli("audit", "--task", task, env={"OSIRIS_HOME": str(home)})
    assert audit.returncode == 0 and json.loads(audit.stdout)["lossless"] is True


def _the_task(home: Path) -> str:
    from tests.conftest import home_rows

    rows = home_rows(home, "SELECT task_id FROM tasks")
    assert len(rows) == 1
    return str(rows[0][0])


def test_a_broken_osiris_home_leaves_mini_swe_agent_running_as_without_it(
        tmp_path: Path) -> None:
    _project(tmp_path)
    not_a_home = tmp_path / "a-file"
    not_a_home.write_text("not a directory\n")
    done, bodies, trajectory = _mini(tmp_path, OSIRIS_AGENT, _script(),
                                     {"OSIRIS_HOME": str(not_a_home)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert trajectory["info"]["exit_status"] == "Submitted"
    second = json.dumps(bodies[1])  # the output as mini-swe-agent shows it (its own cut)
    assert "elided_chars" in second and "osiris recall" not in second
    assert "osiris: not in this run" in done.stdout + done.stderr


@pytest.mark.parametrize("agent", ["OsirisAgent", "OsirisInteractiveAgent"])
def test_the_agent_classes_load_from_mini_swe_agent_configuration(agent: str) -> None:
    from minisweagent.agents import get_agent_class

    loaded = get_agent_class(f"osiris.clients.minisweagent.{agent}")
    assert loaded.__name__ == agent
