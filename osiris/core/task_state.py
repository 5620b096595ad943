"""TaskState: the unit of work, as SPEC §2 describes it.

Frozen dataclasses; every change is a pure function that returns a new state, so
the engine can journal exactly what changed. The objective never changes;
constraints and decisions are append-only and pinned verbatim, each with a digest
that chains it to the items before it (the collection's *identity*): an append
keeps every earlier identity, a rewrite changes one, and that is how a rewrite is
told from growth even when both change ``tail_hash``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass, replace
from typing import Any

from osiris.core.hashing import canonical_json, sha256_hex
from osiris.errors import InvalidInputError

MAX_OBJECTIVE_CHARS = 4000
MAX_ITEM_CHARS = 4000
MAX_STEPS = 200


@dataclass(frozen=True)
class PinnedItem:
    """One constraint or decision, kept verbatim."""

    text: str
    identity: str
    """sha256(previous identity ‖ text): the item's place in the collection's history."""


@dataclass(frozen=True)
class Plan:
    """Steps with progress: completed / active / remaining."""

    steps: tuple[str, ...] = ()
    completed: tuple[int, ...] = ()
    active: int | None = None

    @property
    def remaining(self) -> tuple[int, ...]:
        """Indexes neither completed nor active."""
        done = set(self.completed)
        return tuple(i for i in range(len(self.steps)) if i not in done and i != self.active)

    @property
    def progress(self) -> tuple[int, int]:
        """(completed, total) for the manifest's ``plan=i/n``."""
        return len(self.completed), len(self.steps)


@dataclass(frozen=True)
class FileRecord:
    """A file OSIRIS read for the task."""

    path: str
    sha256: str
    mtime_ns: int
    size: int
    last_access_us: int
    ref: str


@dataclass(frozen=True)
class ToolResult:
    """A cached tool result: cache key = tool + canonical args + content."""

    cache_key: str
    tool: str
    args_hash: str
    ref: str
    size_bytes: int
    tokens: int
    ttl_s: int
    created_us: int


@dataclass(frozen=True)
class Failure:
    """A normalised error signature and how often it recurred."""

    signature: str
    tool: str
    args_hash: str
    attempts: int
    lesson: str | None = None
    resolved: bool = False


@dataclass(frozen=True)
class Budget:
    """Token and cost limits (None = unlimited) and what was consumed."""

    token_limit: int | None = None
    cost_limit_usd: float | None = None
    tokens_estimated: int = 0
    tokens_consumed: int = 0
    cost_consumed_usd: float = 0.0
    warn_ratio: float = 0.8


@dataclass(frozen=True)
class ZoneInputs:
    """What the agent reported about its prompt, as digests (texts live in refs)."""

    head_digest: str = ""
    """sha256 of the system head the agent reported with ``observe(kind="head")``."""
    head_ref: str | None = None
    head_tokens: int = 0
    rules_digest: str = ""
    """sha256 of the project rules in force (invariants), part of the head zone."""
    contract_digest: str = ""
    """sha256 of the tool contract reported with ``observe(kind="contract")``."""
    contract_ref: str | None = None
    contract_tokens: int = 0


@dataclass(frozen=True)
class SealRecord:
    """A seal OSIRIS issued and the zone hashes it stood for."""

    seal: str
    head: str
    zone_b: str
    tail: str
    constraints: int
    decisions: int


@dataclass(frozen=True)
class TaskState:
    """Everything OSIRIS knows about one task."""

    task_id: str
    objective: str
    created_us: int
    agent_id: str | None = None
    project_id: str | None = None
    parent_task_id: str | None = None
    status: str = "active"
    constraints: tuple[PinnedItem, ...] = ()
    decisions: tuple[PinnedItem, ...] = ()
    plan: Plan = field(default_factory=Plan)
    files: tuple[FileRecord, ...] = ()
    tool_results: tuple[ToolResult, ...] = ()
    failures: tuple[Failure, ...] = ()
    lessons: tuple[str, ...] = ()
    handoffs: tuple[str, ...] = ()
    budget: Budget = field(default_factory=Budget)
    flags: tuple[tuple[str, bool], ...] = ()
    zones: ZoneInputs = field(default_factory=ZoneInputs)
    seals: tuple[SealRecord, ...] = ()
    drift: str = "none"
    """Last drift verdict (shown in the manifest)."""
    invariants: int = 0
    """Number of invariants in force for the task's roots (shown as ``inv=``)."""
    refs: int = 0
    """Number of refs the task holds (shown as ``refs=``)."""
    measured: tuple[tuple[str, int], ...] = ()
    """Tokens OSIRIS counted into the agent's context, by source (for pressure)."""
    declared_tokens: int | None = None
    """The agent's last reported prompt size (provider usage or a declaration)."""
    budget_source: str = "estimate"
    """``estimate`` until the agent reports provider usage, then ``provider``."""
    pending_approvals: tuple[str, ...] = ()
    """Actions precheck asked to confirm (their keys), until confirmed."""
    manifest_shown: bool = False
    """Whether the agent has been given the manifest (a task a client hook created gets
    it with the first payload OSIRIS externalizes, not before)."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (persisted in ``tasks.state``): what ``dataclasses.asdict``
        gives, without its deep copies (the state is immutable; every call pays this)."""
        return _plain_dataclass(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskState:
        """Inverse of :meth:`as_dict`."""
        return cls(
            task_id=data["task_id"], objective=data["objective"], created_us=data["created_us"],
            agent_id=data.get("agent_id"), project_id=data.get("project_id"),
            parent_task_id=data.get("parent_task_id"), status=data.get("status", "active"),
            constraints=tuple(PinnedItem(**i) for i in data.get("constraints", ())),
            decisions=tuple(PinnedItem(**i) for i in data.get("decisions", ())),
            plan=Plan(steps=tuple(data.get("plan", {}).get("steps", ())),
                      completed=tuple(data.get("plan", {}).get("completed", ())),
                      active=data.get("plan", {}).get("active")),
            files=tuple(FileRecord(**f) for f in data.get("files", ())),
            tool_results=tuple(ToolResult(**r) for r in data.get("tool_results", ())),
            failures=tuple(Failure(**f) for f in data.get("failures", ())),
            lessons=tuple(data.get("lessons", ())), handoffs=tuple(data.get("handoffs", ())),
            budget=Budget(**data.get("budget", {})),
            flags=tuple((str(k), bool(v)) for k, v in data.get("flags", ())),
            zones=ZoneInputs(**data.get("zones", {})),
            seals=tuple(SealRecord(**s) for s in data.get("seals", ())),
            drift=data.get("drift", "none"), invariants=data.get("invariants", 0),
            refs=data.get("refs", 0),
            measured=tuple((str(k), int(v)) for k, v in data.get("measured", ())),
            declared_tokens=data.get("declared_tokens"),
            budget_source=data.get("budget_source", "estimate"),
            pending_approvals=tuple(data.get("pending_approvals", ())),
            manifest_shown=bool(data.get("manifest_shown", False)),
        )

    def state_hash(self) -> str:
        """Digest of the whole state (recorded with each journal event that changes it)."""
        return sha256_hex(canonical_json(self.as_dict()))

    def flag(self, name: str) -> bool | None:
        """A state flag such as ``tests_passed`` (None when never set)."""
        for key, value in self.flags:
            if key == name:
                return value
        return None


def pinned_identity(previous: str, text: str) -> str:
    """Identity of a pinned item appended after an item of identity ``previous``."""
    return sha256_hex(f"{previous}\u2016{text}")


def validate_objective(objective: object) -> str:
    """A usable objective, or InvalidInputError saying what is wrong."""
    if not isinstance(objective, str) or not objective.strip():
        raise InvalidInputError("objective must be a non-empty string describing the task")
    if len(objective) > MAX_OBJECTIVE_CHARS:
        raise InvalidInputError(
            f"objective is {len(objective)} characters; keep it under {MAX_OBJECTIVE_CHARS} "
            "and put details in constraints or decisions")
    return objective.strip()


def validate_items(items: object, name: str) -> list[Any]:
    """A list of pinned items (strings, or ``{"index", "text"}`` rewrite requests)."""
    if items is None:
        return []
    if not isinstance(items, list):
        raise InvalidInputError(f"{name} must be a list of strings")
    for item in items:
        text = item.get("text") if isinstance(item, dict) else item
        if not isinstance(text, str) or not text.strip():
            raise InvalidInputError(f"every item of {name} must be a non-empty string")
        if len(text) > MAX_ITEM_CHARS:
            raise InvalidInputError(f"an item of {name} exceeds {MAX_ITEM_CHARS} characters")
    return items


def append_pinned(items: tuple[PinnedItem, ...], texts: list[str]) -> tuple[PinnedItem, ...]:
    """Append texts not already present verbatim (appending is idempotent)."""
    present = {i.text for i in items}
    out = list(items)
    for raw in texts:
        text = raw.strip()
        if text in present:
            continue
        previous = out[-1].identity if out else ""
        out.append(PinnedItem(text=text, identity=pinned_identity(previous, text)))
        present.add(text)
    return tuple(out)


def rewrite_pinned(items: tuple[PinnedItem, ...], index: int, text: str,
                   ) -> tuple[PinnedItem, ...]:
    """The collection as it would be with item ``index`` rewritten (identities recomputed)."""
    if not 0 <= index < len(items):
        raise InvalidInputError(f"there is no pinned item at index {index}")
    texts = [i.text for i in items]
    texts[index] = text.strip()
    out: list[PinnedItem] = []
    for t in texts:
        previous = out[-1].identity if out else ""
        out.append(PinnedItem(text=t, identity=pinned_identity(previous, t)))
    return tuple(out)


def classify_collection(old: tuple[PinnedItem, ...], new: tuple[PinnedItem, ...]) -> str:
    """``unchanged``, ``append`` or ``rewrite``, by identity (not by the collection hash)."""
    if len(new) < len(old):
        return "rewrite"
    for before, after in zip(old, new, strict=False):
        if before.identity != after.identity or before.text != after.text:
            return "rewrite"
    return "unchanged" if len(new) == len(old) else "append"


def verify_identities(items: tuple[PinnedItem, ...]) -> list[int]:
    """Indexes whose stored identity does not follow from their text (a silent rewrite)."""
    bad = []
    previous = ""
    for index, item in enumerate(items):
        if pinned_identity(previous, item.text) != item.identity:
            bad.append(index)
        previous = item.identity
    return bad


def set_plan(plan: Plan, steps: list[str] | None, active_step: int | None,
             completed: list[int] | None = None) -> Plan:
    """New plan: replace steps (progress is kept for steps whose text is unchanged),
    move the active step (everything before it counts as completed unless told)."""
    new_steps = plan.steps
    kept_completed = set(plan.completed)
    active = plan.active
    if steps is not None:
        if not isinstance(steps, list) or not all(isinstance(s, str) and s.strip()
                                                  for s in steps):
            raise InvalidInputError("steps must be a list of non-empty strings")
        if len(steps) > MAX_STEPS:
            raise InvalidInputError(f"a plan holds at most {MAX_STEPS} steps")
        new_steps = tuple(s.strip() for s in steps)
        kept_completed = {i for i in kept_completed
                          if i < len(new_steps) and i < len(plan.steps)
                          and plan.steps[i] == new_steps[i]}
        if active is not None and active >= len(new_steps):
            active = None
    if completed is not None:
        for i in completed:
            if not isinstance(i, int) or not 0 <= i < len(new_steps):
                raise InvalidInputError(f"completed step {i!r} is not a step index")
        kept_completed |= set(completed)
    if active_step is not None:
        if not isinstance(active_step, int) or isinstance(active_step, bool) \
                or not 0 <= active_step < len(new_steps):
            raise InvalidInputError(
                f"active_step must be a step index from 0 to {len(new_steps) - 1}")
        if completed is None:
            kept_completed |= set(range(active_step))
        kept_completed.discard(active_step)
        active = active_step
    return Plan(steps=new_steps, completed=tuple(sorted(kept_completed)), active=active)


def add_measured(state: TaskState, source: str, tokens: int) -> TaskState:
    """Count ``tokens`` more (or fewer, when negative) in the context, by source."""
    measured = dict(state.measured)
    measured[source] = max(measured.get(source, 0) + tokens, 0)
    return replace(state, measured=tuple(sorted(measured.items())))


def with_flag(state: TaskState, name: str, value: bool) -> TaskState:
    """Set a state flag."""
    flags = dict(state.flags)
    flags[name] = value
    return replace(state, flags=tuple(sorted(flags.items())))


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


_PLAIN = "_osiris_plain"
"""Where a nested record keeps its plain form. The records are frozen, and a task's next
state shares the last one's (with :data:`osiris.engine.context` reusing the saved state),
so each observe no longer converts every tool result, file and seal of the task again."""


def _plain_dataclass(obj: Any) -> dict[str, Any]:
    cls = type(obj)
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(cls))
    return {name: _plain(getattr(obj, name)) for name in names}


def _plain_record(obj: Any) -> dict[str, Any]:
    """The plain form of a nested frozen record, computed once per instance. It is
    shared: what reads a state's dict (canonical JSON, the journal) must not change it."""
    own = getattr(obj, "__dict__", None)
    cached: dict[str, Any] | None = None if own is None else own.get(_PLAIN)
    if cached is None:
        cached = _plain_dataclass(obj)
        if own is not None and type(obj).__dataclass_params__.frozen:
            object.__setattr__(obj, _PLAIN, cached)
    return cached


def _plain(value: Any) -> Any:
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if is_dataclass(value) and not isinstance(value, type):
        return _plain_record(value)
    if isinstance(value, tuple | list):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    return value
