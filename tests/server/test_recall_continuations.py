"""Every ``next`` a recall answer hands back is accepted verbatim over MCP.

For each op, on a payload big enough to be cut, the test follows ``next`` exactly as
given (in the structured answer and in the text the model reads) until the answer
ends, and checks that the pages together hold every line the op should show, once.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from mcp import Client

from osiris.config import Settings
from osiris.engine import Engine
from osiris.server.definitions import TOOLS
from tests.core.test_query import reference_grep
from tests.server.transports import client_for, run

MAX_TOKENS = 300
RECALL_ARGS = set(next(t for t in TOOLS if t.key == "recall").schema["properties"])

LOG = "\n".join(
    f"{i} ERROR item {i} failed" if i % 7 == 0 else
    f"{i} error: retry {i}" if i % 11 == 0 else
    f"{i} INFO step {i} done" for i in range(1, 1201)) + "\n"
PYTHON = "".join(f"class C{i}:\n    def run_{i}(self):\n        return {i}\n\n"
                 for i in range(300))
RECORDS = "".join(json.dumps({"i": i, "level": "error" if i % 3 == 0 else "info",
                              "msg": f"message {i}"}) + "\n" for i in range(600))


def _numbered(text: str) -> list[str]:
    """The payload rows of an answer: the lines that start with a line number."""
    return [row for row in text.split("\n") if re.match(r"\d+[:-]", row)]


async def _observe(client: Client, text: str) -> str:
    start = await client.call_tool("osiris_plan", {"mode": "start", "objective": "recall"})
    task = start.structured_content["task_id"]
    seen = await client.call_tool("osiris_observe", {"task_id": task, "kind": "result",
                                                     "tool": "Bash", "result": text})
    assert not seen.is_error, seen.content[0].text
    return str(seen.structured_content["ref"])


async def _follow(client: Client, ref: str, args: dict[str, Any]) -> list[str]:
    """Rows of every page, following ``next`` verbatim (only ``ref`` added)."""
    rows: list[str] = []
    for page in range(200):
        result = await client.call_tool("osiris_recall", {"ref": ref, **args})
        assert not result.is_error, (args, result.content[0].text)
        answer = result.structured_content
        assert answer["tokens"] <= MAX_TOKENS
        rows += _numbered(answer["text"])
        if answer["next"] is None:
            assert page > 0, f"{args} was not cut: the payload is too small for this test"
            return rows
        assert answer["truncated"]
        shown = result.content[0].text.rsplit("\n", 1)[-1]
        assert shown.startswith("next: ")
        assert json.loads(shown.removeprefix("next: ")) == answer["next"]  # what the model reads
        assert set(answer["next"]) <= RECALL_ARGS, answer["next"]
        args = answer["next"]
    raise AssertionError("recall did not end within 200 pages")


def _lines(text: str) -> list[str]:
    return [f"{i}:{line}" for i, line in enumerate(text.rstrip("\n").split("\n"), 1)]


def _grep_rows(text: str, regex: str, flags: int = 0) -> list[str]:
    return [row for row in _lines(text)
            if re.search(regex, row.split(":", 1)[1], flags)]


def _pages_of_every_op(transport: str, settings: Settings) -> None:
    async def flow() -> None:
        async with client_for(transport, "auto", settings=settings) as client:
            log = await _observe(client, LOG)
            source = await _observe(client, PYTHON)
            records = await _observe(client, RECORDS)
            bounded = {"max_tokens": MAX_TOKENS}
            got = await _follow(client, log, {"op": "grep", "pattern": "error", **bounded})
            assert got == _grep_rows(LOG, "error")
            got = await _follow(client, log, {"op": "grep", "pattern": "(?i)error", "n": 40,
                                              **bounded})
            assert got == _grep_rows(LOG, "error", re.IGNORECASE)
            got = await _follow(client, log, {"op": "grep", "pattern": r"ERROR item \d*0 ",
                                              "context": 1, **bounded})
            assert got == [r for r in reference_grep(LOG, r"ERROR item \d*0 ", context=1)
                           if r != "--"]
            got = await _follow(client, log, {"op": "range", "start": 100, "end": 700,
                                              **bounded})
            assert got == _lines(LOG)[99:700]
            got = await _follow(client, log, {"op": "head", "n": 500, **bounded})
            assert got == _lines(LOG)[:500]
            got = await _follow(client, log, {"op": "tail", "n": 500, **bounded})
            assert sorted(got, key=lambda r: int(r.split(":")[0])) == _lines(LOG)[-500:]
            symbols = [row for k in range(300)
                       for row in (f"{4 * k + 1}: class C{k}", f"{4 * k + 2}:   def run_{k}")]
            got = await _follow(client, source, {"op": "outline", **bounded})
            assert got == symbols
            got = await _follow(client, source, {"op": "outline", "language": "py", **bounded})
            assert got == symbols
            got = await _follow(client, records, {"op": "jsonl", **bounded})
            assert got == [f"{i + 1}:{json.dumps(json.loads(line), separators=(',', ':'))}"
                           for i, line in enumerate(RECORDS.splitlines())]
            got = await _follow(client, records, {"op": "jsonl", "where": {"level": "error"},
                                                  "fields": ["i"], **bounded})
            assert got == [f"{i + 1}:{{\"i\":{i}}}" for i in range(0, 600, 3)]
    run(flow())


def test_every_continuation_is_accepted_verbatim_in_process(settings: Settings) -> None:
    _pages_of_every_op("inprocess", settings)


@pytest.mark.slow
def test_every_continuation_is_accepted_verbatim_over_stdio(settings: Settings) -> None:
    _pages_of_every_op("stdio", settings)


def test_a_case_insensitive_grep_of_the_python_api_continues_over_mcp(
        settings: Settings) -> None:
    engine = Engine(settings)
    task = engine.plan("start", objective="api")["task_id"]
    ref = engine.observe(task, "result", tool="Bash", result=LOG)["ref"]
    first = engine.recall(ref, "grep", pattern="error", ignore_case=True,
                          max_tokens=MAX_TOKENS)
    engine.close()
    assert first["next"] is not None

    async def flow() -> list[str]:
        async with client_for("inprocess", "auto", settings=settings) as client:
            return await _follow(client, ref, first["next"])
    rest = run(flow())
    assert _numbered(first["text"]) + rest == _grep_rows(LOG, "error", re.IGNORECASE)


def test_the_outline_error_names_only_arguments_recall_accepts(settings: Settings) -> None:
    async def flow() -> None:
        async with client_for("inprocess", "auto", settings=settings) as client:
            ref = await _observe(client, LOG)  # a log: no language to detect
            refused = await client.call_tool("osiris_recall", {"ref": ref, "op": "outline"})
            assert refused.is_error
            message = refused.content[0].text
            named = set(re.findall(r"\b(\w+)=", message))
            assert named and named <= RECALL_ARGS, message
            retried = await client.call_tool("osiris_recall", {"ref": ref, "op": "outline",
                                                               "language": "markdown"})
            assert not retried.is_error, retried.content[0].text
    run(flow())
