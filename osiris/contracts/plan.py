"""The answers of ``plan``: a manifest for start, update, resume and status; entries for
memory; the operating context for context."""

from __future__ import annotations

from typing import Literal, NotRequired

from typing_extensions import TypedDict

from osiris.contracts.shared import BudgetState, Compass, Drift, PlanProgress, Pressure


class Manifest(TypedDict):
    """What every answer that shows the manifest carries (``handoff(mode="accept")``'s
    too)."""

    task_id: str
    """The task."""
    manifest: str
    """The sealed manifest (~120 tokens): keep it at the end of your context."""
    manifest_tokens: int
    """Its size in tokens."""
    seal: str
    """The manifest's seal: pass it back to ``observe`` to detect drift."""
    drift: Drift
    """What changed against the manifest you carried."""
    budget: BudgetState
    """The budget's state."""
    plan: PlanProgress
    """The steps and where the task stands (steps shown control-escaped)."""


class PlanStart(Manifest):
    """``plan(mode="start")``: the new task's first manifest."""

    mode: Literal["start"]
    """The mode answered."""
    lessons: NotRequired[list[str]]
    """The newest lessons earlier agents recorded for the project (absent when none)."""
    resolved_project_id: NotRequired[str | None]
    """The project the operating context resolved ``auto`` to."""
    operating_context_warning: NotRequired[str]
    """Why the project was not resolved as asked (the registry only warns)."""


class RejectedRewrite(TypedDict):
    """A rewrite of a pinned item, refused: the item stays verbatim."""

    collection: Literal["constraints", "decisions"]
    """Which list the item is in."""
    index: int
    """Its index there."""
    pinned_text: str
    """The text it keeps."""


class PlanUpdate(Manifest):
    """``plan(mode="update")``: the manifest after the change."""

    mode: Literal["update"]
    """The mode answered."""

    rejected_rewrites: NotRequired[list[RejectedRewrite]]
    """Rewrites of pinned items that were refused (only from the Python API: the tool
    accepts strings to append)."""
    compass: NotRequired[Compass]
    """Tools that fit the active step (after a tool list was recorded)."""


class Integrity(TypedDict):
    """What resume found when it checked the stored state against the journal."""

    state_matches_journal: bool
    """The stored state's hash is the last one the journal recorded."""
    pinned_restored: NotRequired[bool]
    """Present (true) when pinned items differed from the journal and were restored."""


class PlanResume(Manifest):
    """``plan(mode="resume")``: the task rebuilt from the store, checked against the
    journal."""

    mode: Literal["resume"]
    """The mode answered."""

    compass: NotRequired[Compass]
    """Tools that fit the active step."""
    objective: str
    """The objective."""
    constraints: list[str]
    """The pinned constraints, verbatim."""
    decisions: list[str]
    """The pinned decisions, verbatim."""
    lessons: list[str]
    """Lessons recorded in this task."""
    flags: dict[str, bool]
    """Named facts about the task (e.g. ``tests_passed``)."""
    integrity: Integrity
    """What the check found."""
    pressure: Pressure
    """How full the context window is."""


class Remaining(TypedDict):
    """What is left of each limit (None: unlimited)."""

    tokens: int | None
    """Tokens left (negative past the limit)."""
    cost_usd: float | None
    """Dollars left, 6 decimals (negative past the limit)."""


class BudgetDetail(TypedDict):
    """The budget in full."""

    state: BudgetState
    """``ok``, ``warn`` or ``over``."""
    source: Literal["estimate", "provider"]
    """``estimate``: OSIRIS's own count; ``provider``: the usage the agent reported."""
    token_limit: int | None
    """The token limit (None: none)."""
    tokens_consumed: int
    """Tokens consumed so far."""
    tokens_estimated: int
    """The agent's own estimate of the tokens the task needs (0: none given)."""
    cost_limit_usd: float | None
    """The cost limit (None: none)."""
    cost_consumed_usd: float
    """Dollars consumed so far, under the cost model."""
    remaining: Remaining
    """What is left."""
    cost_model: str
    """The cost model that priced it (``OSIRIS_COST_MODEL``)."""


class PlanStatus(Manifest):
    """``plan(mode="status")``: the manifest, pressure and budget."""

    mode: Literal["status"]
    """The mode answered."""

    compass: NotRequired[Compass]
    """Tools that fit the active step."""
    pressure: Pressure
    """How full the context window is."""
    budget_detail: BudgetDetail
    """The budget in full."""


class MemoryEntry(TypedDict):
    """A memory entry visible to the task."""

    scope: Literal["task", "project", "agent", "global"]
    """Where it lives (a lookup searches task, project, agent, then global)."""
    kind: Literal["fact", "decision", "lesson", "preference", "file", "result"]
    """What it records."""
    key: str
    """Its key within scope and kind."""
    value: object
    """Its value, any JSON."""
    entry_id: str
    """Its id (SHA-256 of scope, scope id, kind, key and value)."""


class PlanMemoryWritten(TypedDict):
    """``plan(mode="memory", memory=[…])``: entries written."""

    task_id: str
    """The task."""
    mode: Literal["memory"]
    """Always ``memory``."""
    written: list[str]
    """The ids of the entries written, in order."""


class PlanMemoryFound(TypedDict):
    """``plan(mode="memory", memory={kind, scope, key})``: entries found."""

    task_id: str
    """The task."""
    mode: Literal["memory"]
    """Always ``memory``."""
    entries: list[MemoryEntry]
    """The entries, nearest scope first, then newest."""


class ContextSection(TypedDict):
    """``plan(mode="context", section=…)`` for a section that exists."""

    section: str
    """The section asked for."""
    found: Literal[True]
    """It exists."""
    body: str
    """Its text."""
    context_revision: str
    """The operating context's revision."""


class ContextSectionMissing(TypedDict):
    """``plan(mode="context", section=…)`` for a section that does not exist."""

    section: str
    """The section asked for."""
    found: Literal[False]
    """It does not exist."""
    sections: list[str]
    """The sections that do."""


class ContextInactive(TypedDict):
    """``plan(mode="context")`` without an operating context: OSIRIS's doctrine."""

    active: Literal[False]
    """No operating context is configured (or it could not be read)."""
    doctrine: str
    """How OSIRIS expects to be used."""
    problems: list[str]
    """Why the operating context could not be read, if one was configured."""


class Registry(TypedDict):
    """The operating context's project registry."""

    project_ids: list[str] | None
    """The known projects (None: no registry)."""
    enforce: Literal["off", "warn", "reject"]
    """What an unknown project gets: nothing, a warning, or (for writes) a refusal."""


class ContextActive(TypedDict):
    """``plan(mode="context")`` with an operating context."""

    active: Literal[True]
    """An operating context is configured."""
    context_revision: str
    """Its revision."""
    instructions_summary: str
    """The summary that is part of the server's instructions."""
    doctrine: str
    """How OSIRIS expects to be used."""
    registry: Registry
    """The project registry."""
    defaults: dict[str, str]
    """Agent id to the project its ``@auto`` resolves to."""
    doctrine_sections: list[str]
    """Sections readable with ``section``."""
    problems: list[str]
    """Problems found in it."""


ContextAnswer = ContextSection | ContextSectionMissing | ContextInactive | ContextActive
"""Every answer of ``plan(mode="context")`` (the operating context, read-only)."""
PlanAnswer = (PlanStart | PlanUpdate | PlanResume | PlanStatus | PlanMemoryWritten
              | PlanMemoryFound | ContextAnswer)
"""Every answer of ``plan``."""
