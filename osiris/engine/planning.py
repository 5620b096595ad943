"""``plan``: start, update, resume and status of a task, and the sealed manifest."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from osiris.core import task_state as ts
from osiris.core.budget import apply_budget_request, budget_remaining, budget_state
from osiris.core.display import escape_controls
from osiris.core.manifest import render_manifest
from osiris.core.prefix import (
    NO_DRIFT,
    DriftVerdict,
    PromptSizes,
    classify_drift,
    common_prefix_tokens,
    compute_zones,
    pinned_text,
    prompt_sizes,
    seal_record,
    worst,
    zone_b_text,
)
from osiris.core.pressure import Pressure, compute_pressure
from osiris.core.task_state import TaskState
from osiris.engine import governance, memory
from osiris.engine.compass import compass_for
from osiris.engine.context import (
    EngineContext,
    check_task_id,
    derived_counts,
    load_task,
    save_task,
)
from osiris.errors import InvalidInputError
from osiris.store.state import Tx

MAX_SEALS = 32


def pressure_of(ctx: EngineContext, state: TaskState) -> Pressure:
    """Context pressure of a task."""
    return compute_pressure(dict(state.measured), state.declared_tokens,
                            ctx.settings.context_window_tokens,
                            ctx.settings.prune_threshold_tokens)


def sizes_of(ctx: EngineContext, state: TaskState) -> PromptSizes:
    """Zone sizes with the rest of the prompt estimated from pressure."""
    base = prompt_sizes(state, ctx.counter, 0)
    used = pressure_of(ctx, state).used_tokens
    return replace(base, rest=max(used - base.head - base.zone_b - base.tail, 0))


def _pinned_change(old: TaskState, new: TaskState) -> str:
    changes = {ts.classify_collection(old.constraints, new.constraints),
               ts.classify_collection(old.decisions, new.decisions)}
    for outcome in ("rewrite", "append"):
        if outcome in changes:
            return outcome
    return "unchanged"


def drift_between(ctx: EngineContext, old: TaskState, new: TaskState,
                  pinned_change: str | None = None) -> DriftVerdict:
    """The drift a change from ``old`` to ``new`` causes, with its PrefillPlan."""
    record = old.seals[-1] if old.seals else seal_record(old)
    zones = compute_zones(new)
    change = pinned_change or _pinned_change(old, new)
    appended = 0
    if change == "append":
        appended = (ctx.counter.count(pinned_text(new.constraints))
                    + ctx.counter.count(pinned_text(new.decisions))
                    - ctx.counter.count(pinned_text(old.constraints))
                    - ctx.counter.count(pinned_text(old.decisions)))
    position = None
    if zones.zone_b != record.zone_b:
        position = common_prefix_tokens(
            ctx.counter,
            zone_b_text(old.objective, old.plan.steps, old.zones.contract_digest),
            zone_b_text(new.objective, new.plan.steps, new.zones.contract_digest))
    return classify_drift(record, zones, pinned_change=change, sizes=sizes_of(ctx, new),
                          model=ctx.cost_model, zone_b_position=position,
                          appended_tokens=max(appended, 0))


def shown_drift(previous: str, drift: DriftVerdict) -> str:
    """What the manifest's ``drift=`` shows: problems (minor, semantic_break, critical)
    stay until the agent resumes or proves it carries the current seal; growth is routine."""
    return worst(previous, drift.verdict) if drift.verdict not in ("none", "normal_growth") \
        else previous


def sealed(state: TaskState) -> TaskState:
    """``state`` with its current seal recorded (so an agent's old seal is recognised)."""
    record = seal_record(state)
    if state.seals and state.seals[-1].seal == record.seal:
        return state
    return replace(state, seals=(*state.seals, record)[-MAX_SEALS:])


def plan_view(state: TaskState) -> dict[str, Any]:
    """Plan progress for answers."""
    return {"steps": list(state.plan.steps), "completed": list(state.plan.completed),
            "active": state.plan.active, "remaining": list(state.plan.remaining)}


def _record_drift(ctx: EngineContext, tx: Tx, state: TaskState, drift: DriftVerdict,
                  event_seq: int) -> None:
    if drift.prefill is None or drift.verdict == "none":
        return
    tx.ledger(kind=f"drift.{drift.verdict}", task_id=state.task_id, event_seq=event_seq,
              encoding=ctx.counter.encoding_name, tokens=drift.prefill.tokens,
              cost_model=ctx.cost_model.name, cost_usd=drift.prefill.extra_cost_usd,
              detail=drift.as_dict())


def manifest_answer(ctx: EngineContext, state: TaskState, mode: str,
                    drift: DriftVerdict = NO_DRIFT) -> dict[str, Any]:
    """The common part of every plan answer: the manifest and where the task stands."""
    manifest = render_manifest(state, ctx.counter)
    tokens = ctx.counter.count(manifest)
    plan = plan_view(state)  # the journal keeps the exact steps; the model sees them escaped
    plan["steps"] = [escape_controls(step) for step in plan["steps"]]
    return {"task_id": state.task_id, "mode": mode, "manifest": manifest,
            "manifest_tokens": tokens, "seal": compute_zones(state).seal,
            "drift": drift.as_dict(), "budget": budget_state(state.budget),
            "plan": plan}


def plan_start(ctx: EngineContext, tx: Tx, *, objective: object, steps: list[str] | None,
               active_step: int | None, constraints: object, decisions: object,
               agent_id: str | None, project_id: str | None, budget: object,
               flags: object = None, owner: str | None = None,
               parent_task_id: str | None = None, announce: bool = True) -> dict[str, Any]:
    """Create a task and return its first manifest (``announce=False``: the caller, a
    client hook, does not show it; the agent gets it when OSIRIS first engages)."""
    objective_text = ts.validate_objective(objective)
    constraint_items = ts.validate_items(constraints, "constraints")
    decision_items = ts.validate_items(decisions, "decisions")
    if any(isinstance(i, dict) for i in constraint_items + decision_items):
        raise InvalidInputError("a new task has no pinned items to rewrite: pass strings")
    task_id = ctx.new_task_id()
    state = TaskState(task_id=task_id, objective=objective_text, created_us=tx.now_us,
                      agent_id=agent_id, project_id=project_id, parent_task_id=parent_task_id)
    state = replace(
        state,
        constraints=ts.append_pinned((), constraint_items),
        decisions=ts.append_pinned((), decision_items),
        plan=ts.set_plan(state.plan, steps if steps is not None else [], active_step),
        budget=apply_budget_request(state.budget, budget),
    )
    state = _apply_flags(state, flags)
    rules, _ = ctx.rules.load(tx)
    state = sealed(replace(state, invariants=len(rules.invariants), manifest_shown=announce))
    tx.insert_task(task_id, objective=objective_text, state=state.as_dict(),
                   project_id=project_id, agent_id=agent_id, parent_task_id=parent_task_id,
                   owner=owner)
    save_task(tx, state, "task.start", {
        "objective": objective_text, "agent_id": agent_id, "project_id": project_id,
        "steps": list(state.plan.steps), "active": state.plan.active,
        "constraints": [[i.text, i.identity] for i in state.constraints],
        "decisions": [[i.text, i.identity] for i in state.decisions],
        "budget": {"token_limit": state.budget.token_limit,
                   "cost_limit_usd": state.budget.cost_limit_usd},
        "flags": dict(state.flags)})
    answer = manifest_answer(ctx, state, "start", NO_DRIFT)
    lessons = governance.project_lessons(tx, project_id)
    if lessons:
        answer["lessons"] = lessons  # what earlier agents learned on this project
    return answer


def _apply_flags(state: TaskState, flags: object) -> TaskState:
    if flags is None:
        return state
    if not isinstance(flags, dict) or not all(isinstance(k, str) and isinstance(v, bool)
                                              for k, v in flags.items()):
        raise InvalidInputError('flags must map names to booleans, e.g. {"tests_passed": true}')
    for name, value in flags.items():
        state = ts.with_flag(state, name, value)
    return state


def _split_items(items: list[Any]) -> tuple[list[str], list[dict[str, Any]]]:
    appends = [i for i in items if isinstance(i, str)]
    rewrites = [i for i in items if isinstance(i, dict)]
    for request in rewrites:
        if not isinstance(request.get("index"), int):
            raise InvalidInputError('to address a pinned item pass {"index": n, "text": "..."}')
    return appends, rewrites


def plan_update(ctx: EngineContext, tx: Tx, *, task_id: str, steps: list[str] | None,
                active_step: int | None, completed: list[int] | None, constraints: object,
                decisions: object, budget: object, flags: object = None) -> dict[str, Any]:
    """Change a task: append pinned items, move the plan, set budget and flags."""
    old = load_task(tx, check_task_id(task_id), ctx.cost_model)
    c_append, c_rewrite = _split_items(ts.validate_items(constraints, "constraints"))
    d_append, d_rewrite = _split_items(ts.validate_items(decisions, "decisions"))
    new = replace(
        old,
        constraints=ts.append_pinned(old.constraints, c_append),
        decisions=ts.append_pinned(old.decisions, d_append),
        plan=ts.set_plan(old.plan, steps, active_step, completed),
        budget=apply_budget_request(old.budget, budget),
    )
    new = _apply_flags(new, flags)
    rejected = []
    # A rewrite of a pinned item is refused: the items stay verbatim. It is still
    # classified (by collection identity) so the agent learns its copy has diverged.
    for name, requests in (("constraints", c_rewrite), ("decisions", d_rewrite)):
        items = getattr(new, name)
        for request in requests:
            proposed = ts.rewrite_pinned(items, request["index"], str(request["text"]))
            outcome = ts.classify_collection(items, proposed)
            if outcome == "rewrite":
                rejected.append({"collection": name, "index": request["index"],
                                 "pinned_text": items[request["index"]].text})
    drift = drift_between(ctx, old, new, "rewrite" if rejected else None)
    new = sealed(replace(new, drift=shown_drift(old.drift, drift), manifest_shown=True))
    body: dict[str, Any] = {"drift": drift.as_dict()}
    if len(new.constraints) > len(old.constraints):
        body["constraints_appended"] = [[i.text, i.identity]
                                        for i in new.constraints[len(old.constraints):]]
    if len(new.decisions) > len(old.decisions):
        body["decisions_appended"] = [[i.text, i.identity]
                                      for i in new.decisions[len(old.decisions):]]
    if new.plan != old.plan:
        body["plan"] = plan_view(new)
    if new.budget != old.budget:
        body["budget"] = {"token_limit": new.budget.token_limit,
                          "cost_limit_usd": new.budget.cost_limit_usd}
    if new.flags != old.flags:
        body["flags"] = dict(new.flags)
    if rejected:
        body["rejected_rewrites"] = rejected
    seq = save_task(tx, new, "task.update", body)
    governance.insert_call(tx, new.task_id, seq, governance.progress_row(seq))
    _record_drift(ctx, tx, new, drift, seq)
    for item in new.decisions[len(old.decisions):]:
        memory.remember(tx, new, "decision", item.identity[:16], item.text)
    answer = manifest_answer(ctx, new, "update", drift)
    if rejected:
        answer["rejected_rewrites"] = rejected
    _add_compass(ctx, tx, new, answer)
    return answer


def _add_compass(ctx: EngineContext, tx: Tx, state: TaskState, answer: dict[str, Any]) -> None:
    guide = compass_for(ctx, tx.con, state)
    if guide is not None:
        answer["compass"] = guide


def _journal_pinned(tx: Tx, task_id: str) -> tuple[list[list[str]], list[list[str]]]:
    """Constraints and decisions as the journal recorded their appends."""
    constraints: list[list[str]] = []
    decisions: list[list[str]] = []
    rows = tx.con.execute(
        "SELECT body FROM events WHERE task_id = ? AND kind IN ('task.start', 'task.update',"
        " 'task.restore') ORDER BY seq", [task_id]).fetchall()
    for (body,) in rows:
        data = json.loads(body)
        if "restored_constraints" in data:
            constraints = data["restored_constraints"]
            decisions = data["restored_decisions"]
            continue
        constraints += data.get("constraints", []) + data.get("constraints_appended", [])
        decisions += data.get("decisions", []) + data.get("decisions_appended", [])
    return constraints, decisions


def _last_state_hash(tx: Tx, task_id: str) -> str | None:
    row = tx.con.execute(
        "SELECT body->>'state_hash' FROM events WHERE task_id = ? AND body LIKE"
        " '%\"state_hash\"%' ORDER BY seq DESC LIMIT 1", [task_id]).fetchone()
    return None if row is None else str(row[0])


def plan_resume(ctx: EngineContext, tx: Tx, *, task_id: str) -> dict[str, Any]:
    """Rebuild the task from the store; check it against the journal; restore pinned items."""
    stored = load_task(tx, check_task_id(task_id))
    # The journal's last word on this task must be the hash of the stored state as it is.
    integrity = {"state_matches_journal": _last_state_hash(tx, task_id) == stored.state_hash()}
    state = derived_counts(tx.con, stored, ctx.cost_model)
    j_constraints, j_decisions = _journal_pinned(tx, task_id)
    expected_c = tuple(ts.PinnedItem(text, identity) for text, identity in j_constraints)
    expected_d = tuple(ts.PinnedItem(text, identity) for text, identity in j_decisions)
    drift = NO_DRIFT
    body: dict[str, Any] = {}
    if expected_c != state.constraints or expected_d != state.decisions \
            or ts.verify_identities(state.constraints) or ts.verify_identities(state.decisions):
        # The stored state's pinned items differ from what the journal recorded: a
        # rewrite behind OSIRIS's back. Restore them verbatim from the journal.
        damaged = replace(state, constraints=state.constraints, decisions=state.decisions)
        state = replace(state, constraints=expected_c, decisions=expected_d)
        drift = replace(drift_between(ctx, damaged, state, "rewrite"),
                        detail="the stored task state had a rewritten pinned item; it was "
                               "restored verbatim from the journal")
        body.update(restored_constraints=j_constraints, restored_decisions=j_decisions)
        integrity["pinned_restored"] = True
    state = sealed(replace(state, drift=drift.verdict, manifest_shown=True))
    save_task(tx, state, "task.restore" if body else "task.resume",
              {**body, "integrity": integrity, "drift": drift.as_dict()})
    answer = manifest_answer(ctx, state, "resume", drift)
    _add_compass(ctx, tx, state, answer)
    answer.update(objective=state.objective,
                  constraints=[i.text for i in state.constraints],
                  decisions=[i.text for i in state.decisions],
                  lessons=list(state.lessons), flags=dict(state.flags),
                  integrity=integrity, pressure=pressure_of(ctx, state).as_dict())
    return answer


def plan_status(ctx: EngineContext, tx: Tx, *, task_id: str) -> dict[str, Any]:
    """Manifest, pressure breakdown, budget and plan progress (journaled as a read)."""
    state = replace(load_task(tx, check_task_id(task_id), ctx.cost_model), manifest_shown=True)
    save_task(tx, state, "task.status", {})
    drift = DriftVerdict(state.drift) if state.drift != "none" else NO_DRIFT
    answer = manifest_answer(ctx, state, "status", drift)
    _add_compass(ctx, tx, state, answer)
    answer.update(pressure=pressure_of(ctx, state).as_dict(),
                  budget_detail={"state": budget_state(state.budget),
                                 "source": state.budget_source,
                                 "token_limit": state.budget.token_limit,
                                 "tokens_consumed": state.budget.tokens_consumed,
                                 "tokens_estimated": state.budget.tokens_estimated,
                                 "cost_limit_usd": state.budget.cost_limit_usd,
                                 "cost_consumed_usd": state.budget.cost_consumed_usd,
                                 "remaining": budget_remaining(state.budget),
                                 "cost_model": ctx.cost_model.name})
    return answer
