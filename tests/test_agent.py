"""osiris.agent: a loop that owns its history, through the real store owner or engine,
the real ``osiris recall`` and ``osiris audit`` commands, and the documented loop run
against the scripted model over HTTP."""

from __future__ import annotations

import json
import re
import sysconfig
from pathlib import Path
from typing import Any

import pytest

from osiris.agent import AgentSession
from osiris.core.hashing import short_ref
from osiris.errors import InvalidInputError
from osiris.harness.real_clients.model_server import ModelServer
from tests.conftest import home_rows, run_cli
from tests.loop_script import RecallScript, big_file

NEED = "row 2500: value 17500"


def _recall_command(text: str, pattern: str) -> list[str]:
    found = re.search(r"`osiris recall (mem://sha256:[0-9a-f]{16}) --grep PATTERN`", text)
    assert found is not None, text[-400:]
    return ["recall", found.group(1), "--grep", pattern]


def test_a_big_output_enters_as_a_preview_that_the_shell_recalls() -> None:
    with AgentSession("count the rows") as osiris:  # through the home's store owner
        small = osiris.observe("3 files\n", command="ls | wc -l")
        big = osiris.observe(big_file(), command="cat big.txt")
    assert (small.text, small.stored, small.warning) == ("3 files\n", False, None)
    assert big.stored and big.ref is not None and big.tokens > 30_000
    assert NEED not in big.text and len(big.text) < 3_000
    assert "whole output (4,000 lines" in big.text
    done = run_cli(*_recall_command(big.text, NEED))
    assert done.returncode == 0, done.stderr
    assert f"2501:{NEED}" in done.stdout


def test_prune_advice_becomes_stubs_and_receipts_that_the_audit_proves(
        monkeypatch: pytest.MonkeyPatch, osiris_home: Path) -> None:
    monkeypatch.setenv("OSIRIS_PRUNE_THRESHOLD_TOKENS", "600")
    monkeypatch.setenv("OSIRIS_STORE_OWNER", "off")  # the engine in this process
    messages: list[dict[str, Any]] = []
    dropped: list[str] = []
    with AgentSession("read five files") as osiris:
        for k in range(5):
            output = "".join(f"file{k} line {i}: text {i * k}\n" for i in range(60))
            seen = osiris.observe(output, command=f"cat f{k}.py",
                                  usage={"prompt_tokens": 300 * (k + 1)})
            assert seen.stored
            messages.append({"role": "tool", "content": seen.text,
                             "extra": {"osiris_ref": seen.ref}})
            dropped += osiris.apply(messages)
        task = osiris.task_id
        again = osiris.apply(messages)  # the same advice twice: nothing more to drop
        stubbed = [m for m in messages if m["content"].startswith("[osiris: output dropped")]
        assert again == [] and len(stubbed) == len(dropped) >= 2
        for message in stubbed:  # each stub names its own ref, and the ref recalls it
            ref = message["extra"]["osiris_ref"]
            shown = short_ref(ref)  # named as every preview names a ref
            assert f"osiris recall {shown} --grep" in message["content"]
            assert "line 59:" in osiris.recall(shown, tail=1)
    assert messages[-1]["content"].startswith("1:file4 line 0")  # the newest stays
    rows = home_rows(osiris_home, "SELECT kind, context_tokens, saved_claimed, saved_proven"
                     " FROM ledger WHERE task_id = ? AND ref IS NOT NULL", [task])
    externalized = [r for r in rows if r[0] == "payload.externalize"]
    receipts = [r for r in rows if r[0] == "drop_receipt"]
    # The preview entered the history, not the output: its saving is made at once.
    assert all(0 < r[1] < 200 and r[2] == r[3] > 400 for r in externalized)
    # A drop frees the preview less the stub that stays, claimed and proven by it.
    assert len(receipts) == len(dropped) and all(r[1] < 0 and r[3] == -r[1]
                                                 for r in receipts)
    audit = run_cli("audit", "--task", task)
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert json.loads(audit.stdout)["lossless"] is True


def test_a_recall_through_the_shell_enters_the_history_as_it_is() -> None:
    with AgentSession("recall") as osiris:
        big = osiris.observe(big_file(), command="cat big.txt")
        answer = run_cli("recall", str(big.ref), "--lines", "1:300").stdout
        seen = osiris.observe(answer, command=f"osiris recall {big.ref} --lines 1:300")
    assert len(answer) > 4_000  # over the engagement threshold, and still not stored
    assert (seen.text, seen.stored, seen.ref) == (answer, False, None)


def test_a_repeated_output_becomes_a_pointer_unless_it_is_small() -> None:
    with AgentSession("repeat") as osiris:
        first = osiris.observe(big_file(400), command="cat big.txt")
        second = osiris.observe(big_file(400), command="cat big.txt")
        empty = [osiris.observe("", command="true") for _ in range(2)]
    assert second.ref == first.ref and second.stored
    assert second.text.startswith("[osiris: the same output as an earlier call;")
    assert f"osiris recall {short_ref(first.ref)} " in second.text
    assert [(e.text, e.stored) for e in empty] == [("", False), ("", False)]


def test_an_output_osiris_cannot_store_enters_unchanged(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("OSIRIS_MAX_PAYLOAD_BYTES", "8192")
    with AgentSession("too big") as osiris:
        huge = "x" * 10_000
        seen = osiris.observe(huge, command="yes x | head -c 10000")
        after = osiris.observe(big_file(400), command="cat big.txt")
        with pytest.raises(InvalidInputError, match="one way at a time"):
            osiris.recall(str(after.ref), grep="row", tail=3)
    assert (seen.text, seen.stored, seen.ref) == (huge, False, None)
    assert seen.warning is not None and "OSIRIS_MAX_PAYLOAD_BYTES (8,192)" in seen.warning
    assert any("enters the history unchanged" in r.message for r in caplog.records)
    assert after.stored  # the loop, and OSIRIS, go on


def test_osiris_recall_refuses_bad_arguments_clearly() -> None:
    with AgentSession("refs") as osiris:
        ref = str(osiris.observe(big_file(400), command="cat big.txt").ref)
    lines = run_cli("recall", ref, "--lines", "ten:twenty")
    assert lines.returncode == 1 and "use A:B" in lines.stderr
    start = run_cli("recall", ref, "--start", "3")
    assert start.returncode == 1 and "--start goes with --grep" in start.stderr
    unknown = run_cli("recall", "mem://sha256:" + "0" * 64, "--tail", "2")
    assert unknown.returncode == 2 and "osiris:" in unknown.stderr
    hostile = run_cli("recall", ref, "--grep", "(a+)+\\1")
    assert hostile.returncode == 1 and "back-references" in hostile.stderr
    cut = run_cli("recall", ref, "--grep", "row", "--max-tokens", "200")
    assert cut.returncode == 0
    go_on = re.search(r"go on with `osiris (recall [^`]+)`", cut.stdout)
    assert go_on is not None, cut.stdout[-300:]
    assert "--start" in go_on.group(1)
    more = run_cli(*go_on.group(1).split())
    assert more.returncode == 0 and more.stdout.split("\n", 1)[0] not in cut.stdout


def _documented_loop() -> str:
    text = (Path(__file__).resolve().parents[1] / "docs" / "agent-loops.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.DOTALL)
    assert len(blocks) == 1
    return str(blocks[0])


def test_the_documented_loop_runs_against_a_model(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code = _documented_loop()
    assert len(code.strip().splitlines()) <= 40
    monkeypatch.chdir(tmp_path)
    (tmp_path / "big.txt").write_text(big_file())
    scripts = sysconfig.get_path("scripts")  # where `osiris` is, as a user's venv has it
    monkeypatch.setenv("PATH", f"{scripts}:{Path('/usr/bin')}:{Path('/bin')}")
    script = RecallScript(["cat big.txt"], NEED, "big.txt")
    with ModelServer(script) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.base_url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-scripted")
        namespace: dict[str, Any] = {}
        exec(compile(code, "docs/agent-loops.md", "exec"), namespace)
        messages = namespace["run"]("Which value has row 2500?", model="scripted")
        prompts = server.prompts()
    assert [p.api for p in prompts] == ["chat"] * 3
    second, third = (json.dumps(p.body) for p in prompts[1:])
    assert "osiris recall mem://sha256:" in second and "row 3000:" not in second
    assert len(second) < 6_000  # a 52 KB output became its preview
    assert f"2501:{NEED}" in third  # found again through the shell, as the stub says
    assert script.recalled and messages[-1]["content"] == "done"
