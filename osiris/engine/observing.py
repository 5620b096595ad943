"""``observe``: the per-turn channel (seal check, provider usage, head and contract).

Payload kinds (action, result, error, file, dropped) are handled in
:mod:`osiris.engine.payloads`; this module holds what every observe does and the
two kinds that describe the agent's prompt.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from osiris.core import budget as budget_policy
from osiris.core.hashing import sha256_hex
from osiris.core.ledger import Usage, normalize_usage, usage_cost
from osiris.core.manifest import render_manifest, seal_of_manifest
from osiris.core.prefix import NO_DRIFT, DriftVerdict, classify_drift, compute_zones
from osiris.core.redaction import scrub
from osiris.core.task_state import TaskState
from osiris.core.volatile import find_volatile
from osiris.engine.context import EngineContext, save_task
from osiris.engine.planning import drift_between, pressure_of, sealed, shown_drift, sizes_of
from osiris.errors import InvalidInputError
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
        raise InvalidInputError("seal must look like 'SEAL=sha256:<64 hex>' (copy it from "
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
                        text: object) -> tuple[TaskState, dict[str, Any], DriftVerdict]:
    """``observe(kind="head"|"contract")``: record the text, find volatile tokens, rehash."""
    if not isinstance(text, str) or not text:
        raise InvalidInputError(f"observe(kind='{kind}') needs result: the text of your "
                                + ("system prompt head" if kind == "head"
                                   else "tool contract (the tool definitions you were given)"))
    scrubbed = scrub(text)
    data = scrubbed.text.encode("utf-8")
    ref, _ = ctx.store.put_blob(data)
    tokens = ctx.counter.count(scrubbed.text)
    tx.record_ref(ref, size_bytes=len(data), tokens=tokens, encoding=ctx.counter.encoding_name,
                  media_type="text/plain", redaction_version=scrubbed.rules_version,
                  redactions=scrubbed.redacted)
    tx.link_ref(state.task_id, ref, f"observe.{kind}")
    digest = sha256_hex(data)
    zones = state.zones
    first_time = (zones.head_digest if kind == "head" else zones.contract_digest) == ""
    if kind == "head":
        zones = replace(zones, head_digest=digest, head_ref=ref, head_tokens=tokens)
    else:
        zones = replace(zones, contract_digest=digest, contract_ref=ref, contract_tokens=tokens)
    new = replace(state, zones=zones)
    drift = NO_DRIFT if first_time else drift_between(ctx, state, new)
    volatile = find_volatile(scrubbed.text, ctx.counter)
    new = sealed(replace(new, drift=shown_drift(state.drift, drift)))
    facts = {"ref": ref, "tokens": tokens, "redacted": scrubbed.redacted,
             "volatile": [v.as_dict() for v in volatile]}
    return new, facts, drift


def observe(ctx: EngineContext, tx: Tx, state: TaskState, *, kind: str, result: object,
            seal: object, usage: object) -> dict[str, Any]:
    """The head/contract kinds and the seal/usage part shared by every kind."""
    seal_drift = check_seal(ctx, state, seal)
    answer: dict[str, Any] = {"task_id": state.task_id, "kind": kind}
    drift = seal_drift or NO_DRIFT
    new = state
    facts: dict[str, Any] = {}
    if kind in ("head", "contract"):
        new, facts, change_drift = observe_prompt_part(ctx, tx, state, kind, result)
        if change_drift.verdict != "none":
            drift = change_drift
        answer.update(facts)
    if seal_drift is not None and seal_drift.verdict == "none" and new.drift != "none" \
            and new is state:
        new = replace(new, drift="none")  # the agent carries the current manifest
    applied = apply_usage(ctx, new, usage) if usage is not None else None
    if applied is not None:
        new = applied[0]
    seq = save_task(tx, new, f"observe.{kind}", {
        "seal_checked": seal is not None, "drift": drift.as_dict(),
        **{k: v for k, v in facts.items() if k != "volatile"},
        "volatile": len(facts.get("volatile", [])), "usage_reported": applied is not None})
    if applied is not None:
        assert isinstance(usage, dict)
        answer["usage"] = store_usage(ctx, tx, new.task_id, usage, *applied[1:], seq)
    answer["drift"] = drift.as_dict()
    if drift.verdict != "none" or compute_zones(new).seal != compute_zones(state).seal:
        answer["manifest"] = render_manifest(new, ctx.counter)
        answer["seal"] = compute_zones(new).seal
    answer["budget"] = budget_policy.budget_state(new.budget)
    return answer
