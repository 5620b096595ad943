"""recall through the engine: verified blobs, bounded answers, clear errors."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from osiris.core.hashing import short_ref
from osiris.engine import Engine
from osiris.engine.audit import audit_task
from osiris.engine.context import resolve_ref
from osiris.errors import IntegrityError, InvalidInputError, NotFoundError
from osiris.harness.importers.traces import load_trace
from tests.conftest import TRACES, home_rows

PYLINT = TRACES / "mini-swe-agent__gruckion-fork" / "pylint-dev__pylint-6528.traj.json"


def _big_log(engine: Engine) -> tuple[str, str, str]:
    tid = engine.plan("start", objective="recall")["task_id"]
    step = max(load_trace(PYLINT).steps, key=lambda s: len(s.output))
    answer = engine.observe(tid, "result", tool=step.tool, args=step.args, result=step.output)
    return tid, answer["ref"], step.output


def test_each_op_through_the_engine(engine: Engine) -> None:
    tid, ref, text = _big_log(engine)
    lines = text.split("\n")
    grep = engine.recall(ref, "grep", pattern="E0401", n=3, task_id=tid)
    assert grep["matches"] >= 1
    assert all("E0401" in line for line in grep["text"].splitlines()
               if line[:1].isdigit() and ":" in line)
    ranged = engine.recall(ref, "range", start=2, end=4)
    assert ranged["text"].splitlines()[:3] == [f"{i}:{lines[i - 1]}" for i in (2, 3, 4)]
    assert engine.recall(ref, "head", n=2)["text"].splitlines()[0] == f"1:{lines[0]}"
    assert engine.recall(ref, "tail", n=1)["lines_total"] == len(text.rstrip("\n").split("\n"))
    agg = engine.recall(ref, "aggregate", pattern=r"\b([EWCR]\d{4})\b", n=5)
    assert "total matching lines" in agg["text"]


def test_the_short_ref_previews_show_recalls_the_whole(engine: Engine) -> None:
    """Previews name a ref by its first 16 hex digits (14 tokens, not 42): recall and
    the raw bytes take that form, or any longer prefix; the journal keeps the whole."""
    tid, ref, text = _big_log(engine)
    short = short_ref(ref)
    assert len(short) == len("mem://sha256:") + 16 and ref.startswith(short)
    answer = engine.recall(short, "head", n=1, task_id=tid)
    assert answer["ref"] == short
    assert answer["text"].splitlines()[0] == "1:" + text.split("\n")[0]
    assert engine.recall(ref[:40], "tail", n=1)["lines_total"] == answer["lines_total"]
    assert engine.ref_bytes(short) == engine.ref_bytes(ref)
    recalled = home_rows(engine.settings.home, "SELECT body->>'ref' FROM events WHERE"
                                               " kind = 'recall' ORDER BY seq")
    assert recalled == [(ref,), (ref,)]
    with pytest.raises(InvalidInputError, match="16 to 64 lowercase hex digits"):
        engine.recall(short[:-1], "head")
    with pytest.raises(NotFoundError, match="unknown to this OSIRIS home"):
        engine.recall("mem://sha256:" + "0" * 16, "head")


def test_a_short_form_two_refs_share_asks_for_the_whole(tmp_path: Path) -> None:
    """Two refs of one home with the same first 16 digits (odds about n²/2⁶⁵): the short
    form is refused with the way out, and each whole ref still resolves."""
    con = duckdb.connect(str(tmp_path / "refs.duckdb"))
    con.execute("CREATE TABLE refs (ref VARCHAR PRIMARY KEY)")
    first, second = ("mem://sha256:" + "ab" * 8 + tail * 48 for tail in "01")
    con.executemany("INSERT INTO refs VALUES (?)", [[first], [second]])
    with pytest.raises(InvalidInputError, match=r"more than one ref.*whole ref"):
        resolve_ref(con, short_ref(first))
    assert resolve_ref(con, first) == first and resolve_ref(con, second[:30]) == second


def test_truncated_answers_continue_exactly(engine: Engine) -> None:
    _, ref, _ = _big_log(engine)
    full = engine.recall(ref, "grep", pattern="pylint", n=10_000, max_tokens=25_000)
    pages, args = [], {"pattern": "pylint", "n": 10_000, "max_tokens": 300}
    while True:
        page = engine.recall(ref, "grep", **args)
        assert page["tokens"] <= 300
        pages.append([line for line in page["text"].splitlines()
                      if line[:1].isdigit()])
        if not page["truncated"]:
            break
        args = {k: v for k, v in page["next"].items() if k != "op"} | {"max_tokens": 300}
    joined = [line for page in pages for line in page]
    assert joined == [line for line in full["text"].splitlines() if line[:1].isdigit()]


def test_hostile_pattern_cannot_hang_and_bad_refs_are_clear(engine: Engine) -> None:
    tid = engine.plan("start", objective="hostile")["task_id"]
    ref = engine.observe(tid, "result", tool="cat", result="a" * 200_000 + "!")["ref"]
    answer = engine.recall(ref, "grep", pattern="(a+)+$")
    assert answer["matches"] == 0
    with pytest.raises(InvalidInputError, match="linear time"):
        engine.recall(ref, "grep", pattern=r"(a)\1")
    with pytest.raises(InvalidInputError, match="not a ref"):
        engine.recall("mem://sha256:xyz", "head")
    with pytest.raises(NotFoundError):
        engine.recall("mem://sha256:" + "0" * 64, "head")
    with pytest.raises(InvalidInputError, match="unknown recall op"):
        engine.recall(ref, "explode")
    path = engine.store.refs.path_for(ref)
    path.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(IntegrityError, match="failed verification"):
        engine.recall(ref, "head")
    assert not audit_task(engine.store, tid).lossless


def test_audit_stays_lossless_after_pruning_and_compaction(engine: Engine) -> None:
    tid, ref, _ = _big_log(engine)
    for i in range(4):
        engine.observe(tid, "result", tool="Bash", args={"i": i},
                       result=f"output {i}\n" * 3000)
    engine.observe(tid, "dropped", result=ref)
    checkpoint = engine.checkpoint(tid, "compact")
    engine.observe(tid, "dropped", result=checkpoint["checkpoint_id"])
    report = audit_task(engine.store, tid)
    assert report.lossless, report.integrity_violations
    assert report.items_verified == report.items_externalized >= 6
    assert report.ledger["saved_proven"] > 0
