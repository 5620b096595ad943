"""``handoff``: create, accept, complete and status of delegation contracts.

The parent creates a contract; the child agent accepts it, which starts a child task
linked to the parent (its own manifest; the contract's refs handed over); complete
validates the child's result against the contract with what OSIRIS observed of the
child's work, and hands the result's refs back to the parent.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import replace
from typing import Any

from osiris.core.budget import budget_state
from osiris.core.handoff import Contract, contract_from_dict, evaluate, parse_contract
from osiris.core.hashing import canonical_json
from osiris.engine import planning
from osiris.engine.context import (
    EngineContext,
    check_task_id,
    journal,
    load_task,
    save_task,
)
from osiris.errors import InvalidInputError, NotFoundError, PolicyError
from osiris.store import statements
from osiris.store.state import Tx

HANDOFF_MODES = ("create", "accept", "complete", "status")
_REF = re.compile(r"mem://sha256:[0-9a-f]{64}")


def authorize(tx: Tx, handoff_id: object, principal: str | None) -> None:
    """NotFoundError unless the handoff exists and ``principal`` owns its parent task.

    Another identity gets the same answer as for a handoff that does not exist (no
    existence oracle), whatever the mode. Without a principal (stdio, in process) every
    caller of the home is trusted, as for tasks."""
    row = _row(tx, handoff_id)
    if principal is None:
        return
    owner = tx.con.execute(statements.TASK_OWNER, [row["parent"]]).fetchone()
    if owner is None or owner[0] != principal:
        raise NotFoundError(f"handoff {row['handoff_id']!r} does not exist")


def _row(tx: Tx, handoff_id: object) -> dict[str, Any]:
    if not isinstance(handoff_id, str) or not handoff_id.startswith("h_"):
        raise InvalidInputError("handoff_id is required: the id handoff(mode='create') gave")
    row = tx.con.execute("SELECT parent_task_id, child_task_id, status, contract, result"
                         " FROM handoffs WHERE handoff_id = ?", [handoff_id]).fetchone()
    if row is None:
        raise NotFoundError(f"handoff {handoff_id!r} does not exist")
    return {"handoff_id": handoff_id, "parent": row[0], "child": row[1], "status": row[2],
            "contract": contract_from_dict(json.loads(row[3])),
            "result": json.loads(row[4]) if row[4] else None}


def _visible(tx: Tx, task_id: str, ref: str) -> bool:
    return tx.con.execute(statements.TASK_HOLDS_REF, [task_id, ref]).fetchone() is not None


def create(ctx: EngineContext, tx: Tx, *, task_id: object, contract: object,
           ) -> dict[str, Any]:
    """A new contract from the parent task."""
    parent = load_task(tx, check_task_id(task_id))
    terms = parse_contract(contract, tx.now_us)
    for ref in terms.input_refs:
        # Only what the parent holds can be handed over: no agent is told it has
        # content it never saw.
        if not _visible(tx, parent.task_id, ref):
            raise NotFoundError(f"{ref} is not a ref of task {parent.task_id}; hand over only "
                                "refs this task holds")
    handoff_id = "h_" + secrets.token_hex(8)
    tx.con.execute(
        "INSERT INTO handoffs (handoff_id, parent_task_id, status, contract, created_us,"
        " updated_us) VALUES (?, ?, 'created', ?, ?, ?)",
        [handoff_id, parent.task_id, canonical_json(terms.as_dict()), tx.now_us, tx.now_us])
    parent = replace(parent, handoffs=(*parent.handoffs, handoff_id))
    save_task(tx, parent, "handoff.create", {"handoff_id": handoff_id,
                                             "contract": terms.as_dict()})
    return {"handoff_id": handoff_id, "status": "created", "task_id": parent.task_id,
            "contract": terms.brief(),
            "how": "give the child agent this handoff_id; it calls handoff(mode='accept')"}


def accept(ctx: EngineContext, tx: Tx, *, handoff_id: object, agent_id: str | None,
           owner: str | None) -> dict[str, Any]:
    """Start the child task (idempotent: accepting again returns the same child)."""
    row = _row(tx, handoff_id)
    terms: Contract = row["contract"]
    if row["status"] == "completed":
        raise PolicyError(f"handoff {row['handoff_id']} is already completed")
    if row["child"] is None:
        parent = load_task(tx, row["parent"])
        budget: dict[str, Any] = {}
        if terms.budget_tokens:
            budget["tokens"] = terms.budget_tokens
        if terms.budget_cost_usd:
            budget["cost_usd"] = terms.budget_cost_usd
        started = planning.plan_start(
            ctx, tx, objective=terms.objective, steps=list(terms.steps) or None,
            active_step=0 if terms.steps else None, constraints=list(terms.constraints),
            decisions=[], agent_id=agent_id, project_id=parent.project_id,
            budget=budget or None, owner=owner, parent_task_id=parent.task_id)
        child_id = started["task_id"]
        for ref in terms.input_refs:
            tx.link_ref(child_id, ref, "handoff")
        tx.con.execute("UPDATE handoffs SET status = 'accepted', child_task_id = ?,"
                       " updated_us = ? WHERE handoff_id = ?",
                       [child_id, tx.now_us, row["handoff_id"]])
        journal(tx, "handoff.accept",
                {"handoff_id": row["handoff_id"], "child_task_id": child_id,
                 "input_refs": list(terms.input_refs)}, task_id=parent.task_id)
    else:
        child_id = row["child"]
    child = load_task(tx, child_id, ctx.cost_model)
    answer = planning.manifest_answer(ctx, child, "accept")
    return {"handoff_id": row["handoff_id"], "status": "accepted", "task_id": child_id,
            "parent_task_id": row["parent"], "manifest": answer["manifest"],
            "seal": answer["seal"], "contract": terms.brief()}


def _child_work(tx: Tx, child: str) -> tuple[list[str], list[str]]:
    """Commands that passed and paths written, as OSIRIS observed them in the child."""
    passed = [str(r[0]) for r in tx.con.execute(
        "SELECT l.detail->>'args' FROM calls c JOIN ledger l ON l.task_id = c.task_id AND"
        " l.event_seq = c.seq WHERE c.task_id = ? AND NOT c.is_error AND"
        " l.detail->>'args' IS NOT NULL ORDER BY c.seq", [child]).fetchall()]
    touched: list[str] = []
    for (paths,) in tx.con.execute(
            "SELECT paths FROM calls WHERE task_id = ? AND mutating AND paths <> ''"
            " ORDER BY seq", [child]).fetchall():
        touched += [p for p in str(paths).split("\t") if p and p not in touched]
    return passed, touched


def complete(ctx: EngineContext, tx: Tx, *, handoff_id: object, task_id: object,
             result: object) -> dict[str, Any]:
    """Validate the child's result; on success hand its refs back to the parent."""
    row = _row(tx, handoff_id)
    if row["status"] == "created":
        raise PolicyError(f"handoff {row['handoff_id']} was not accepted yet: "
                          "call handoff(mode='accept') first")
    if row["status"] == "completed":
        raise PolicyError(f"handoff {row['handoff_id']} is already completed")
    if task_id is not None and task_id != row["child"]:
        raise NotFoundError(f"task {task_id!r} is not the child of {row['handoff_id']}")
    child = load_task(tx, row["child"], ctx.cost_model)
    passed, touched = _child_work(tx, child.task_id)
    verdict = evaluate(row["contract"], result, passed_commands=passed, touched_paths=touched,
                       tokens_used=child.budget.tokens_consumed,
                       cost_used=child.budget.cost_consumed_usd, now_us=tx.now_us)
    checks = [{"check": c.check, "passed": c.passed, "detail": c.detail}
              for c in verdict.checks]
    failed = [c for c in checks if not c["passed"]]
    status = "completed" if verdict.accepted else "accepted"
    stored = {"result": result, "accepted": verdict.accepted, "checks": checks}
    tx.con.execute("UPDATE handoffs SET status = ?, result = ?, updated_us = ? WHERE"
                   " handoff_id = ?", [status, canonical_json(stored), tx.now_us,
                                       row["handoff_id"]])
    returned: list[str] = []
    if verdict.accepted:
        for ref in sorted(set(_REF.findall(canonical_json(result)))):
            if _visible(tx, child.task_id, ref):
                tx.link_ref(row["parent"], ref, "handoff.result")
                returned.append(ref)
        child = replace(child, status="completed")
    save_task(tx, child, "handoff.complete", {"handoff_id": row["handoff_id"],
                                              "accepted": verdict.accepted,
                                              "failed": [c["check"] for c in failed]})
    journal(tx, "handoff.result", {"handoff_id": row["handoff_id"],
                                   "accepted": verdict.accepted, "refs_returned": returned},
            task_id=row["parent"])
    answer: dict[str, Any] = {"handoff_id": row["handoff_id"], "task_id": child.task_id,
                              "status": status, "accepted": verdict.accepted}
    if failed:
        answer["failed_checks"] = failed
        answer["how"] = "fix what failed and call handoff(mode='complete') again"
    else:
        answer["checks_passed"] = len(checks)
        answer["refs_returned"] = returned
    return answer


def status(ctx: EngineContext, tx: Tx, *, handoff_id: object) -> dict[str, Any]:
    """Where a handoff stands."""
    row = _row(tx, handoff_id)
    out: dict[str, Any] = {"handoff_id": row["handoff_id"], "status": row["status"],
                           "parent_task_id": row["parent"], "task_id": row["child"],
                           "contract": row["contract"].brief()}
    if row["child"]:
        child = load_task(tx, row["child"], ctx.cost_model)
        done, total = child.plan.progress
        out["progress"] = f"{done}/{total}"
        out["budget"] = budget_state(child.budget)
    if row["result"]:
        out["last_checks"] = [c for c in row["result"]["checks"] if not c["passed"]] or "passed"
    return out
