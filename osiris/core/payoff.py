"""The payoff of routing one output: does keeping it out of the prompt pay for itself?

A client that owns its history (Claude Code) re-sends every tool result in every later
request until it compacts. Under a provider's prompt cache a result of ``T`` tokens is
written once (``write`` × the input price) and read back by each later request (``read``
×), so showing ``S`` tokens instead of ``T`` saves::

    saving = (T - S) × (write + read × n)

where ``n`` is the number of later requests before the result leaves the prompt (the
next compaction, or the session's end). The price of routing is the chance ``p`` that the
agent needs what was not shown and asks for it: one extra request, which re-sends the
whole prompt ``C`` from the cache and writes the part it gets back (``share`` × (T - S))
into the prompt for the rest of the session::

    recall = p × (read × C + write × K + share × (T - S) × (write + read × n))

(``K``: the request's own tokens, the call and its answer's frame.) An output is routed
when ``saving - recall`` is above ``margin`` × the saving, so a close call passes.

``n`` is not known when the output arrives. Two bounds hold it: the session goes on
about as long again as it has gone so far (at least ``min_future`` requests: a session
that has just begun has most of its requests ahead), and it cannot go past the
client's compaction threshold, which the prompt approaches by ``growth_tokens`` a
request. Every input and constant is in the returned :class:`Payoff`, which the
engine journals (``route.payoff``) so a notebook can replay and tune the decision.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

KINDS = ("read", "shell", "mcp")


@dataclass(frozen=True)
class PayoffConstants:
    """The decision's constants (defaults: Anthropic's 5-minute cache, chosen on the
    tuning half of the sessions; see ``docs/hooks.md``, the routing features)."""

    write: float = 1.25
    """A cache write, in input-price units."""
    read: float = 0.1
    """A cache read, in input-price units."""
    recall_read: float = 0.45
    """Chance the agent needs the unshown part of a whole-file read (files are often
    read to be edited; what is edited may be anywhere)."""
    recall_shell: float = 0.2
    """… of a shell output (the preview keeps failures, errors and the summary)."""
    recall_mcp: float = 0.3
    """… of another MCP server's output."""
    share: float = 0.35
    """The part of the unshown tokens a recall brings back (a range, a grep)."""
    request_tokens: int = 400
    """The extra request's own tokens: the call, its answer's frame."""
    min_future: int = 8
    """The fewest later requests a session is expected to have."""
    growth_tokens: int = 500
    """Tokens a request adds to the prompt: the median step between two requests of the
    Claude Code corpus sessions is 488 (their usage records, 2026-12-04)."""
    margin: float = 0.25
    """The net saving must be at least this share of the gross saving."""

    def recall_chance(self, kind: str) -> float:
        """``p`` for an output of ``kind``."""
        return {"read": self.recall_read, "shell": self.recall_shell,
                "mcp": self.recall_mcp}[kind]


@dataclass(frozen=True)
class Payoff:
    """One decision with every number it was made from."""

    kind: str
    result_tokens: int
    shown_tokens: int
    prompt_tokens: int
    requests_so_far: int
    compaction_at_tokens: int
    future_requests: float
    saving: float
    recall_cost: float
    route: bool

    def record(self) -> dict[str, Any]:
        """The journal body (rounded: a notebook recomputes from the inputs)."""
        body = asdict(self)
        body["saving"] = round(self.saving, 1)
        body["recall_cost"] = round(self.recall_cost, 1)
        body["future_requests"] = round(self.future_requests, 2)
        return body


def future_requests(*, prompt_tokens: int, requests_so_far: int, compaction_at_tokens: int,
                    min_future: int, growth_tokens: int) -> float:
    """How many later requests will still carry a result added now (see the module)."""
    ahead = float(max(requests_so_far, min_future))
    if prompt_tokens <= 0:
        return ahead  # nothing known of the prompt: the floor, uncapped
    room = compaction_at_tokens - prompt_tokens
    if room <= 0:
        return 1.0  # the next request compacts
    return max(1.0, min(ahead, room / growth_tokens))


def decide(*, kind: str, result_tokens: int, shown_tokens: int, prompt_tokens: int,
           requests_so_far: int, compaction_at_tokens: int,
           constants: PayoffConstants = PayoffConstants()) -> Payoff:
    """Whether showing ``shown_tokens`` instead of ``result_tokens`` pays (module doc).
    ``prompt_tokens``/``requests_so_far``: the session so far (0 when unknown)."""
    if kind not in KINDS:
        raise ValueError(f"unknown output kind {kind!r}: use one of {', '.join(KINDS)}")
    if min(result_tokens, shown_tokens, prompt_tokens, requests_so_far) < 0 \
            or compaction_at_tokens <= 0:
        raise ValueError("token counts and requests must not be negative")
    c = constants
    n = future_requests(prompt_tokens=prompt_tokens, requests_so_far=requests_so_far,
                        compaction_at_tokens=compaction_at_tokens, min_future=c.min_future,
                        growth_tokens=c.growth_tokens)
    kept_out = max(0, result_tokens - shown_tokens)
    carried = c.write + c.read * n
    saving = kept_out * carried
    recall = c.recall_chance(kind) * (c.read * (prompt_tokens + shown_tokens)
                                      + c.write * c.request_tokens
                                      + c.share * kept_out * carried)
    route = kept_out > 0 and saving - recall > c.margin * saving
    return Payoff(kind=kind, result_tokens=result_tokens, shown_tokens=shown_tokens,
                  prompt_tokens=prompt_tokens, requests_so_far=requests_so_far,
                  compaction_at_tokens=compaction_at_tokens, future_requests=n,
                  saving=saving, recall_cost=recall, route=route)
