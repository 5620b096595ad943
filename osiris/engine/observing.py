"""``observe``: the per-turn channel (seal check, provider usage, head and contract).

Payload kinds (action, result, error, file, dropped) are handled in
:mod:`osiris.engine.payloads`; this module holds what every observe does and the
two kinds that describe the agent's prompt.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from osiris.core import budget as budget_policy
from osiris.core.hashing import sha256_hex
from osiris.core.ledger import Usage, normalize_usage, usage_cost
from osiris.core.manifest import render_manifest, seal_of_manifest
from osiris.core.prefix import NO_DRIFT, DriftVerdict, classify_drift, compute_zones
from osiris.core.task_state import TaskState
from osiris.core.volatile import find_volatile
from osiris.engine import governance, payloads
from osiris.engine.context import EngineContext, derived_counts, journal, save_task
from osiris.engine.payloads import LedgerRow, store_payload
from osiris.engine.planning import drift_between, pressure_of, sealed, shown_drift, sizes_of
from osiris.errors import InvalidInputError
from osiris.store import statements
from osiris.store.state import Tx

OBSERVE_KINDS = ("action", "result", "error", "dropped", "head", "contract", "file")


def check_seal(ctx: EngineContext, state: TaskState, seal: object) -> DriftVerdict | None:
    """Compare the SEAL the agent carries with the current one (None when none passed)."""
    if seal is None:
        return None
    if not isinstance(seal, str):
        raise InvalidInputError("seal must be the SEAL line of your manifest")
    digest = seal_of_manifest(seal)
    if digest is None:
        raise InvalidInputError("seal must look like 'SEAL=sha256:<24 hex>' (copy it from "
                                "the last line of your manifest)")
    current = compute_zones(state)
    if digest == current.seal:
        return NO_DRIFT
    for record in reversed(state.seals):
        if record.seal == digest:
            newer = state.constraints[record.constraints:] + state.decisions[record.decisions:]
            appended = sum(ctx.counter.count(i.text) for i in newer)
            verdict = classify_drift(record, current,
                                     pinned_change="append" if newer else "unchanged",
                                     sizes=sizes_of(ctx, state), model=ctx.cost_model,
                                     appended_tokens=appended)
            return replace(verdict, detail="your manifest is out of date: " + verdict.detail
                           + "; replace it with the manifest in this answer")
    return DriftVerdict("critical", ("seal",),
                        detail="this SEAL was never issued for this task: your manifest was "
                               "altered or belongs to another task; call plan(mode='resume')")


def apply_usage(ctx: EngineContext, state: TaskState, usage: object,
                ) -> tuple[TaskState, Usage, float, int]:
    """The state once provider usage drives the budget; plus the usage, cost and estimate."""
    normalized = normalize_usage(usage)
    estimate = pressure_of(ctx, state).measured_tokens
    cost = usage_cost(normalized, ctx.cost_model)
    budget = state.budget
    if state.budget_source != "provider":
        # From the first report on, the provider's counts are the consumption: they
        # include every token OSIRIS estimated so far.
        budget = replace(budget, tokens_consumed=0, cost_consumed_usd=0.0)
    budget = budget_policy.consume(budget, normalized.prompt_tokens + normalized.output_tokens,
                                   cost)
    state = replace(state, budget=budget, budget_source="provider",
                    declared_tokens=normalized.prompt_tokens)
    return state, normalized, cost, estimate


def store_usage(ctx: EngineContext, tx: Tx, task_id: str, raw: dict[str, Any], usage: Usage,
                cost: float, estimate: int, event_seq: int) -> dict[str, Any]:
    """Persist provider usage beside OSIRIS's estimate; return the answer's usage facts."""
    tx.usage_report(task_id=task_id, event_seq=event_seq, provider=usage.provider,
                    prompt_tokens=usage.prompt_tokens, cache_read_tokens=usage.cache_read_tokens,
                    cache_write_tokens=usage.cache_write_tokens,
                    output_tokens=usage.output_tokens, estimated_prompt_tokens=estimate, raw=raw)
    tx.ledger(kind="usage.provider", task_id=task_id, event_seq=event_seq,
              encoding=f"provider:{usage.provider}", tokens=usage.prompt_tokens,
              cost_model=ctx.cost_model.name, cost_usd=cost,
              detail={**usage.as_dict(), "estimated_prompt_tokens": estimate})
    return {"prompt_tokens": usage.prompt_tokens, "estimated_prompt_tokens": estimate,
            "difference_tokens": usage.prompt_tokens - estimate, "cost_usd": round(cost, 6)}


def observe_prompt_part(ctx: EngineContext, tx: Tx, state: TaskState, kind: str,
                        text: object,
                        ) -> tuple[TaskState, dict[str, Any], DriftVerdict, list[LedgerRow]]:
    """``observe(kind="head"|"contract")``: record the text, find volatile tokens, rehash."""
    if not isinstance(text, str) or not text:
        raise InvalidInputError(f"observe(kind='{kind}') needs result: the text of your "
                                + ("system prompt head" if kind == "head"
                                   else "tool contract (the tool definitions you were given)"))
    stored = store_payload(ctx, tx, state.task_id, text, via=f"observe.{kind}")
    digest = sha256_hex(stored.text.encode("utf-8"))
    zones = state.zones
    old_ref, old_tokens = (zones.head_ref, zones.head_tokens) if kind == "head" \
        else (zones.contract_ref, zones.contract_tokens)
    first_time = old_ref is None
    if kind == "head":
        zones = replace(zones, head_digest=digest, head_ref=stored.ref, head_tokens=stored.tokens)
    else:
        zones = replace(zones, contract_digest=digest, contract_ref=stored.ref,
                        contract_tokens=stored.tokens)
    new = replace(state, zones=zones)
    drift = NO_DRIFT if first_time else drift_between(ctx, state, new)
    volatile = find_volatile(stored.text, ctx.counter)
    new = sealed(replace(new, drift=shown_drift(state.drift, drift)))
    facts = {"ref": stored.ref, "tokens": stored.tokens, "redacted": stored.redacted,
             "volatile": [v.as_dict() for v in volatile]}
    # The head/contract is part of the agent's prompt: it replaces the previous one.
    rows: list[LedgerRow] = []
    if old_ref is not None and old_ref != stored.ref:
        rows.append({"kind": f"prompt.{kind}", "ref": old_ref, "tokens": old_tokens,
                     "context_tokens": -old_tokens, "detail": {"kind": kind}})
    if old_ref != stored.ref:
        rows.append({"kind": f"prompt.{kind}", "ref": stored.ref, "tokens": stored.tokens,
                     "context_tokens": stored.tokens, "detail": {"kind": kind}})
    return new, facts, drift, rows


def _idle_seconds(tx: Tx, task_id: str) -> float:
    row = tx.con.execute(statements.LAST_EVENT_TS, [task_id]).fetchone()
    last = row[0] if row and row[0] is not None else tx.now_us
    return max(tx.now_us - int(last), 0) / 1e6


@dataclass
class _Outcome:
    """What one observe kind produced, before the journal event is written."""

    state: TaskState
    facts: dict[str, Any]
    rows: list[LedgerRow]
    drift: DriftVerdict
    call_row: governance.CallRow | None = None


def _by_kind(ctx: EngineContext, tx: Tx, state: TaskState, *, kind: str, tool: str | None,
             args: object, result: object, path: str | None, fixed_mode: str | None,
             routed: str | None = None) -> _Outcome:
    if kind in ("head", "contract"):
        new, facts, drift, rows = observe_prompt_part(ctx, tx, state, kind, result)
        return _Outcome(new, facts, rows, drift)
    if kind == "dropped":
        facts, rows = payloads.drop_receipt(ctx, tx, state, result, routed)
        return _Outcome(state, facts, rows, NO_DRIFT)
    if kind in payloads.PAYLOAD_KINDS or result is not None:
        new, facts, rows = payloads.observe_payload(
            ctx, tx, state, kind="result" if kind == "action" else kind, tool=tool, args=args,
            result=result, path=path, fixed_mode=fixed_mode, routed=routed)
    else:  # an action without a result
        call_args = payloads.parse_args(args)
        args_text, _ = payloads.args_fingerprint(tool or "unknown", call_args)
        new = state
        facts = {"recorded": True,
                 "_call": {"tool": tool or "unknown", "args": call_args, "output": None}}
        rows = [{"kind": "action", "tokens": 0,
                 "detail": {"kind": "action", "tool": tool, "args": args_text[:500]}}]
    # Every call goes through LoopGuard and the failure/lesson/test-flag bookkeeping.
    rules, _ = ctx.rules.load(tx)
    call = facts.pop("_call")
    new, loop, call_row = governance.observe_call(
        ctx, tx, new, tool=call["tool"], args=call["args"], kind=kind, ref=facts.get("ref"),
        output=call["output"], output_digest=call.get("output_digest"), rules=rules)
    if loop is not None:
        facts["loop"] = loop
    return _Outcome(replace(new, invariants=len(rules.invariants)), facts, rows, NO_DRIFT,
                    call_row)


def _journal_facts(facts: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in facts.items()
           if k not in ("volatile", "preview", "content", "hint", "reason", "loop", "shown")}
    out["volatile"] = len(facts.get("volatile", []))
    if "loop" in facts:
        out["loop"] = [p["pattern"] for p in facts["loop"]["patterns"]]
    return out


def observe(ctx: EngineContext, tx: Tx, state: TaskState, *, kind: str, tool: str | None,
            args: object, result: object, path: str | None, seal: object, usage: object,
            fixed_mode: str | None = None, routed: str | None = None) -> dict[str, Any]:
    """Every observe: seal check, the kind's own work, usage, journal, ledger, prune advice
    (``routed``: see :func:`osiris.engine.payloads.observe_payload`)."""
    idle_s = _idle_seconds(tx, state.task_id)
    seal_drift = check_seal(ctx, state, seal)
    outcome = _by_kind(ctx, tx, state, kind=kind, tool=tool, args=args, result=result,
                       path=path, fixed_mode=fixed_mode, routed=routed)
    drift = outcome.drift if outcome.drift.verdict != "none" else seal_drift or NO_DRIFT
    new = outcome.state
    if seal_drift is not None and seal_drift.verdict == "none" and new.drift != "none" \
            and kind not in ("head", "contract"):
        new = replace(new, drift="none")  # the agent carries the current manifest
    applied = apply_usage(ctx, new, usage) if usage is not None else None
    if applied is not None:
        new = applied[0]
    # A task a client hook started has not shown its manifest yet: it comes with the
    # first payload OSIRIS takes out of the context (until then OSIRIS costs nothing).
    introduce = not new.manifest_shown and outcome.facts.get("mode") in ("light", "standard",
                                                                          "full")
    if introduce:
        new = replace(new, manifest_shown=True)
    seq = save_task(tx, new, f"observe.{kind}", {
        "tool": tool, "seal_checked": seal is not None, "drift": drift.as_dict(),
        **_journal_facts(outcome.facts), "usage_reported": applied is not None})
    if outcome.call_row is not None:
        governance.insert_call(tx, new.task_id, seq, outcome.call_row)
    for row in outcome.rows:
        tx.ledger(task_id=new.task_id, event_seq=seq, encoding=ctx.counter.encoding_name,
                  cost_model=ctx.cost_model.name,
                  cost_usd=ctx.cost_model.token_cost(int(row.get("tokens", 0))), **row)
    answer: dict[str, Any] = {"task_id": state.task_id, "kind": kind, **outcome.facts}
    if applied is not None:
        assert isinstance(usage, dict)
        answer["usage"] = store_usage(ctx, tx, new.task_id, usage, *applied[1:], seq)
    if outcome.call_row is not None:
        advice = _prune(ctx, tx, new, idle_s)
        if advice is not None:
            answer["prune"] = advice
    answer["drift"] = drift.as_dict()
    if introduce or drift.verdict != "none" or \
            compute_zones(new).seal != compute_zones(state).seal:
        answer["manifest"] = render_manifest(new, ctx.counter)
        answer["seal"] = compute_zones(new).seal
    answer["budget"] = budget_policy.budget_state(new.budget)
    return answer


def _prune(ctx: EngineContext, tx: Tx, state: TaskState, idle_s: float,
           ) -> dict[str, Any] | None:
    """Auto-prune: advice when pressure (or an expired cache) calls for it."""
    current = derived_counts(tx.con, state, ctx.cost_model)
    used = pressure_of(ctx, current).used_tokens
    sizes = sizes_of(ctx, current)
    advice = payloads.prune_advice(ctx, tx, current, used, idle_s, sizes.head + sizes.zone_b)
    if not advice.triggered or not advice.drop:
        return None
    journal(tx, "prune.advice", advice.as_record(), task_id=state.task_id)
    return advice.as_dict()
