"""The engine's other answers: the task views the MCP resources serve, and what the
client hooks and ``osiris run`` get back through the Python API."""

from __future__ import annotations

from typing_extensions import TypedDict

from osiris.contracts.shared import (
    BudgetState,
    DriftLevel,
    HookAdvice,
    PlanProgress,
    Pressure,
)


class ZoneHashes(TypedDict):
    """The hashes of the prompt's zones (what the seal is made of)."""

    head: str
    """Of the system prompt recorded with ``observe(kind="head")``."""
    zone_b: str
    """Of the tool list recorded with ``observe(kind="contract")``."""
    tail: str
    """Of the pinned constraints and decisions."""
    prefix: str
    """Of head and zone_b: the cacheable prefix."""
    zone_a: str
    """Of head and tail."""


class ManifestView(TypedDict):
    """``osiris://task/{task_id}/manifest``: the manifest, no side effects."""

    task_id: str
    """The task."""
    objective: str
    """Its objective."""
    manifest: str
    """The sealed manifest as it stands."""
    seal: str
    """Its seal."""
    drift: DriftLevel
    """The drift last shown to the agent (``none`` once it carries the current manifest)."""
    zones: ZoneHashes
    """The zones' hashes."""


class BudgetView(TypedDict):
    """The budget, short."""

    state: BudgetState
    """``ok``, ``warn`` or ``over``."""
    tokens_consumed: int
    """Tokens consumed so far."""
    token_limit: int | None
    """The token limit (None: none)."""
    cost_consumed_usd: float
    """Dollars consumed so far."""
    cost_limit_usd: float | None
    """The cost limit (None: none)."""


class StatusView(TypedDict):
    """``osiris://task/{task_id}/status``: pressure, budget and plan, no side effects."""

    task_id: str
    """The task."""
    pressure: Pressure
    """How full the context window is."""
    budget: BudgetView
    """The budget."""
    plan: PlanProgress
    """The steps and where the task stands."""


class ResumeView(TypedDict):
    """The prompt ``osiris/task-resume``'s facts: what an agent needs after a crash."""

    task_id: str
    """The task."""
    objective: str
    """Its objective (control characters escaped)."""
    manifest: str
    """The sealed manifest."""
    constraints: list[str]
    """The pinned constraints, verbatim (control characters escaped)."""
    decisions: list[str]
    """The pinned decisions, verbatim (control characters escaped)."""
    plan: PlanProgress
    """The steps and where the task stands."""
    lessons: list[str]
    """Lessons recorded in the task."""
    files: list[str]
    """Paths of the files the task read through OSIRIS."""
    flags: dict[str, bool]
    """Named facts about the task."""


class Compacted(TypedDict):
    """``Engine.compacted``: a client compacted its history (Claude Code's SessionStart
    hook, source ``compact``)."""

    task_id: str
    """The client session's task."""
    refs: int
    """Live refs listed back to the agent (0 when routing's compaction is off)."""
    hook: HookAdvice
    """The advice for the model: the manifest and the refs as its context (empty when
    compaction is off)."""


class RoutedOutput(TypedDict):
    """``Engine.route_output`` (``osiris run``): a large command output stored, and the
    preview printed instead."""

    ref: str
    """The ref of the whole output."""
    tokens: int
    """Its size in tokens."""
    lines: int
    """Its lines."""
    preview: str
    """The preview."""
    preview_tokens: int
    """The preview's tokens."""
