"""Records that several answers and events carry: drift, its prefill cost, the plan's
progress, pressure, budget and the volatile tokens found in a prompt."""

from __future__ import annotations

from typing import Literal, NotRequired

from typing_extensions import TypedDict

DriftLevel = Literal["none", "normal_growth", "minor", "critical", "semantic_break"]
BudgetState = Literal["ok", "warn", "over"]
"""``ok``; ``warn`` past the warn ratio of a limit; ``over`` past a limit."""


class Prefill(TypedDict):
    """What a drift costs: from which token the client must prefill the prompt again."""

    zone: str
    """The first prompt zone that changed: ``head``, ``zone_b`` or ``tail``."""
    from_token: int
    """Token position, from the start of the prompt, where the cached prefix breaks."""
    tokens: int
    """Tokens that must be prefilled again from there."""
    cost_model: str
    """The cost model that priced them (``OSIRIS_COST_MODEL``)."""
    cost_usd: float
    """Price of prefilling ``tokens`` again (written to the cache where it caches)."""
    extra_cost_usd: float
    """What that costs beyond the cache read it replaces (0 when nothing was cached)."""


class Drift(TypedDict):
    """The drift between the manifest the agent carries and the task's current state."""

    verdict: DriftLevel
    """``none``; ``normal_growth`` (only appended); ``minor``; ``critical``;
    ``semantic_break`` (a pinned constraint or decision was rewritten)."""
    changes: NotRequired[list[str]]
    """What changed, one line each (absent when nothing did)."""
    semantic_break: NotRequired[bool]
    """Present (and true) when a pinned item was rewritten."""
    cause: NotRequired[str | None]
    """Why the break happened; present with ``semantic_break``."""
    prefill: NotRequired[Prefill]
    """What the change costs in prompt-cache prefill (absent when nothing is prefilled)."""
    detail: NotRequired[str]
    """What the agent should do about it, in a sentence."""


class PlanProgress(TypedDict):
    """The task's steps and where it stands."""

    steps: list[str]
    """The steps, in order."""
    active: int | None
    """Index of the active step (None before one is chosen)."""
    completed: list[int]
    """Indices of the completed steps."""
    remaining: list[int]
    """Indices of the steps not completed yet."""


class Pressure(TypedDict):
    """How full the agent's context window is, by OSIRIS's counts and the agent's own."""

    window_tokens: int
    """The context window (``OSIRIS_CONTEXT_WINDOW_TOKENS``)."""
    measured_tokens: int
    """Tokens OSIRIS saw enter the context (payload previews, answers, prompts), less
    what the agent reported dropping."""
    declared_tokens: int | None
    """The prompt size the agent last reported in ``usage`` (None when it never did)."""
    unknown_tokens: int
    """What the declared size has beyond the measured one (0 without a declaration)."""
    used_tokens: int
    """The larger of measured and declared: the figure the level is computed from."""
    ratio: float
    """``used_tokens / window_tokens``, 4 decimals."""
    level: Literal["ok", "elevated", "high", "critical"]
    """``ok`` under 50 %, ``elevated`` under 75 %, ``high`` under 90 %, else ``critical``."""
    prune_threshold_tokens: int
    """Above this many used tokens, observe advises what to drop
    (``OSIRIS_PRUNE_THRESHOLD_TOKENS``)."""
    prune_due: bool
    """``used_tokens >= prune_threshold_tokens``."""
    measured_by_source: dict[str, int]
    """The measured tokens by source (``payload``, ``answer``, ``prompt``,
    ``drop_receipt``, …), zeros left out; a drop receipt counts negative."""


class VolatileToken(TypedDict):
    """A cache-busting token found in a recorded system prompt or tool list."""

    kind: str
    """What it looks like: ``timestamp``, ``uuid``, ``random_id``, …"""
    text: str
    """The token as found."""
    start: int
    """Its character offset in the recorded text."""
    end: int
    """The character offset after it."""
    token_position: int
    """Its position in tokens: everything after it misses the prompt cache when it
    changes."""
    suggestion: str
    """How to keep it from breaking the cache."""


class Recommendation(TypedDict):
    """A tool the compass recommends for the step at hand."""

    tool: str
    """The tool's name, as in the tool list the agent recorded."""
    score: float
    """Relevance to the step plus half the tool's success rate in this task, 4 decimals
    (only positive scores are listed)."""
    why: str
    """The reason, in a few words."""


class CostlyTool(TypedDict):
    """A tool whose definition alone costs many prompt tokens."""

    name: str
    """The tool's name."""
    tokens: int
    """Tokens of its definition."""


_CompassStep = TypedDict("_CompassStep", {"for": str})
# ``for`` is a Python keyword, hence the functional form; its docstring is set below.


class Compass(_CompassStep):
    """Which tools fit the active step (from the tool list recorded with
    ``observe(kind="contract")``). ``for``: the step (or the objective) they were ranked
    for, cut to 80 characters."""

    recommended: list[Recommendation]
    """At most three tools, best first."""
    costly: NotRequired[list[CostlyTool]]
    """Up to five tools whose definitions are the most expensive."""


Compass.__keyword_field_docs__ = {  # type: ignore[attr-defined]
    "for": "The step (or the objective) the tools were ranked for, cut to 80 characters."}


class ToolError(TypedDict):
    """A tool's error result (``isError`` true): every tool answers its errors so."""

    error: str
    """The error's code: ``invalid_input``, ``not_found``, ``sandbox_violation``,
    ``policy_refused``, ``store_busy``, ``committed_with_errors`` (the call took effect:
    do not repeat it), ``internal_error``, …"""
    message: str
    """What went wrong and what to do next (the same text as the result's content),
    secrets scrubbed, at most 600 characters."""


class HookAdvice(TypedDict):
    """What OSIRIS tells the model through a client's hook, in no client's format (the
    client adapter says it in the client's JSON: :mod:`osiris.clients.adapters`). Empty
    when OSIRIS has nothing to say."""

    permission: NotRequired[Literal["deny", "ask"]]
    """OSIRIS objects to the call: ``deny`` it, or ``ask`` the user (absent: no
    objection; OSIRIS never says allow, the user's own rules decide)."""
    reason: NotRequired[str]
    """Why it objects, as the model reads it (with ``permission``)."""
    context: NotRequired[str]
    """Context added for the model: a warning, a windowed read's outline, the manifest
    after a compaction."""
