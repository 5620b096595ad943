"""``osiris bench clients --session FILE --workspace DIR_OR_TARBALL``: a user's own
session through its real client, bare and with OSIRIS, through the real CLI."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from osiris.cli.main import SESSION_CONFIGURATIONS
from osiris.harness.real_clients import configs
from tests.conftest import REPO, TRACES, run_cli
from tests.harness.real_clients import require_client

CODEX_TRACE = TRACES / "codex-cli__tielec-ai-workflow-agent" / "issue-119" / \
    "01_requirements" / "review" / "agent_log_raw.txt"
CODEX_TARBALL = REPO / "datasets" / "workspaces" / \
    "codex-cli__issue-119__01_requirements__review.tar.gz"


def _own(*args: str) -> tuple[int, str, str]:
    done = run_cli("bench", "clients", "--repo", str(REPO), *args, timeout=600)
    return done.returncode, done.stdout, done.stderr


def test_the_cli_names_the_same_configurations_as_the_harness() -> None:
    assert configs.SESSION_CONFIGURATIONS == SESSION_CONFIGURATIONS


@pytest.mark.slow
def test_a_users_session_plays_bare_and_with_osiris_from_a_folder(tmp_path: Path) -> None:
    require_client("codex")
    project = tmp_path / "project"
    with tarfile.open(CODEX_TARBALL) as archive:
        archive.extractall(tmp_path / "unpacked", filter="data")
    (tmp_path / "unpacked" / "ai-workflow-agent").rename(project)
    before = sorted(p.relative_to(project) for p in project.rglob("*"))
    code, out, err = _own("--session", str(CODEX_TRACE), "--workspace", str(project),
                          "--configuration", "osiris", "--json")
    assert code == 0, err[-2000:]
    doc = json.loads(out)
    assert doc["client"] == "codex" and doc["tool_calls"] == 20
    bare, osiris = doc["configurations"]["bare"], doc["configurations"]["osiris"]
    assert bare["status"] == osiris["status"] == "ok"
    # The same figures as the benchmark's own run of this trace (its workspace tarball).
    assert bare["cumulative_input_tokens"] > osiris["cumulative_input_tokens"] > 0
    assert osiris["vs_bare_cumulative_input"] > 0.2
    assert set(osiris["billed_cost_usd"]) == {"anthropic-5m", "anthropic-1h", "openai-auto",
                                              "no-cache"}
    assert osiris["needs_kept"] == osiris["needs_total"] == bare["needs_total"]
    assert osiris["refused_prompts"] == 0 and osiris["added_ms_per_call"] is not None
    # The user's folder was copied, never changed.
    assert sorted(p.relative_to(project) for p in project.rglob("*")) == before
    code, text, err = _own("--session", str(CODEX_TRACE), "--workspace", str(CODEX_TARBALL),
                           "--configuration", "osiris")
    assert code == 0, err[-2000:]
    assert f"bare: {bare['cumulative_input_tokens']:,} input tokens" in text
    assert f"osiris: {osiris['cumulative_input_tokens']:,} input tokens (" in text
    assert "saved)" in text


def _tarball(path: Path, name: str) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        info = tarfile.TarInfo(name)
        info.size = 2
        archive.addfile(info, io.BytesIO(b"hi"))
    return path


@pytest.mark.parametrize(("session", "workspace", "said"), [
    ("missing.jsonl", "project", "no such file"),
    ("notes.txt", "project", "not a transcript of a known format"),
    ("trace", "missing-dir", "no such folder or tarball"),
    ("trace", "notes.txt", "neither a folder nor a tarball"),
    ("trace", "evil.tar.gz", "would land outside the workspace"),
    ("trace", "broken.tar.gz", "not a readable tarball"),
])
def test_a_file_or_workspace_it_cannot_use_gets_a_clear_reason(
        tmp_path: Path, session: str, workspace: str, said: str) -> None:
    (tmp_path / "project").mkdir()
    (tmp_path / "notes.txt").write_text("just notes\n", "utf-8")
    _tarball(tmp_path / "evil.tar.gz", "../../outside.txt")
    (tmp_path / "broken.tar.gz").write_bytes(b"\x1f\x8b not really gzip")
    session_path = str(CODEX_TRACE) if session == "trace" else str(tmp_path / session)
    code, out, err = _own("--session", session_path, "--workspace", str(tmp_path / workspace))
    assert code == 2 and out == ""
    assert said in err and "Traceback" not in err
    assert not (tmp_path.parent / "outside.txt").exists()


def test_session_and_workspace_go_together(tmp_path: Path) -> None:
    code, _, err = _own("--session", str(CODEX_TRACE))
    assert code == 2 and "--session and --workspace go together" in err
