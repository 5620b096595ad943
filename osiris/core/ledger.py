"""Ledger arithmetic: provider usage, billed cost of a turn, and savings.

The ledger records, per event, tokens with the encoding that counted them, the
cost under a named cost model, savings claimed (OSIRIS externalized a payload) vs
proven (the agent sent a drop receipt), and OSIRIS's own overhead. Provider-reported
usage is ground truth: it is stored beside OSIRIS's estimate, never mixed into it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from osiris.core.cost_models import CostModel
from osiris.errors import InvalidInputError

_INT_FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens",
               "cache_read_input_tokens", "prompt_tokens", "completion_tokens",
               "cached_tokens", "cached_input_tokens", "total_tokens")


@dataclass(frozen=True)
class Usage:
    """One model call's token usage as the provider reported it, normalised."""

    provider: str
    """``anthropic`` (input excludes cached tokens), ``openai`` (prompt includes them)."""
    prompt_tokens: int
    """All input tokens of the call, cached or not."""
    cache_read_tokens: int
    cache_write_tokens: int
    output_tokens: int

    @property
    def uncached_tokens(self) -> int:
        """Input billed at the plain price."""
        return max(self.prompt_tokens - self.cache_read_tokens - self.cache_write_tokens, 0)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def normalize_usage(raw: object) -> Usage:
    """Read Anthropic-style or OpenAI-style usage; InvalidInputError on anything else."""
    if not isinstance(raw, dict):
        raise InvalidInputError("usage must be the provider's usage object, e.g. "
                                '{"input_tokens": 1200, "cache_read_input_tokens": 30000, '
                                '"output_tokens": 300}')
    values: dict[str, int] = {}
    for name in _INT_FIELDS:
        if name in raw and raw[name] is not None:
            value = raw[name]
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise InvalidInputError(f"usage.{name} must be a non-negative integer")
            values[name] = value
    details = raw.get("prompt_tokens_details") or raw.get("input_tokens_details")
    if isinstance(details, dict) and isinstance(details.get("cached_tokens"), int):
        values.setdefault("cached_tokens", details["cached_tokens"])
    if "prompt_tokens" in values:
        return Usage("openai", values["prompt_tokens"], values.get("cached_tokens", 0), 0,
                     values.get("completion_tokens", values.get("output_tokens", 0)))
    if "cached_input_tokens" in values:  # Codex CLI: input_tokens includes the cached part
        return Usage("openai", values.get("input_tokens", 0), values["cached_input_tokens"], 0,
                     values.get("output_tokens", 0))
    if "input_tokens" in values or "cache_read_input_tokens" in values:
        read = values.get("cache_read_input_tokens", 0)
        write = values.get("cache_creation_input_tokens", 0)
        return Usage("anthropic", values.get("input_tokens", 0) + read + write, read, write,
                     values.get("output_tokens", 0))
    raise InvalidInputError("usage has no token counts: expected input_tokens (Anthropic) "
                            "or prompt_tokens (OpenAI)")


def usage_cost(usage: Usage, model: CostModel) -> float:
    """What the reported input cost under ``model`` (output tokens are not modelled)."""
    return (model.token_cost(usage.uncached_tokens)
            + model.token_cost(usage.cache_write_tokens, model.write_multiplier)
            + model.token_cost(usage.cache_read_tokens, model.read_multiplier))
