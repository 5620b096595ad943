"""Control characters never reach the model raw; the stored bytes stay exact.

A payload and a plan full of ESC sequences, BEL, NUL, DEL, a lone CR, C1 controls and
bidi overrides go through a real MCP client. Every text OSIRIS shapes for the model
(the manifest and plan answers, the preview, every recall op, a small file's content),
in the text block and in ``structuredContent``, shows them as escapes; the
``osiris://ref/...`` resource still returns the exact bytes, and the audit verifies.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from osiris.config import Settings
from osiris.core.display import escape_controls
from osiris.engine.audit import audit_task
from osiris.store.state import Store
from tests.server.transports import client_for, run

# C0 except \n and \t, DEL, C1, and the bidi embeddings, overrides and isolates.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
HOSTILE = ("clear\x1b[2J\x1b]0;title\x07 nul\x00 del\x7f csi\x9b[31m nel\x85 "
           "rlo\u202eevil\u202c lri\u2066x\u2069 cr\rhidden\ttab")
LOG = "".join(f"{i} step {HOSTILE}{' ERROR failed' if i % 40 == 0 else ''}\n"
              for i in range(1, 1501))
MARKDOWN = "".join(f"# Part {i} {HOSTILE}\n\ntext {i}\n\n" for i in range(400))
# JSON cannot hold a raw C0 control in a string: those come escaped and decode to raw.
RECORDS = "".join(json.dumps({"i": i, "msg": f"m{i} {HOSTILE}", "tag": "t\u202e\x7f"},
                             ensure_ascii=False) + "\n" for i in range(800))


def _raw_strings(value: Any, where: str = "") -> list[str]:
    """Where a raw control character sits in a decoded answer."""
    if isinstance(value, str):
        return [f"{where}: {value[:60]!r}"] if RAW.search(value) else []
    if isinstance(value, dict):
        return [hit for k, v in value.items() for hit in _raw_strings(v, f"{where}.{k}")]
    if isinstance(value, list):
        return [hit for i, v in enumerate(value) for hit in _raw_strings(v, f"{where}[{i}]")]
    return []


async def _call(client: Client, tool: str, args: dict[str, Any],
                structured: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Call a tool; its text, and its structured fields (all, or those named), are clean."""
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content[0].text
    text = result.content[0].text
    assert not RAW.search(text), (tool, args.get("op") or args.get("mode"), text[:300])
    answer = result.structured_content
    checked = answer if structured is None else {k: answer[k] for k in structured}
    assert not _raw_strings(checked), (tool, _raw_strings(checked))
    return answer


def _flow(transport: str, settings: Settings, project: Path) -> None:
    async def flow() -> str:
        async with client_for(transport, "auto", settings=settings) as client:
            start = await _call(client, "osiris_plan", {
                "mode": "start", "objective": f"fix {HOSTILE}", "steps": [f"a {HOSTILE}", "b"]})
            assert 'obj="fix clear\\x1b[2J\\x1b]0;title\\x07 nul\\x00' in start["manifest"]
            task = start["task_id"]
            await _call(client, "osiris_plan", {
                "mode": "update", "task_id": task, "active_step": 0,
                "constraints": [f"c {HOSTILE}"], "decisions": [f"d {HOSTILE}"]})
            await _call(client, "osiris_plan", {"mode": "status", "task_id": task})
            await _call(client, "osiris_plan", {"mode": "resume", "task_id": task})
            for uri in (f"osiris://task/{task}/manifest", f"osiris://task/{task}/status"):
                shown = (await client.read_resource(uri)).contents[0]
                assert not RAW.search(json.loads(shown.text).__repr__()), uri
                assert not _raw_strings(json.loads(shown.text)), uri
            prompt = await client.get_prompt("osiris/task-resume", {"task_id": task})
            assert not RAW.search(prompt.messages[0].content.text)

            refs = {}
            for name, payload in (("log", LOG), ("md", MARKDOWN), ("jsonl", RECORDS)):
                seen = await _call(client, "osiris_observe", {
                    "task_id": task, "kind": "result", "tool": "Bash", "result": payload})
                refs[name] = seen["ref"]
                assert seen.get("preview")
            log_preview = (await _call(client, "osiris_observe", {
                "task_id": task, "kind": "result", "tool": "Bash", "args": {"n": 2},
                "result": LOG + "tail\n"}))["preview"]
            # Preview lines are numbered as recall numbers them (\n only), and escaped.
            lines = (LOG + "tail\n").split("\n")
            for row in log_preview.split("\n"):
                number, sep, shown = row.partition(":")
                if sep and number.isdigit():
                    expected = escape_controls(lines[int(number) - 1])
                    assert expected.startswith(shown.removesuffix("…")), row
            small = await _call(client, "osiris_observe", {
                "task_id": task, "kind": "file", "path": "small.txt"})
            on_disk = (project / "small.txt").read_bytes().decode()
            assert small["content"] == escape_controls(on_disk)

            compacted = await _call(client, "osiris_checkpoint",
                                    {"task_id": task, "mode": "compact"})
            restored = await _call(client, "osiris_checkpoint", {
                "task_id": task, "mode": "restore",
                "checkpoint_id": compacted["checkpoint_id"]})
            assert any("\\x1b" in item["text"] for item in restored["items"])

            log, md, records = refs["log"], refs["md"], refs["jsonl"]
            ops = [{"ref": log, "op": "grep", "pattern": "ERROR", "context": 1},
                   {"ref": log, "op": "grep", "pattern": "(?i)rlo"},
                   {"ref": log, "op": "range", "start": 5, "end": 30},
                   {"ref": log, "op": "head", "n": 10}, {"ref": log, "op": "tail", "n": 10},
                   {"ref": md, "op": "outline"},
                   {"ref": log, "op": "aggregate", "pattern": r"(rlo\S*)"},
                   {"ref": records, "op": "aggregate", "fields": ["tag"]},
                   {"ref": records, "op": "jsonl", "n": 5},
                   {"ref": records, "op": "jsonl", "fields": ["msg"], "n": 5}]
            for args in ops:
                answer = await _call(client, "osiris_recall", args)
                assert "\\u202e" in answer["text"], (args, answer["text"][:300])  # shown
            ranged = await _call(client, "osiris_recall", {"ref": log, "op": "range",
                                                           "start": 7, "end": 7})
            assert ranged["text"] == f"7:{escape_controls(lines[6])}"
            first = await _call(client, "osiris_recall", {"ref": records, "op": "jsonl",
                                                          "n": 1})
            row = first["text"].split("\n")[0].split(":", 1)[1]
            assert json.loads(row) == json.loads(RECORDS.split("\n")[0])  # still JSON

            exact = await client.read_resource(f"osiris://ref/{log}")
            blob = exact.contents[0]
            body = blob.text.encode() if hasattr(blob, "text") else __import__(
                "base64").b64decode(blob.blob)
            assert body == LOG.encode()
            return str(task)
    task = run(flow())
    store = Store(Settings.from_env())
    try:
        assert audit_task(store, task).lossless
    finally:
        store.close()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    # A NUL makes a file binary (refused), so the file holds every other control.
    (root / "small.txt").write_text(f"tiny {HOSTILE.replace(chr(0), '')}\n")
    monkeypatch.setenv("OSIRIS_ROOTS", str(root))
    return root


def test_model_text_shows_control_characters_in_process(project: Path) -> None:
    _flow("inprocess", Settings.from_env(), project)


@pytest.mark.slow
def test_model_text_shows_control_characters_over_stdio(project: Path) -> None:
    _flow("stdio", Settings.from_env(), project)
