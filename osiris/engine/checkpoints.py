"""``checkpoint``: snapshot, resume, report, compact, trim, clear, restore.

A snapshot stores the task state split into parts (one blob each) plus a small
index blob; unchanged parts are shared with earlier snapshots, so many snapshots
cost little. Compaction modes take a snapshot and list what leaves the context with
refs and summaries; ``restore`` gives back the exact bytes, in pages bounded by
``max_tokens`` whose continuation is lossless.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import replace
from typing import Any

from osiris.core import compaction
from osiris.core.budget import budget_state
from osiris.core.hashing import canonical_json
from osiris.core.manifest import render_manifest
from osiris.core.task_state import TaskState
from osiris.engine.audit import audit_task
from osiris.engine.context import EngineContext, check_task_id, load_task, save_task
from osiris.engine.payloads import CHECKPOINT_PREFIX, context_items
from osiris.engine.planning import plan_view
from osiris.errors import InvalidInputError, NotFoundError
from osiris.store import statements
from osiris.store.db import fetch_row
from osiris.store.state import Tx

CHECKPOINT_MODES = ("snapshot", "resume", "report", "compact", "trim", "clear", "restore")


def _put_json(ctx: EngineContext, tx: Tx, task_id: str, text: str) -> tuple[str, int]:
    """Store a JSON blob for the task; return its ref and the bytes newly written."""
    data = text.encode("utf-8")
    ref, created = ctx.store.put_blob(data)
    tx.record_ref(ref, size_bytes=len(data), tokens=ctx.counter.count(text),
                  encoding=ctx.counter.encoding_name, media_type="application/json",
                  redaction_version=None, redactions=0)
    tx.link_ref(task_id, ref, "checkpoint")
    return ref, len(data) if created else 0


def take_snapshot(ctx: EngineContext, tx: Tx, state: TaskState) -> dict[str, Any]:
    """Store the state as deduplicated parts and an index; return the index facts."""
    core, parts = compaction.split_state(state.as_dict())
    bytes_new = 0
    part_refs: dict[str, str] = {}
    for name, text in parts.items():
        ref, written = _put_json(ctx, tx, state.task_id, text)
        part_refs[name] = ref
        bytes_new += written
    index = canonical_json({"format": "osiris-snapshot/1", "task_id": state.task_id,
                            "core": core, "parts": part_refs,
                            "state_hash": state.state_hash()})
    index_ref, written = _put_json(ctx, tx, state.task_id, index)
    return {"state_ref": index_ref, "bytes_new": bytes_new + written,
            "bytes_total": sum(len(t.encode()) for t in parts.values()) + len(index.encode())}


def load_snapshot(ctx: EngineContext, state_ref: str) -> TaskState:
    """Reassemble a snapshot's state from its verified blobs."""
    index = json.loads(ctx.store.refs.get(state_ref))
    parts = {name: json.loads(ctx.store.refs.get(ref)) for name, ref in index["parts"].items()}
    state = TaskState.from_dict(compaction.join_state(index["core"], parts))
    if state.state_hash() != index["state_hash"]:
        raise NotFoundError(f"snapshot {state_ref} does not reassemble to the state it saved")
    return state


def _checkpoint_row(tx: Tx, task_id: str, checkpoint_id: object) -> dict[str, Any]:
    if not isinstance(checkpoint_id, str) or not checkpoint_id.startswith(CHECKPOINT_PREFIX):
        raise InvalidInputError("checkpoint_id is required: the id a checkpoint answer gave "
                                "(starts with 'c_')")
    row = tx.con.execute("SELECT mode, state_ref, body, created_us FROM checkpoints WHERE"
                         " checkpoint_id = ? AND task_id = ?", [checkpoint_id, task_id]
                         ).fetchone()
    if row is None:
        raise NotFoundError(f"checkpoint {checkpoint_id!r} does not exist for this task")
    return {"mode": row[0], "state_ref": row[1], "body": json.loads(row[2]),
            "created_us": row[3]}


def _summary_of(ctx: EngineContext, ref: str) -> str:
    text = ctx.store.refs.get(ref).decode("utf-8", errors="replace")
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first[:80] + ("…" if len(first) > 80 else "")


def _new_checkpoint(ctx: EngineContext, tx: Tx, state: TaskState, mode: str,
                    ) -> dict[str, Any]:
    checkpoint_id = CHECKPOINT_PREFIX + secrets.token_hex(8)
    snap = take_snapshot(ctx, tx, state)
    answer: dict[str, Any] = {"task_id": state.task_id, "mode": mode,
                              "checkpoint_id": checkpoint_id, **snap}
    body: dict[str, Any] = {"bytes_new": snap["bytes_new"]}
    rows: list[dict[str, Any]] = []
    if mode in compaction.COMPACTION_MODES:
        plan = compaction.plan_compaction(mode, context_items(tx, state.task_id))
        leaving: list[dict[str, Any]] = [
            {"ref": i.ref, "tokens": i.tokens, "kind": i.kind, "tool": i.tool, "zone": i.zone,
             "summary": _summary_of(ctx, i.ref)} for i in plan.leaving]
        block = compaction.summary_block(plan, render_manifest(state, ctx.counter),
                                         checkpoint_id,
                                         {item["ref"]: item["summary"] for item in leaving})
        body.update(leaving=leaving, summary=block)
        answer.update(leaving=len(leaving), tokens_leaving=plan.tokens_leaving, summary=block,
                      how="replace the listed payloads with this summary (compact or clear "
                          "your context), then send observe(kind='dropped', "
                          f"result='{checkpoint_id}'); checkpoint(mode='restore') gives "
                          "every byte back")
        for item in plan.leaving:
            claimed, proven = fetch_row(tx.con, "SELECT coalesce(sum(saved_claimed), 0),"
                                        " coalesce(sum(saved_proven), 0) FROM ledger WHERE"
                                        " task_id = ? AND ref = ?", [state.task_id, item.ref])
            # Payloads kept inline until now become droppable: claim them here.
            if int(claimed) - int(proven) <= 0:
                rows.append({"kind": f"compaction.{mode}", "ref": item.ref,
                             "tokens": item.tokens, "saved_claimed": item.tokens})
    tx.con.execute(statements.CHECKPOINT.sql,
                   [checkpoint_id, state.task_id, tx.now_us, mode, snap["state_ref"],
                    canonical_json(body)])
    seq = save_task(tx, state, f"checkpoint.{mode}",
                    {"checkpoint_id": checkpoint_id, "state_ref": snap["state_ref"],
                     "bytes_new": snap["bytes_new"],
                     "leaving": [i["ref"] for i in body.get("leaving", [])]})
    for row in rows:
        tx.ledger(task_id=state.task_id, event_seq=seq, encoding=ctx.counter.encoding_name,
                  cost_model=ctx.cost_model.name, **row)
    return answer


def _page(text: str, offset: int, max_tokens: int, ctx: EngineContext) -> tuple[str, int]:
    """The longest prefix of ``text[offset:]`` within ``max_tokens`` (line-aligned when it
    can be); returns the piece and the offset after it."""
    rest = text[offset:]
    if ctx.counter.count(rest) <= max_tokens:
        return rest, len(text)
    low, high = 0, len(rest)
    while low < high:
        mid = (low + high + 1) // 2
        if ctx.counter.count(rest[:mid]) <= max_tokens:
            low = mid
        else:
            high = mid - 1
    cut = rest.rfind("\n", 0, low) + 1 or low
    cut = max(cut, 1)
    return rest[:cut], offset + cut


def restore(ctx: EngineContext, tx: Tx, state: TaskState, checkpoint_id: object, *,
            item: int = 0, offset: int = 0, max_tokens: int) -> dict[str, Any]:
    """The exact bytes of what a checkpoint took out (or of its snapshot), paginated."""
    record = _checkpoint_row(tx, state.task_id, checkpoint_id)
    if record["mode"] in compaction.COMPACTION_MODES:
        sources = [entry["ref"] for entry in record["body"].get("leaving", [])]
    else:
        sources = [record["state_ref"]]
    if not 0 <= item <= len(sources):
        raise InvalidInputError(f"item must be between 0 and {len(sources)}")
    pieces: list[dict[str, Any]] = []
    budget = max_tokens
    next_arg: dict[str, Any] | None = None
    while item < len(sources):
        ref = sources[item]
        if record["mode"] in compaction.COMPACTION_MODES:
            text = ctx.store.refs.get(ref).decode("utf-8")
        else:
            text = canonical_json(load_snapshot(ctx, ref).as_dict())
        piece, after = _page(text, offset, budget, ctx)
        if not piece and pieces:
            next_arg = {"checkpoint_id": checkpoint_id, "item": item, "offset": offset}
            break
        pieces.append({"ref": ref, "offset": offset, "text": piece, "complete": after >= len(text)})
        budget -= ctx.counter.count(piece)
        if after < len(text):
            next_arg = {"checkpoint_id": checkpoint_id, "item": item, "offset": after}
            break
        item, offset = item + 1, 0
        if budget <= 0 and item < len(sources):
            next_arg = {"checkpoint_id": checkpoint_id, "item": item, "offset": 0}
            break
    return {"task_id": state.task_id, "mode": "restore", "checkpoint_id": checkpoint_id,
            "of": record["mode"], "items": pieces, "truncated": next_arg is not None,
            "next": next_arg}


def resume_from(ctx: EngineContext, tx: Tx, state: TaskState, checkpoint_id: object,
                ) -> dict[str, Any]:
    """Everything needed to continue from a checkpoint (the live state is not rewound:
    pinned items are append-only)."""
    record = _checkpoint_row(tx, state.task_id, checkpoint_id)
    then = load_snapshot(ctx, record["state_ref"])
    return {"task_id": state.task_id, "mode": "resume", "checkpoint_id": checkpoint_id,
            "of": record["mode"], "created_us": record["created_us"],
            "manifest": render_manifest(then, ctx.counter), "objective": then.objective,
            "constraints": [i.text for i in then.constraints],
            "decisions": [i.text for i in then.decisions], "plan": plan_view(then),
            "leaving": [{"ref": e["ref"], "summary": e["summary"]}
                        for e in record["body"].get("leaving", [])],
            "current_manifest": render_manifest(state, ctx.counter)}


def report(ctx: EngineContext, tx: Tx, state: TaskState) -> dict[str, Any]:
    """A completion report of the task: progress, decisions, files, savings, audit."""
    totals = fetch_row(tx.con,
        "SELECT coalesce(sum(CASE WHEN kind = 'payload.externalize' THEN tokens END), 0),"
        " coalesce(sum(saved_claimed), 0), coalesce(sum(saved_proven), 0),"
        " coalesce(sum(overhead_tokens), 0), coalesce(sum(cost_usd) FILTER"
        " (WHERE kind LIKE 'usage.%'), 0), count(*) FILTER (WHERE kind LIKE 'drift.%')"
        " FROM ledger WHERE task_id = ?", [state.task_id])
    externalized, claimed, proven, overhead, cost, drifts = totals
    audit = audit_task(ctx.store, state.task_id)
    done = [state.plan.steps[i] for i in state.plan.completed]
    left = [state.plan.steps[i] for i in state.plan.remaining]
    return {"task_id": state.task_id, "mode": "report", "objective": state.objective,
            "status": state.status, "progress": f"{len(done)}/{len(state.plan.steps)}",
            "completed_steps": done,
            "active_step": None if state.plan.active is None
            else state.plan.steps[state.plan.active],
            "remaining_steps": left, "decisions": [i.text for i in state.decisions],
            "constraints": [i.text for i in state.constraints],
            "files": [f.path for f in state.files], "refs": state.refs,
            "failures": [{"signature": f.signature, "attempts": f.attempts,
                          "resolved": f.resolved} for f in state.failures],
            "lessons": list(state.lessons),
            "ledger": {"tokens_externalized": int(externalized),
                       "saved_claimed": int(claimed), "saved_proven": int(proven),
                       "osiris_overhead_tokens": int(overhead),
                       "provider_cost_usd": round(float(cost), 6),
                       "drift_events": int(drifts)},
            "budget": budget_state(state.budget),
            "audit": {"lossless": audit.lossless, "items_verified": audit.items_verified,
                      "items_externalized": audit.items_externalized}}


def checkpoint(ctx: EngineContext, tx: Tx, *, task_id: object, mode: str,
               checkpoint_id: object = None, item: int = 0, offset: int = 0,
               max_tokens: int | None = None) -> dict[str, Any]:
    """Dispatch a checkpoint mode."""
    if mode not in CHECKPOINT_MODES:
        raise InvalidInputError(f"unknown checkpoint mode {mode!r}: use one of "
                                + ", ".join(CHECKPOINT_MODES))
    state = load_task(tx, check_task_id(task_id), ctx.cost_model)
    if mode in ("snapshot", "compact", "trim", "clear"):
        return _new_checkpoint(ctx, tx, state, mode)
    bound = max_tokens or ctx.settings.recall_max_tokens
    if mode == "restore":
        answer = restore(ctx, tx, state, checkpoint_id, item=item, offset=offset,
                         max_tokens=bound)
    elif mode == "resume":
        answer = resume_from(ctx, tx, state, checkpoint_id)
    else:
        answer = report(ctx, tx, replace(state))
    save_task(tx, state, f"checkpoint.{mode}",
              {"checkpoint_id": checkpoint_id} if checkpoint_id else {})
    return answer
