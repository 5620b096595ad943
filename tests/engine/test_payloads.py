"""observe of payloads: engagement modes, previews, dedup, files, drop receipts, prune."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from osiris.config import Settings
from osiris.engine import Engine
from osiris.engine.audit import audit_task
from osiris.errors import InvalidInputError, NotFoundError, SandboxError
from osiris.harness.importers.traces import load_trace
from tests.conftest import TRACES, OpenEngine

CLAUDE_121 = (TRACES / "claude-code__tielec-ai-workflow-agent" / "issue-121"
              / "07_documentation/execute/agent_log_raw.txt")
PYTEST_5840 = TRACES / "mini-swe-agent__gruckion-fork/pytest-dev__pytest-5840.traj.json"


def _outputs(path: Path) -> list[tuple[str, dict, str, bool]]:
    return [(s.tool, s.args, s.output, s.is_error) for s in load_trace(path).steps]


def _task(engine: Engine) -> str:
    return engine.plan("start", objective="replay a real session")["task_id"]


def test_modes_follow_payload_size_with_reasons(engine: Engine) -> None:
    tid = _task(engine)
    outputs = sorted(_outputs(CLAUDE_121), key=lambda o: len(o[2]))
    small = next(o for o in outputs if 50 < len(o[2]) < 400)
    big = outputs[-1]
    a = engine.observe(tid, "result", tool=small[0], args=small[1], result=small[2])
    assert a["mode"] == "bystander"
    assert "preview" not in a
    assert "cost more" in a["reason"]
    b = engine.observe(tid, "result", tool=big[0], args=big[1], result=big[2])
    assert b["mode"] == "full"
    assert b["ref"].startswith("mem://sha256:")
    assert 0 < b["preview_tokens"] <= 260
    assert b["tokens"] > 8000
    assert b["lines"] == len(big[2].splitlines())
    assert "op=" in b["recall"]
    assert engine.store.refs.get(b["ref"]).decode() == big[2]


def test_error_preview_shows_the_error_lines_not_the_first_bytes(engine: Engine) -> None:
    tid = _task(engine)
    log = "\n".join([f"collecting item {i} ... ok" for i in range(300)]
                    + ["FAILED tests/test_x.py::test_y - AssertionError: 1 != 2",
                       "E   assert 1 == 2", "===== 1 failed, 299 passed in 3.2s ====="])
    answer = engine.observe(tid, "result", tool="Bash", args={"command": "pytest"}, result=log)
    assert answer["strategy"] == "errors"
    assert "301:FAILED tests/test_x.py::test_y" in answer["preview"]
    assert "303:===== 1 failed, 299 passed" in answer["preview"]
    assert "collecting item 0" not in answer["preview"]


def test_code_preview_is_an_outline(engine: Engine, tmp_path: Path) -> None:
    tid = _task(engine)
    source = Path(__file__).read_text()
    answer = engine.observe(tid, "result", tool="Read", args={"file_path": "t.py"},
                            result=source * 3)
    assert answer["strategy"] in ("outline", "head_tail")
    assert answer["mode"] in ("standard", "full", "light")


def test_identical_result_is_recognised_and_stored_once(engine: Engine) -> None:
    tid = _task(engine)
    out = "x = 1\n" * 2000
    first = engine.observe(tid, "result", tool="Bash", args={"command": "cat x"}, result=out)
    again = engine.observe(tid, "result", tool="Bash", args={"command": "cat x"}, result=out)
    assert again["duplicate"] is True
    assert again["ref"] == first["ref"]
    other_args = engine.observe(tid, "result", tool="Bash", args={"command": "cat y"},
                                result=out)
    assert "duplicate" not in other_args
    assert other_args["ref"] == first["ref"]  # same content, stored once
    with engine.store.read() as con:
        assert con.execute("SELECT count(*) FROM refs WHERE ref = ?",
                           [first["ref"]]).fetchone()[0] == 1
        assert con.execute("SELECT hits FROM tool_results WHERE ref = ? AND hits > 0",
                           [first["ref"]]).fetchone()[0] == 1


def test_secret_in_a_payload_never_reaches_the_store(engine: Engine, osiris_home: Path) -> None:
    tid = _task(engine)
    token = "ghp_" + "a1B2c3D4e5" * 4
    answer = engine.observe(tid, "result", tool="Bash", args={"command": f"echo {token}"},
                            result=f"export GITHUB_TOKEN={token}\n" + "log line\n" * 500)
    assert answer["redacted"] == 1
    assert token not in engine.store.refs.get(answer["ref"]).decode()

    def files_with_the_token() -> list[Path]:  # the refs, the owner's log, DuckDB's WAL …
        return [path for path in osiris_home.rglob("*")
                if path.is_file() and token.encode() in path.read_bytes()]

    assert files_with_the_token() == []  # before the owner writes its deferred rows
    with engine.store.read() as con:  # … and after (a read writes them first)
        bodies = [body for (body,) in con.execute("SELECT body FROM events").fetchall()]
    assert len(bodies) >= 2 and not [body for body in bodies if token in body]
    assert files_with_the_token() == []


def test_drop_receipt_turns_a_claimed_saving_into_a_proven_one(engine: Engine) -> None:
    tid = _task(engine)
    big = max(_outputs(CLAUDE_121), key=lambda o: len(o[2]))
    answer = engine.observe(tid, "result", tool=big[0], args=big[1], result=big[2])
    with engine.store.read() as con:
        claimed, proven = con.execute(
            "SELECT sum(saved_claimed), sum(saved_proven) FROM ledger WHERE task_id = ?",
            [tid]).fetchone()
    assert claimed == answer["tokens"] - answer["preview_tokens"]
    assert proven == 0
    before = engine.plan("status", task_id=tid)["pressure"]["measured_tokens"]
    receipt = engine.observe(tid, "dropped", result=answer["ref"])
    assert receipt["proven_saved_tokens"] == claimed
    assert receipt["context_freed_tokens"] == answer["tokens"]
    after = engine.plan("status", task_id=tid)["pressure"]["measured_tokens"]
    assert before - after > answer["tokens"] * 0.9
    again = engine.observe(tid, "dropped", result=answer["ref"])
    assert again["already_dropped"] is True
    assert again["proven_saved_tokens"] == 0
    other = _task(engine)
    with pytest.raises(NotFoundError, match="not a ref of this task"):
        engine.observe(other, "dropped", result=answer["ref"])
    assert audit_task(engine.store, tid).lossless


def test_payload_limits_and_bad_input(settings: Settings, open_engine: OpenEngine) -> None:
    small = open_engine(Settings(home=settings.home, max_payload_bytes=1000))
    tid = small.plan("start", objective="o")["task_id"]
    with pytest.raises(InvalidInputError, match="OSIRIS_MAX_PAYLOAD_BYTES"):
        small.observe(tid, "result", tool="Bash", result="x" * 2000)
    with pytest.raises(InvalidInputError, match="needs result"):
        small.observe(tid, "result", tool="Bash")
    with pytest.raises(InvalidInputError, match="args"):
        small.observe(tid, "result", tool="Bash", args=["not", "an", "object"], result="x")
    with pytest.raises(InvalidInputError, match="dropped"):
        small.observe(tid, "dropped")
    with pytest.raises(InvalidInputError, match="ref"):
        small.observe(tid, "dropped", result="mem://sha256:nothex")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def main():\n    return 1\n\n\nclass App:\n"
                                         "    def run(self):\n        pass\n" * 200)
    (root / "small.txt").write_text("hello\n")
    (root / "blob.bin").write_bytes(b"\x00\x01\x02" * 100)
    (root / "big.txt").write_text("y" * 5000)
    outside = tmp_path / "secret.txt"
    outside.write_text("top secret\n")
    (root / "escape").symlink_to(outside)
    (root / "dirlink").symlink_to(tmp_path)
    return root


def test_file_reads_stay_inside_the_roots(settings: Settings, project: Path,
                                          open_engine: OpenEngine) -> None:
    engine = open_engine(Settings(home=settings.home, roots=(project,),
                                  max_file_bytes=4096 * 8))
    tid = engine.plan("start", objective="read files")["task_id"]
    first = engine.observe(tid, "file", path="src/app.py")
    assert first["ref"].startswith("mem://sha256:")
    assert first["mode"] != "bystander"
    again = engine.observe(tid, "file", path=str(project / "src" / "app.py"))
    assert again["unchanged"] is True
    assert again["ref"] == first["ref"]
    (project / "src" / "app.py").write_text("def changed():\n    pass\n" * 300)
    changed = engine.observe(tid, "file", path="src/app.py")
    assert "unchanged" not in changed
    assert changed["ref"] != first["ref"]
    small = engine.observe(tid, "file", path="small.txt")
    assert small["mode"] == "bystander"
    assert small["content"] == "hello\n"
    status = engine.plan("status", task_id=tid)
    assert "files=2" in status["manifest"]
    for hostile, message in [("../secret.txt", "outside OSIRIS_ROOTS"),
                             (str(project.parent / "secret.txt"), "outside OSIRIS_ROOTS"),
                             ("escape", "outside OSIRIS_ROOTS"),
                             ("dirlink/secret.txt", "outside OSIRIS_ROOTS"),
                             ("src/../../secret.txt", "outside OSIRIS_ROOTS"),
                             ("blob.bin", "binary"),
                             ("src", "not a regular file"),
                             ("/etc/passwd", "outside OSIRIS_ROOTS"),
                             ("nope.txt", "does not exist")]:
        with pytest.raises(SandboxError, match=message):
            engine.observe(tid, "file", path=hostile)
    tight = open_engine(Settings(home=settings.home, roots=(project,), max_file_bytes=1000))
    with pytest.raises(SandboxError, match="OSIRIS_MAX_FILE_BYTES"):
        tight.observe(tid, "file", path="big.txt")
    closed = open_engine(Settings(home=settings.home))
    with pytest.raises(SandboxError, match="OSIRIS_ROOTS is empty"):
        closed.observe(tid, "file", path="small.txt")
    assert os.path.exists(project / "small.txt")


def test_auto_prune_advises_what_to_drop_when_pressure_crosses_the_threshold(
        settings: Settings, open_engine: OpenEngine) -> None:
    engine = open_engine(Settings(home=settings.home, prune_threshold_tokens=20_000,
                                  prune_mode="balanced"))
    tid = engine.plan("start", objective="o")["task_id"]
    answers = []
    for i in range(6):
        text = f"run {i}\n" + "\n".join(f"line {j} of output {i}" for j in range(900))
        answers.append(engine.observe(tid, "result", tool="Bash",
                                      args={"command": f"run {i}"}, result=text))
    advised = [a for a in answers if "prune" in a]
    assert advised, "pressure passed 20,000 tokens without advice"
    advice = advised[0]["prune"]
    assert advice["triggered"] is True
    dropped = {d["ref"] for d in advice["drop"]}
    assert answers[-1]["ref"] not in dropped or advised[0] is not answers[-1]
    assert advice["net_savings_tokens"] == advice["pruned_tokens"]  # C/D only: no cache cost
    for ref in dropped:
        engine.observe(tid, "dropped", result=ref)
    assert audit_task(engine.store, tid).lossless
