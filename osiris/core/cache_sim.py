"""Prompt-cache simulator: what a sequence of prompts costs under a cost model.

A prompt is a sequence of segments, each with a content hash and a token count
(system, tool definitions, each message, …). Consecutive prompts share a cached
prefix up to the first differing segment, provided a cache entry for that prefix
was written within the TTL and is at least the minimum cacheable length:

* ``breakpoints`` (Anthropic): entries are written at segments marked as cache
  breakpoints and at the end of each prompt; a hit needs an entry that is an exact
  prefix of the new prompt. Tokens between the hit and the last entry written are
  billed as cache writes; a hit refreshes the entry's TTL.
* ``any_prefix`` (OpenAI): every segment boundary can hit; the cached length is
  rounded down to the granularity (128 tokens) and writes carry no surcharge.
* ``none``: every token is plain input.

The benchmark and ``osiris replay`` use this function; the engine uses the same
cost models for PrefillPlan and the ledger.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from osiris.core.cost_models import CostModel
from osiris.core.hashing import sha256_hex


@dataclass(frozen=True)
class Segment:
    """A piece of a prompt."""

    key: str
    """Content hash (equal keys = identical tokens)."""
    tokens: int
    breakpoint: bool = False
    """A cache breakpoint follows this segment (Anthropic ``cache_control``)."""


@dataclass(frozen=True)
class Prompt:
    """The prompt sent at one turn."""

    t_s: float
    segments: tuple[Segment, ...]

    @property
    def tokens(self) -> int:
        """Total input tokens."""
        return sum(s.tokens for s in self.segments)


@dataclass(frozen=True)
class TurnCost:
    """How one turn's input was billed."""

    turn: int
    total_tokens: int
    uncached_tokens: int
    cache_write_tokens: int
    cache_read_tokens: int
    cost_usd: float


def _cached_length(tokens: int, model: CostModel) -> int:
    if tokens < model.min_cacheable_tokens:
        return 0
    if model.granularity_tokens > 1:
        over = tokens - model.min_cacheable_tokens
        return tokens - over % model.granularity_tokens
    return tokens


def simulate(prompts: Iterable[Prompt], model: CostModel) -> list[TurnCost]:
    """Bill each prompt in order; the cache carries over between turns."""
    cache: dict[str, tuple[int, float]] = {}  # prefix key -> (tokens, expires_at)
    out: list[TurnCost] = []
    for turn, prompt in enumerate(prompts):
        total = prompt.tokens
        if model.matching == "none" or model.ttl_s <= 0:
            out.append(TurnCost(turn, total, total, 0, 0, model.token_cost(total)))
            continue
        keys: list[str] = []
        cums: list[int] = []
        key, cum = "", 0
        for segment in prompt.segments:
            key = sha256_hex(f"{key}|{segment.key}")
            cum += segment.tokens
            keys.append(key)
            cums.append(cum)
        last = len(keys) - 1
        hit = -1
        for k in range(last, -1, -1):
            entry = cache.get(keys[k])
            if entry is not None and entry[1] >= prompt.t_s:
                hit = k
                break
        read = cache[keys[hit]][0] if hit >= 0 else 0
        if hit >= 0:  # a hit refreshes the TTL of the entry and of the shorter ones
            for k in range(hit + 1):
                if keys[k] in cache:
                    cache[keys[k]] = (cache[keys[k]][0], prompt.t_s + model.ttl_s)
        written_to = read
        for k in range(hit + 1, last + 1):
            eligible = model.matching == "any_prefix" or prompt.segments[k].breakpoint \
                or k == last
            length = _cached_length(cums[k], model)
            if eligible and length > 0:
                cache[keys[k]] = (length, prompt.t_s + model.ttl_s)
                written_to = max(written_to, length)
        write = written_to - read
        uncached = total - read - write
        cost = model.token_cost(uncached) + model.token_cost(write, model.write_multiplier) \
            + model.token_cost(read, model.read_multiplier)
        out.append(TurnCost(turn, total, uncached, write, read, cost))
    return out
