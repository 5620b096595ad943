"""Budget policy: token and cost limits per task, with ok / warn / over states."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from osiris.core.task_state import Budget
from osiris.errors import InvalidInputError


def budget_state(budget: Budget) -> str:
    """``ok``, ``warn`` (past warn_ratio of a limit) or ``over`` (past a limit)."""
    ratios = []
    if budget.token_limit:
        ratios.append(budget.tokens_consumed / budget.token_limit)
    if budget.cost_limit_usd:
        ratios.append(budget.cost_consumed_usd / budget.cost_limit_usd)
    worst = max(ratios, default=0.0)
    if worst > 1.0:
        return "over"
    if worst >= budget.warn_ratio:
        return "warn"
    return "ok"


def budget_remaining(budget: Budget) -> dict[str, Any]:
    """What is left of each limit (None = unlimited)."""
    return {
        "tokens": None if budget.token_limit is None
        else budget.token_limit - budget.tokens_consumed,
        "cost_usd": None if budget.cost_limit_usd is None
        else round(budget.cost_limit_usd - budget.cost_consumed_usd, 6),
    }


def apply_budget_request(budget: Budget, request: object) -> Budget:
    """Set limits from a ``budget`` argument: ``{"tokens": int, "cost_usd": float,
    "estimated_tokens": int, "warn_ratio": float}`` (all optional)."""
    if request is None:
        return budget
    if not isinstance(request, dict):
        raise InvalidInputError('budget must be an object like {"tokens": 200000, '
                                '"cost_usd": 2.5}')
    unknown = set(request) - {"tokens", "cost_usd", "estimated_tokens", "warn_ratio"}
    if unknown:
        raise InvalidInputError(f"unknown budget field(s) {sorted(unknown)}: use tokens, "
                                "cost_usd, estimated_tokens, warn_ratio")
    out = budget
    if "tokens" in request:
        tokens = request["tokens"]
        if tokens is not None and (not isinstance(tokens, int) or isinstance(tokens, bool)
                                   or tokens <= 0):
            raise InvalidInputError("budget.tokens must be a positive integer or null")
        out = replace(out, token_limit=tokens)
    if "cost_usd" in request:
        cost = request["cost_usd"]
        if cost is not None and (not isinstance(cost, (int, float)) or isinstance(cost, bool)
                                 or cost <= 0):
            raise InvalidInputError("budget.cost_usd must be a positive number or null")
        out = replace(out, cost_limit_usd=None if cost is None else float(cost))
    if "estimated_tokens" in request:
        estimated = request["estimated_tokens"]
        if not isinstance(estimated, int) or isinstance(estimated, bool) or estimated < 0:
            raise InvalidInputError("budget.estimated_tokens must be a non-negative integer")
        out = replace(out, tokens_estimated=estimated)
    if "warn_ratio" in request:
        ratio = request["warn_ratio"]
        if not isinstance(ratio, (int, float)) or not 0 < ratio <= 1:
            raise InvalidInputError("budget.warn_ratio must be a number in (0, 1]")
        out = replace(out, warn_ratio=float(ratio))
    return out


def consume(budget: Budget, tokens: int, cost_usd: float) -> Budget:
    """Budget after consuming ``tokens`` costing ``cost_usd``."""
    return replace(budget, tokens_consumed=budget.tokens_consumed + max(tokens, 0),
                   cost_consumed_usd=round(budget.cost_consumed_usd + max(cost_usd, 0.0), 8))
