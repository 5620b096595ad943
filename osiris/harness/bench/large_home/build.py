"""The build: bulk insert, summary, verification and the command line (step 4)."""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from osiris.config import Settings
from osiris.core.hashing import GENESIS_HASH, journal_event_hash
from osiris.errors import InvalidInputError
from osiris.harness.bench.large_home.common import Progress
from osiris.harness.bench.large_home.compile import _compile, _Unit, columns
from osiris.harness.bench.large_home.plan import _Copy, _number_events, _plan_copies
from osiris.harness.bench.large_home.render import _Renderer, _Sink
from osiris.harness.bench.large_home.templates import _SESSION_GROUPS, _run_templates, _Templates
from osiris.store import journal
from osiris.store.db import fetch_row
from osiris.store.refs import RefStore
from osiris.store.state import Store


def _render_all(units: list[_Unit], copies: list[_Copy], report: Progress,
                ) -> tuple[_Sink, dict[str, list[Any]]]:
    """Every copy's rows, and the journal's columns in sequence order."""
    sink = _Sink()
    for i, copy in enumerate(copies):
        _Renderer(units[copy.unit], copy, sink).run()
        if i % 500 == 0:
            report("render", i, len(copies))
    report("render", len(copies), len(copies))
    _dedupe_memory(sink)
    return sink, sink.events_in_order()


def _chain(ev: dict[str, list[Any]]) -> tuple[list[str], list[str]]:
    """Every event's prev_hash and hash, in order (the journal's own hash function)."""
    prevs, hashes = [], []
    prev = GENESIS_HASH
    for i, (ts, task, actor, kind, body) in enumerate(zip(
            ev["ts_us"], ev["task_id"], ev["actor"], ev["kind"], ev["body"], strict=True)):
        digest = journal_event_hash(i + 1, ts, task, actor, kind, body, prev)
        prevs.append(prev)
        hashes.append(digest)
        prev = digest
    return prevs, hashes


def _dedupe_memory(sink: _Sink) -> None:
    """An entry written by several copies (same scope, key and value) is stored once."""
    mem = sink.tables["memory"]
    first: dict[str, int] = {}
    for i, (entry, created) in enumerate(zip(mem["entry_id"], mem["created_us"], strict=True)):
        j = first.get(entry)
        if j is None or created < mem["created_us"][j]:
            first[entry] = i
    keep = sorted(first.values())
    for name in mem:
        column = mem[name]
        mem[name] = [column[i] for i in keep]


_INSERT_ORDER = ("events", "tasks", "task_refs", "calls", "tool_results", "failures",
                 "memory", "handoffs", "ledger", "usage_reports")


def _insert(store: Store, templates: _Templates, sink: _Sink, events: dict[str, list[Any]],
            prevs: list[str], hashes: list[str], report: Progress) -> None:
    """All rows in one write transaction; the witness follows the commit, lock held.

    Each table goes in as one Arrow table; the sink's Python lists (and ``prevs`` and
    ``hashes``) are emptied as soon as their table is built, so the process holds each
    row about once.
    """
    import pyarrow as pa

    n = len(hashes)
    head = hashes[-1] if hashes else GENESIS_HASH
    tables: dict[str, dict[str, list[Any]]] = {
        "events": {**events, "prev_hash": prevs, "hash": hashes}, **sink.tables}
    sink.tables = {}

    def witness() -> None:
        journal.write_witness(store.home, n, head)

    with store.db.write(on_commit=witness) as con:
        # fetchall: a result left unfinished would block register() below.
        if con.execute("SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM tasks)"
                       ).fetchall()[0][0]:
            raise InvalidInputError(f"{store.home} already holds tasks or events: "
                                    "build a large home into an empty home")
        for done, name in enumerate(_INSERT_ORDER):
            report("insert", done, len(_INSERT_ORDER) + 1)
            values_of = tables.pop(name)
            cols = ", ".join(values_of if name == "events" else columns(name))
            order = ""
            if name in ("ledger", "usage_reports"):  # ids follow the journal
                values_of["ord"] = list(range(len(values_of["ts_us"])))
                order = " ORDER BY event_seq, ord"
            arrow = pa.table(values_of)
            for values in values_of.values():
                values.clear()
            con.register("bulk_rows", arrow)
            con.execute(f"INSERT INTO {name} ({cols}) SELECT {cols} FROM bulk_rows{order}")  # noqa: S608
            con.unregister("bulk_rows")
            del arrow
        ref_cols = ("ref", "size_bytes", "tokens", "encoding", "media_type",
                    "redaction_version", "redactions")
        con.register("bulk_refs", pa.table(
            {c: [r[i] for r in templates.refs] for i, c in enumerate(ref_cols)}))
        # A blob's metadata dates from its first use in the generated home.
        con.execute(
            "INSERT INTO refs (ref, size_bytes, tokens, encoding, media_type, created_us,"
            " redaction_version, redactions) SELECT r.ref, r.size_bytes, r.tokens, r.encoding,"
            " r.media_type, u.first_us, r.redaction_version, r.redactions FROM bulk_refs r"
            " JOIN (SELECT ref, min(created_us) AS first_us FROM task_refs GROUP BY ref) u"
            " USING (ref)")
        con.unregister("bulk_refs")
    report("insert", len(_INSERT_ORDER) + 1, len(_INSERT_ORDER) + 1)


def _copy_blobs(templates: _Templates, target: RefStore, refs: set[str]) -> int:
    """Copy the blobs the copies use (verified on read, written atomically)."""
    for ref in sorted(refs):
        target.put(templates.blob(ref))
    return len(refs)


def build_large_home(home: Path, tasks: int, events: int, *, seed: int = 0,
                     progress: Progress | None = None, days: float = 30.0,
                     handoff_share: float = 0.02, end_us: int | None = None,
                     template_scale: float = 1.0) -> dict[str, Any]:
    """Fill the empty OSIRIS home ``home`` with ``tasks`` tasks and ``events`` events.

    ``handoff_share`` of the tasks come as parent/child pairs of a handoff; times fall in
    the ``days`` days before ``end_us`` (now by default); ``template_scale`` shortens
    (below 1) or lengthens the template sessions. The same arguments give the same home.
    Returns the counts per table, what the data contains (:func:`summarize_home`),
    timings in seconds and the database's size.
    """
    if tasks < 1 or events < tasks:
        raise InvalidInputError("need at least one task and at least one event per task")
    if not 0 <= handoff_share <= 1:
        raise InvalidInputError("handoff_share must be between 0 and 1")
    report = progress or (lambda _stage, _done, _total: None)
    timings: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(stage: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        timings[stage] = round(now - clock, 3)
        clock = now

    home = Path(home)
    store = Store(Settings(home=home), exclusive=True)
    try:
        with store.read() as con:
            if fetch_row(con, "SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM"
                         " tasks)")[0]:
                raise InvalidInputError(f"{home} already holds tasks or events: build a large "
                                        "home into an empty home")
        with tempfile.TemporaryDirectory(prefix="osiris-large-home-") as scratch:
            report("templates", 0, len(_SESSION_GROUPS))
            templates = _run_templates(Path(scratch), seed, template_scale)
            units = [_compile(cap) for cap in templates.units]
            report("templates", len(_SESSION_GROUPS), len(_SESSION_GROUPS))
            lap("templates")
            end = end_us if end_us is not None else time.time_ns() // 1000
            copies = _plan_copies(units, tasks, events, handoff_share=handoff_share,
                                  days=days, end_us=end,
                                  rng=random.Random(seed))  # noqa: S311 (reproducible)
            total = _number_events(units, copies)
            lap("plan")
            sink, journal_rows = _render_all(units, copies, report)
            lap("render")
            report("chain", 0, total)
            prevs, hashes = _chain(journal_rows)
            head_hash = hashes[-1]
            report("chain", total, total)
            lap("chain")
            blobs = _copy_blobs(templates, store.refs, set(sink.tables["task_refs"]["ref"]))
            _insert(store, templates, sink, journal_rows, prevs, hashes, report)
            with store.read() as con:
                con.execute("CHECKPOINT")
            lap("insert")
        report("summary", 0, 1)
        summary = summarize_home(store)
        report("summary", 1, 1)
        lap("summary")
    finally:
        store.close()
    return {"home": str(home), "seed": seed, "head_seq": total, "head_hash": head_hash,
            "blobs_written": blobs, **summary,
            "templates": {u.name: {"calls": u.calls, "events": u.events_after(u.calls),
                                   "tasks": len(u.task_markers),
                                   "copies": sum(1 for c in copies if units[c.unit] is u)}
                          for u in units},
            "timings_s": timings, "seconds": round(sum(timings.values()), 3),
            "db_bytes": Settings(home=home).db_path.stat().st_size}


_SUMMARY_SQL = {
    "event_kinds": "SELECT kind, count(*) FROM events GROUP BY kind ORDER BY 2 DESC",
    "drift_verdicts": (  # journaled drift verdicts (plan updates, head/contract observes)
        "SELECT body->'drift'->>'verdict', count(DISTINCT task_id) FROM events"
        " WHERE body LIKE '%\"drift\":%' GROUP BY 1 ORDER BY 2 DESC"),
    "precheck_verdicts": ("SELECT body->>'verdict', count(DISTINCT task_id) FROM events"
                          " WHERE kind = 'precheck' GROUP BY 1 ORDER BY 2 DESC"),
    "precheck_sources": (
        "SELECT source, count(DISTINCT task_id) FROM (SELECT task_id,"
        " unnest(CAST(body->'sources' AS VARCHAR[])) AS source FROM events"
        " WHERE kind = 'precheck') GROUP BY 1 ORDER BY 2 DESC"),
    "loopguard_patterns": (  # patterns LoopGuard reported on observed calls
        "SELECT pattern, count(DISTINCT task_id) FROM (SELECT task_id,"
        " unnest(CAST(body->'loop' AS VARCHAR[])) AS pattern FROM events"
        " WHERE body LIKE '%\"loop\":%') GROUP BY 1 ORDER BY 2 DESC"),
}


def summarize_home(store: Store) -> dict[str, Any]:
    """What a home holds: rows per table, event and ledger kinds, and how many tasks
    had each drift verdict, precheck verdict and source, and LoopGuard pattern."""
    out: dict[str, Any] = {}
    with store.read() as con:
        out["counts"] = {name: int(fetch_row(con, f"SELECT count(*) FROM {name}")[0])  # noqa: S608
                         for name in ("tasks", "events", "ledger", "calls", "task_refs",
                                      "refs", "memory", "tool_results", "failures",
                                      "handoffs", "usage_reports", "checkpoints")}
        out["ledger_kinds"] = {
            str(kind): {"rows": int(rows), "tokens": int(tokens), "context_tokens": int(ctx),
                        "saved_claimed": int(claimed), "saved_proven": int(proven),
                        "overhead_tokens": int(overhead), "cost_usd": round(float(cost), 4)}
            for kind, rows, tokens, ctx, claimed, proven, overhead, cost in con.execute(
                "SELECT kind, count(*), sum(tokens), sum(context_tokens), sum(saved_claimed),"
                " sum(saved_proven), sum(overhead_tokens), sum(cost_usd) FROM ledger"
                " GROUP BY kind ORDER BY 2 DESC").fetchall()}
        tasks_with: dict[str, dict[str, int]] = {}
        for name, sql in _SUMMARY_SQL.items():
            tasks_with[name] = {str(k): int(v) for k, v in con.execute(sql).fetchall()}
        out["event_kinds"] = tasks_with.pop("event_kinds")
        out["tasks_with"] = tasks_with
        out["tasks_with"]["facts"] = {
            name: int(fetch_row(con, sql)[0]) for name, sql in (
                ("prune_advice", "SELECT count(DISTINCT task_id) FROM events"
                                 " WHERE kind = 'prune.advice'"),
                ("drop_receipt", "SELECT count(DISTINCT task_id) FROM ledger"
                                 " WHERE kind = 'drop_receipt'"),
                ("provider_usage", "SELECT count(DISTINCT task_id) FROM usage_reports"),
                ("failure", "SELECT count(DISTINCT task_id) FROM failures"),
                ("lesson", "SELECT count(DISTINCT task_id) FROM failures"
                           " WHERE lesson IS NOT NULL"),
                ("redacted_payload", "SELECT count(DISTINCT t.task_id) FROM task_refs t"
                                     " JOIN refs r USING (ref) WHERE r.redactions > 0"),
                ("handoff_child", "SELECT count(*) FROM tasks"
                                  " WHERE parent_task_id IS NOT NULL"),
                ("completed", "SELECT count(*) FROM tasks WHERE status = 'completed'"))}
    return out


def verify_large_home(home: Path, *, sample: int = 5, seed: int = 0) -> dict[str, Any]:
    """``osiris health`` and ``osiris audit`` of ``sample`` tasks (chosen with ``seed``);
    each audit says whether the task is a handoff child."""
    from osiris.engine.audit import audit_task
    from osiris.engine.health import collect_health

    settings = Settings(home=Path(home))
    health = collect_health(settings)
    store = Store(settings)
    try:
        with store.read() as con:
            ids = [(str(t), p is not None) for t, p in con.execute(
                "SELECT task_id, parent_task_id FROM tasks ORDER BY task_id").fetchall()]
        chosen = random.Random(seed).sample(ids, min(sample, len(ids)))  # noqa: S311
        audits = {task: {"child": child, **audit_task(store, task).as_dict()}
                  for task, child in chosen}
    finally:
        store.close()
    return {"healthy": health["healthy"], "journal": health.get("journal"),
            "problems": health["problems"], "audits": audits,
            "lossless": sum(1 for a in audits.values() if a["lossless"]),
            "audited": len(audits)}


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m osiris.harness.bench.large_home HOME --tasks N --events M``."""
    parser = argparse.ArgumentParser(
        prog="python -m osiris.harness.bench.large_home",
        description="Build a large, valid OSIRIS home (for dashboard measurements).")
    parser.add_argument("home", type=Path, help="an empty (or new) OSIRIS home directory")
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--days", type=float, default=30.0,
                        help="spread the tasks over this many days before now")
    parser.add_argument("--handoff-share", type=float, default=0.02,
                        help="share of tasks that are parent/child pairs of a handoff")
    parser.add_argument("--template-scale", type=float, default=1.0,
                        help="length of the template sessions (1 = full)")
    parser.add_argument("--verify", type=int, default=5, metavar="N",
                        help="afterwards run health and audit N tasks (0: skip)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    last = [""]

    def progress(stage: str, done: int, total: int) -> None:
        if stage != last[0] or done == total:
            sys.stderr.write(f"[{time.perf_counter() - started:7.1f}s] {stage} "
                             f"{done:,}/{total:,}\n")
            last[0] = stage

    result = build_large_home(args.home, args.tasks, args.events, seed=args.seed,
                              progress=progress, days=args.days,
                              handoff_share=args.handoff_share,
                              template_scale=args.template_scale)
    if args.verify:
        sys.stderr.write(f"[{time.perf_counter() - started:7.1f}s] verify\n")
        checked = verify_large_home(args.home, sample=args.verify, seed=args.seed)
        result["verify"] = {k: v for k, v in checked.items() if k != "audits"}
        result["verify"]["audits"] = {t: {"lossless": a["lossless"], "child": a["child"],
                                          "violations": a["integrity_violations"][:3]}
                                      for t, a in checked["audits"].items()}
    sys.stdout.write(json.dumps(result, indent=2) + "\n")
    healthy = result.get("verify", {}).get("healthy", True)
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main())
