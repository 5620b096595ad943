"""The journal's event catalogue: every kind of event OSIRIS appends, its body, its version.

An event is a row of the ``events`` table: ``seq``, ``ts_us``, ``task_id``, ``actor``,
``kind``, ``body`` (canonical JSON), and the hash chain. ``body`` is the record below for
its ``kind``; it carries ``v``, the version of that record (:data:`VERSIONS`), from the
catalogue's first version on (events written before it have no ``v``: read them as
version 0, the same fields). A change to a record that a reader could misread bumps its
version here, and the closing note of the change says so.

Events that change a task's state end with ``state_hash``: the SHA-256 of the task's
canonical state after the change (``plan(mode="resume")`` checks the stored state
against the last one).
"""

from __future__ import annotations

from typing import Literal, NotRequired

from typing_extensions import TypedDict

from osiris.contracts.shared import Drift, PlanProgress

Verdict = Literal["allow", "warn", "suggest_alternative", "require_approval", "block"]


class Event(TypedDict):
    """What every body carries."""

    v: int
    """The version of this kind's record (:data:`VERSIONS`)."""


class StateChange(Event):
    """An event that changed the task's state."""

    state_hash: str
    """SHA-256 (hex) of the task's canonical state after this event."""


class Budget(TypedDict):
    """The task's limits (None: no limit)."""

    token_limit: int | None
    """Tokens the task may consume."""
    cost_limit_usd: float | None
    """Dollars the task may cost, under the task's cost model."""


# --- the task (plan) -------------------------------------------------------------------

class TaskStart(StateChange):
    """``plan(mode="start")`` (or a client session's first call) created a task."""

    objective: str
    """The task's objective as stored (secrets scrubbed)."""
    agent_id: str | None
    """The agent that started it, when it said."""
    project_id: str | None
    """The project it belongs to, when known."""
    steps: list[str]
    """The plan's steps."""
    active: int | None
    """The active step's index (None before one is chosen)."""
    constraints: list[list[str]]
    """The pinned constraints, each ``[text, identity]`` (identity: a hash of the text
    and its position, what a later rewrite is detected by)."""
    decisions: list[list[str]]
    """The pinned decisions, each ``[text, identity]``."""
    budget: Budget
    """The limits the task started with."""
    flags: dict[str, bool]
    """Named facts about the task (e.g. ``tests_passed``)."""


class RejectedRewrite(TypedDict):
    """A request to rewrite a pinned item, refused (the item stays verbatim)."""

    collection: Literal["constraints", "decisions"]
    """Which list the item is in."""
    index: int
    """Its index there."""
    pinned_text: str
    """The text it keeps."""


class TaskUpdate(StateChange):
    """``plan(mode="update")``: only what changed is listed."""

    drift: Drift
    """What the change does to the manifest the agent carries."""
    constraints_appended: NotRequired[list[list[str]]]
    """Constraints appended, each ``[text, identity]``."""
    decisions_appended: NotRequired[list[list[str]]]
    """Decisions appended, each ``[text, identity]``."""
    plan: NotRequired[PlanProgress]
    """The plan after the change, when it moved."""
    budget: NotRequired[Budget]
    """The limits after the change, when they changed."""
    flags: NotRequired[dict[str, bool]]
    """All flags after the change, when one changed."""
    rejected_rewrites: NotRequired[list[RejectedRewrite]]
    """Rewrites of pinned items that were refused."""


class Integrity(TypedDict):
    """What a resume found when it checked the stored state against the journal."""

    state_matches_journal: bool
    """The stored state's hash is the last one the journal recorded."""
    pinned_restored: NotRequired[bool]
    """Present (true) when pinned items differed from the journal and were restored."""


class TaskResume(StateChange):
    """``plan(mode="resume")``: the stored state agreed with the journal."""

    drift: Drift
    """The drift found (``none`` when nothing was rewritten)."""
    integrity: Integrity
    """What the check found."""


class TaskRestore(TaskResume):
    """``plan(mode="resume")`` found pinned items rewritten behind OSIRIS's back and
    restored them verbatim from the journal."""

    restored_constraints: list[list[str]]
    """The constraints as restored, each ``[text, identity]``."""
    restored_decisions: list[list[str]]
    """The decisions as restored, each ``[text, identity]``."""


class TaskStatus(StateChange):
    """``plan(mode="status")`` showed the manifest (no other field)."""


class MemoryWrite(Event):
    """``plan(mode="memory")`` wrote entries."""

    entries: list[str]
    """The ids of the entries written (each the SHA-256 of its scope, kind, key and
    value)."""


# --- precheck and observe --------------------------------------------------------------

class Precheck(StateChange):
    """A ``precheck`` (from the tool or a client's PreToolUse hook) and its verdict."""

    tool: str
    """The tool the agent is about to call."""
    derived_tool: str | None
    """The command family of a shell call (``git.commit`` for ``git commit -m x``), what
    rules and LoopGuard match on; None for other tools."""
    args_hash: str
    """SHA-256 of the call's canonical arguments."""
    path: str | None
    """The path the call touches, when given."""
    confirmed: bool
    """The agent repeated the call with ``confirmed=true`` after a ``require_approval``."""
    verdict: Verdict
    """The strictest verdict of the findings (``allow`` when none)."""
    reasons: list[str]
    """One line per finding."""
    sources: list[str]
    """Where each finding came from: ``invariant:<rule id>``, ``budget``,
    ``loopguard:<pattern>``."""
    rules: str
    """SHA-256 of the guard rails files the verdict was computed with."""
    rules_problems: list[str]
    """Problems found in those files (a broken rule is skipped, not fatal)."""


class Observe(StateChange):
    """What every ``observe.<kind>`` event carries."""

    tool: str | None
    """The tool the agent named (None for head, contract, dropped and file)."""
    seal_checked: bool
    """The agent passed a seal and it was checked."""
    drift: Drift
    """The drift found (the seal's, or what this kind changed)."""
    volatile: int
    """Cache-busting tokens found in a recorded head or contract (0 otherwise)."""
    usage_reported: bool
    """The agent reported provider usage with this call."""


class ObservePrompt(Observe):
    """``observe(kind="head"|"contract")``: the system prompt or the tool list recorded."""

    ref: str
    """The ref it is stored under."""
    tokens: int
    """Its size in tokens."""
    redacted: int
    """Secrets scrubbed from it before storing."""


class ObserveAction(Observe):
    """``observe(kind="action")`` without a result: a call recorded for LoopGuard."""

    recorded: Literal[True]
    """Always true."""
    loop: NotRequired[list[str]]
    """LoopGuard patterns the call matched (``exact_duplicate``, ``repeated_failure``,
    …)."""


class ObservePayload(Observe):
    """What every ``observe(kind="result"|"error"|"file")`` event carries (and an
    ``action``'s with a result)."""

    ref: str
    """The payload's ref (content address of the scrubbed text)."""
    loop: NotRequired[list[str]]
    """LoopGuard patterns the call matched (``exact_duplicate``, ``repeated_failure``,
    …)."""


class ObserveStored(ObservePayload):
    """A new payload stored, and how it reaches the agent."""

    tokens: int
    """The payload's size in tokens."""
    mode: Literal["bystander", "light", "standard", "full"]
    """How OSIRIS engaged: ``bystander`` kept it inline (too small to be worth a ref);
    ``light``, ``standard`` and ``full`` externalized it behind a preview of growing
    size."""
    redacted: NotRequired[int]
    """Secrets scrubbed from it (present when there were any)."""
    preview_tokens: NotRequired[int]
    """Tokens of the preview shown instead (externalized only)."""
    lines: NotRequired[int]
    """The payload's lines (externalized only)."""
    strategy: NotRequired[str]
    """How the preview was cut: ``errors``, ``outline``, ``head_tail``, … (externalized
    only)."""
    recall: NotRequired[str]
    """The recall operations the preview suggests (externalized only)."""


class ObserveDuplicate(ObservePayload):
    """The same tool, arguments and output were stored before: nothing new stored."""

    tokens: int
    """The original's size in tokens."""
    duplicate: Literal[True]
    """Always true."""
    first_seen_us: int
    """When the original was stored (µs since the epoch)."""


class ObserveUnchanged(ObservePayload):
    """``observe(kind="file")`` of a file whose bytes are those the task read before."""

    unchanged: Literal[True]
    """Always true."""
    path: str
    """The file's resolved path."""


ObservePayloadEvent = ObserveStored | ObserveDuplicate | ObserveUnchanged
"""A payload observed: stored, a duplicate, or an unchanged file."""

ObserveActionEvent = ObserveAction | ObservePayloadEvent
"""An action with a result is observed as a payload."""


class ObserveDropped(Observe):
    """``observe(kind="dropped")``: the agent evicted payloads; a receipt per ref."""

    dropped: int
    """Refs with a receipt (one already dropped gets none)."""
    proven_saved_tokens: int
    """Savings this drop proves (claimed earlier, when the payload was externalized)."""
    context_freed_tokens: int
    """Tokens the drop took out of the agent's context."""
    already_dropped: NotRequired[Literal[True]]
    """Nothing was left to drop."""


class PruneItem(TypedDict):
    """A payload the prune advice lists."""

    ref: str
    """Its ref."""
    tokens: int
    """Its size in tokens."""
    observed_us: int
    """When it was observed (µs since the epoch)."""
    kind: str
    """``result``, ``error``, ``file``, ``head`` or ``contract``."""
    tool: str | None
    """The tool that produced it."""
    zone: str
    """Its prompt zone: ``A`` (head), ``B`` (tool list), ``C`` (working set), ``D``."""


class PruneAdvice(Event):
    """An observe advised what to drop (only when the advice was triggered)."""

    mode: Literal["cache_ttl", "conservative", "balanced", "aggressive"]
    """The prune mode (``OSIRIS_PRUNE_MODE``)."""
    triggered: bool
    """Always true here: advice that did not trigger is not journaled."""
    trigger: str
    """Why it triggered (``pressure 164541 ≥ 2000``, an expired cache, …)."""
    drop: list[PruneItem]
    """The largest payloads advised for dropping (at most the answer's count)."""
    not_listed: int
    """Payloads advised beyond those listed."""
    pruned_tokens: int
    """Tokens all the advised payloads hold."""
    prefix_cost_tokens: float
    """Tokens of cached prefix the drop invalidates (prefilled again)."""
    net_savings_tokens: float
    """``pruned_tokens`` less that cost, over the cache's lifetime."""
    kept: int
    """Payloads the advice keeps (the working set)."""


class Recall(Event):
    """A ``recall``: which part of a ref reached the agent."""

    ref: str
    """The ref recalled."""
    op: str
    """The operation: ``grep``, ``range``, ``head``, ``tail``, ``outline``, ``aggregate``
    or ``jsonl``."""
    tokens: int
    """Tokens of the answer's text."""
    truncated: bool
    """The answer stopped at its token bound (a ``next`` continues it)."""


class Answer(Event):
    """An answer booked on a task that journaled nothing else for it (a handoff status,
    a memory lookup, …): the ledger row of every answer needs an event to stand on."""

    operation: str
    """The operation answered (``plan.memory``, ``handoff.status``, …)."""
    tokens: int
    """Tokens of the answer, the overhead booked."""


# --- checkpoints -----------------------------------------------------------------------

class CheckpointNew(StateChange):
    """``checkpoint(mode="snapshot"|"trim"|"compact"|"clear")``: a checkpoint written."""

    checkpoint_id: str
    """Its id."""
    state_ref: str
    """The ref of the task state it saved."""
    bytes_new: int
    """Bytes the store gained for it (the state already stored costs none)."""
    leaving: list[str]
    """Refs it lists as leaving the agent's context (empty for a snapshot)."""


class CheckpointRead(StateChange):
    """``checkpoint(mode="report"|"restore"|"resume")``."""

    checkpoint_id: NotRequired[str]
    """The checkpoint read, when one was named (a report names none)."""


# --- handoffs --------------------------------------------------------------------------

class Contract(TypedDict):
    """A handoff's contract as stored."""

    objective: str
    """What the child must achieve."""
    input_refs: list[str]
    """Refs the child may recall."""
    constraints: list[str]
    """Constraints pinned in the child's task."""
    steps: list[str]
    """The child's plan."""
    required_fields: list[str]
    """Fields the child's result must have."""
    commands_passed: list[str]
    """Commands the child must have run successfully (as OSIRIS observed)."""
    paths_allowed: list[str]
    """Globs the child may touch (empty: any)."""
    paths_forbidden: list[str]
    """Globs the child must not touch."""
    budget_tokens: int | None
    """The child's token limit."""
    budget_cost_usd: float | None
    """The child's cost limit."""
    deadline_us: int | None
    """When the contract expires (µs since the epoch)."""


class HandoffCreate(StateChange):
    """``handoff(mode="create")`` on the parent task."""

    handoff_id: str
    """The handoff's id."""
    contract: Contract
    """Its contract."""


class HandoffAccept(Event):
    """``handoff(mode="accept")`` (on the parent task): the child task started."""

    handoff_id: str
    """The handoff."""
    child_task_id: str
    """The child's task."""
    input_refs: list[str]
    """Refs linked to the child."""


class HandoffComplete(StateChange):
    """``handoff(mode="complete")`` on the child task: its result checked."""

    handoff_id: str
    """The handoff."""
    accepted: bool
    """Every check passed."""
    failed: list[str]
    """The checks that failed."""


class HandoffResult(Event):
    """The same completion, on the parent task."""

    handoff_id: str
    """The handoff."""
    accepted: bool
    """Every check passed."""
    refs_returned: list[str]
    """Refs of the result linked to the parent (accepted results only)."""


# --- clients and routing ---------------------------------------------------------------

class ClientCompacted(Event):
    """A client compacted its history (Claude Code's SessionStart with source
    ``compact``): LoopGuard's window restarts."""

    client: str
    """The client (``claude-code``, ``codex``)."""


class RouteRead(Event):
    """A client's large ``Read`` was windowed; the whole file stored."""

    path: str
    """The file's resolved path."""
    ref: str
    """The ref the whole file is stored under."""
    lines: int
    """The file's lines."""
    tokens: int
    """The file's size in tokens."""
    window: int
    """Lines the client's read was limited to."""
    size_bytes: int
    """The file's size in bytes."""


class RouteOutput(Event):
    """A large command output stored and shown as its preview: by a client's PostToolUse
    hook (a shell command the client ran, another MCP server's output) or by ``osiris
    run``."""

    tool: str
    """The client's tool (``Bash``, ``exec_command``, …)."""
    args: str
    """The call's canonical arguments, cut to 500 characters."""
    ref: str
    """The ref the whole output is stored under."""
    tokens: int
    """The output's size in tokens."""
    lines: int
    """The output's lines."""
    preview_tokens: int
    """Tokens of the preview printed instead."""
    failed: bool
    """The command exited non-zero."""


class RouteServed(Event):
    """A client's ``Read`` result reached the model (PostToolUse): its bytes and window,
    so that an identical read can get a pointer instead."""

    path: str
    """The file's resolved path."""
    offset: int | None
    """The read's first line (None: from the start)."""
    limit: int | None
    """The read's line limit (None: the client's default)."""
    sha256: str
    """SHA-256 of the file's bytes when read."""
    tool_use_id: str | None
    """The client's id for the call."""
    subagent: str | None
    """The subagent whose context got the result (Claude Code's ``agent_id``); None for
    the session's main agent. Version 2 on; version 1 records are the main agent's."""
    ref: NotRequired[str | None]
    """The ref of the text the model now knows the window as (None: not known, or stored
    scrubbed; version 3 on)."""
    content_sha256: NotRequired[str | None]
    """SHA-256 of that text as the client gave it, which the stored text must match before
    a changed re-read is shown against it (version 3 on)."""


class RouteReread(Event):
    """An identical ``Read`` of unchanged bytes got a pointer to the earlier result."""

    path: str
    """The file's resolved path."""
    served_seq: int
    """The ``route.served`` event of the earlier read."""


class RoutePayoff(Event):
    """Whether routing one output paid, with every number of the decision
    (:mod:`osiris.core.payoff`), so a notebook can replay and tune it."""

    kind: str
    """``read``, ``shell``, ``search`` or ``mcp``."""
    result_tokens: int
    """The output's size."""
    shown_tokens: int
    """What routing would show instead."""
    prompt_tokens: int
    """The client's prompt before the output joins it (0: unknown)."""
    requests_so_far: int
    """The task's calls before this one."""
    compaction_at_tokens: int
    """The prompt size at which the client compacts."""
    future_requests: float
    """Later requests expected to carry the output."""
    saving: float
    """Input-price token units saved by showing less."""
    recall_cost: float
    """Expected input-price token units of asking for the rest back."""
    route: bool
    """The verdict: routed (true) or shown as the client shows it."""
    what: str
    """The call: tool and arguments, or the file, cut to 300 characters."""


class RouteReadShaped(Event):
    """A mid-size whole-file ``Read`` shown as its first lines, an outline and its ref."""

    path: str
    """The file's resolved path."""
    ref: str
    """The ref the whole file is stored under."""
    lines: int
    """The file's lines."""
    tokens: int
    """The file's size in tokens."""
    shown_lines: int
    """The lines shown (from line 1)."""
    shown_tokens: int
    """Tokens shown: those lines, the outline and the note."""


class RouteReadChanged(Event):
    """A whole-file ``Read`` of a changed file, shown as the lines that hold every change
    since the same context read it whole (``route.served`` ``served_seq``)."""

    path: str
    """The file's resolved path."""
    ref: str
    """The ref the whole file, as read now, is stored under."""
    served_seq: int
    """The ``route.served`` event of the earlier whole read."""
    lines: int
    """The file's lines now."""
    tokens: int
    """The file's size in tokens."""
    first_line: int
    """The first line shown."""
    last_line: int
    """The last line shown."""
    shown_tokens: int
    """Tokens shown: those lines and the note."""


EVENTS: dict[str, object] = {
    "task.start": TaskStart, "task.update": TaskUpdate, "task.resume": TaskResume,
    "task.restore": TaskRestore, "task.status": TaskStatus, "memory.write": MemoryWrite,
    "precheck": Precheck,
    "observe.head": ObservePrompt, "observe.contract": ObservePrompt,
    "observe.action": ObserveActionEvent, "observe.result": ObservePayloadEvent,
    "observe.error": ObservePayloadEvent, "observe.file": ObservePayloadEvent,
    "observe.dropped": ObserveDropped, "prune.advice": PruneAdvice, "recall": Recall,
    "answer": Answer,
    "checkpoint.snapshot": CheckpointNew, "checkpoint.trim": CheckpointNew,
    "checkpoint.compact": CheckpointNew, "checkpoint.clear": CheckpointNew,
    "checkpoint.report": CheckpointRead, "checkpoint.restore": CheckpointRead,
    "checkpoint.resume": CheckpointRead,
    "handoff.create": HandoffCreate, "handoff.accept": HandoffAccept,
    "handoff.complete": HandoffComplete, "handoff.result": HandoffResult,
    "client.compacted": ClientCompacted, "route.read": RouteRead,
    "route.output": RouteOutput, "route.served": RouteServed, "route.reread": RouteReread,
    "route.payoff": RoutePayoff, "route.read_shaped": RouteReadShaped,
    "route.read_changed": RouteReadChanged,
}
"""Every event kind OSIRIS journals, and its record (a union where a kind has two
shapes)."""

VERSIONS: dict[str, int] = {**dict.fromkeys(EVENTS, 1), "route.served": 3}
"""The version of each kind's record (stamped into the body as ``v``). ``route.served``
2: the ``subagent`` whose context got the result; 3: the ``ref`` and ``content_sha256``
of the text it got."""

EventKind = Literal[
    "task.start", "task.update", "task.resume", "task.restore", "task.status",
    "memory.write", "precheck", "observe.head", "observe.contract", "observe.action",
    "observe.result", "observe.error", "observe.file", "observe.dropped", "prune.advice",
    "recall", "answer", "checkpoint.snapshot", "checkpoint.trim", "checkpoint.compact",
    "checkpoint.clear", "checkpoint.report", "checkpoint.restore", "checkpoint.resume",
    "handoff.create", "handoff.accept", "handoff.complete", "handoff.result",
    "client.compacted", "route.read", "route.output", "route.served", "route.reread",
    "route.payoff", "route.read_shaped", "route.read_changed"]
"""The kinds, for the type checker (a test keeps it equal to :data:`EVENTS`' keys)."""
