"""Answers of ``checkpoint``: ``snapshot``; ``trim``, ``compact`` and ``clear`` (a
snapshot plus what may leave the agent's context, with refs and a summary to keep);
``restore`` (the exact bytes back, in pages); ``resume`` (a checkpoint's state);
``report`` (the task's completion report).

A snapshot stores the task state as deduplicated parts (one blob each) and a small
index; unchanged parts are shared with earlier snapshots.
"""

from __future__ import annotations

from typing import Literal

from typing_extensions import TypedDict

from osiris.contracts.shared import BudgetState, PlanProgress

CheckpointKind = Literal["snapshot", "trim", "compact", "clear"]
"""The modes that take a checkpoint (``restore`` and ``resume`` read one)."""


class CheckpointSnapshot(TypedDict):
    """``checkpoint(mode="snapshot")``: the task state stored, nothing leaves."""

    task_id: str
    """The task checkpointed."""
    mode: Literal["snapshot"]
    """Always ``snapshot``."""
    checkpoint_id: str
    """The checkpoint's id (``c_`` and 16 hex digits), for ``restore`` and ``resume``."""
    state_ref: str
    """Ref of the snapshot's index blob (``mem://sha256:…``), which names its parts."""
    bytes_new: int
    """Bytes this snapshot newly wrote to the store (parts unchanged since an earlier
    snapshot are shared and cost nothing)."""
    bytes_total: int
    """Bytes of the whole snapshot (every part and the index), shared or not."""


class CheckpointCompaction(TypedDict):
    """``checkpoint(mode="trim" | "compact" | "clear")``: a snapshot and the payloads that
    may leave the agent's context, with the summary block to keep in their place."""

    task_id: str
    """The task checkpointed."""
    mode: Literal["trim", "compact", "clear"]
    """``trim``: older payloads (zone D) leave, the working set stays; ``compact``: every
    payload leaves; ``clear``: everything OSIRIS holds leaves, head and contract too."""
    checkpoint_id: str
    """The checkpoint's id (``c_`` and 16 hex digits): pass it to
    ``observe(kind="dropped")`` once the payloads are gone, and to ``restore``."""
    state_ref: str
    """Ref of the snapshot's index blob (``mem://sha256:…``), which names its parts."""
    bytes_new: int
    """Bytes this snapshot newly wrote to the store (parts unchanged since an earlier
    snapshot are shared and cost nothing)."""
    bytes_total: int
    """Bytes of the whole snapshot (every part and the index), shared or not."""
    leaving: int
    """Number of payloads that may leave the context (each listed in ``summary``)."""
    tokens_leaving: int
    """Tokens the context sheds when they leave."""
    summary: str
    """The block to keep instead: the manifest, then one line per leaving payload (its
    ref's start, tool, kind, tokens and first line) and how to restore them."""
    how: str
    """What to do with the summary, in a sentence."""


class RestoredPiece(TypedDict):
    """One page of one item a checkpoint took out."""

    ref: str
    """The item's ref (a payload; for a snapshot, the snapshot's index)."""
    offset: int
    """Character offset in the item's text where this piece starts."""
    text: str
    """The item's text from ``offset`` (a snapshot: the state as canonical JSON), control
    characters escaped; ``osiris://ref/{ref}`` gives the exact bytes."""
    complete: bool
    """Whether the piece reaches the end of the item."""


class RestoreNext(TypedDict):
    """The arguments that continue a cut restore."""

    checkpoint_id: str
    """The checkpoint being restored."""
    item: int
    """Index (from 0) of the item to continue with."""
    offset: int
    """Character offset in that item to continue from."""


class CheckpointRestore(TypedDict):
    """``checkpoint(mode="restore")``: the exact text of what a checkpoint took out (of a
    snapshot: its state), in pages bounded by ``max_tokens``."""

    task_id: str
    """The task."""
    mode: Literal["restore"]
    """Always ``restore``."""
    checkpoint_id: str
    """The checkpoint restored."""
    of: CheckpointKind
    """The mode that took it: for ``trim``/``compact``/``clear`` the items are the
    payloads that left; for ``snapshot``, the one item is the task state."""
    items: list[RestoredPiece]
    """The pieces in this page, in order (empty when nothing is left from ``item`` on,
    e.g. a checkpoint that let nothing leave)."""
    truncated: bool
    """Whether more is left (``next`` says where)."""
    next: RestoreNext | None
    """The arguments that continue the restore (None when everything was given)."""


class LeftItem(TypedDict):
    """A payload a compaction checkpoint let leave the context."""

    ref: str
    """Its ref (``mem://sha256:…``): ``recall`` it to see it again."""
    summary: str
    """Its first non-empty line, at most 80 characters (``…`` when cut)."""


class CheckpointResume(TypedDict):
    """``checkpoint(mode="resume")``: what the task looked like at a checkpoint, to
    continue from it (the live state is not rewound: pinned items are append-only)."""

    task_id: str
    """The task."""
    mode: Literal["resume"]
    """Always ``resume``."""
    checkpoint_id: str
    """The checkpoint resumed from."""
    of: CheckpointKind
    """The mode that took the checkpoint."""
    created_us: int
    """When the checkpoint was taken, in microseconds since the Unix epoch."""
    manifest: str
    """The task's manifest as it was at the checkpoint."""
    objective: str
    """The objective at the checkpoint."""
    constraints: list[str]
    """The pinned constraints at the checkpoint, verbatim, in order."""
    decisions: list[str]
    """The pinned decisions at the checkpoint, verbatim, in order."""
    plan: PlanProgress
    """The plan's progress at the checkpoint."""
    leaving: list[LeftItem]
    """The payloads the checkpoint let leave the context (empty for a snapshot)."""
    current_manifest: str
    """The task's manifest now (what the agent must carry from here on)."""


class FailureSummary(TypedDict):
    """A failure the task recorded (the same error signature, counted)."""

    signature: str
    """Hex digest of the normalised error (tool family and error text)."""
    attempts: int
    """How many times it failed that way."""
    resolved: bool
    """Whether a later call of the same family succeeded."""


class ReportLedger(TypedDict):
    """The task's ledger, summed."""

    tokens_externalized: int
    """Tokens of payloads OSIRIS stored as refs instead of the context."""
    saved_claimed: int
    """Tokens OSIRIS claims to have kept out of the context (payloads externalized or
    made droppable)."""
    saved_proven: int
    """Tokens the agent proved it dropped (drop receipts): at most ``saved_claimed``."""
    osiris_overhead_tokens: int
    """Tokens OSIRIS's own answers added to the context."""
    provider_cost_usd: float
    """Input cost of the provider usage the agent reported, under the cost model, in
    USD (6 decimals; 0 without reported usage)."""
    drift_events: int
    """Drifts that cost a prompt-cache prefill."""


class ReportAudit(TypedDict):
    """The non-loss proof of the task (``osiris audit --task``), in brief."""

    lossless: bool
    """Whether every ref the task holds or names is present and intact, the journal's
    hash chain holds and every ledger row is backed by a journal event."""
    items_verified: int
    """Blobs re-hashed and found intact."""
    items_externalized: int
    """Refs the task holds or names (its refs, and those in its events, ledger and
    checkpoints)."""


class CheckpointReport(TypedDict):
    """``checkpoint(mode="report")``: the task's completion report: progress, decisions,
    files, savings and the audit."""

    task_id: str
    """The task."""
    mode: Literal["report"]
    """Always ``report``."""
    objective: str
    """The task's objective."""
    status: Literal["active", "completed"]
    """``active``; ``completed`` once a handoff's result was accepted for it."""
    progress: str
    """``{completed}/{total}`` steps."""
    completed_steps: list[str]
    """The completed steps' texts."""
    active_step: str | None
    """The active step's text (None when no step is active)."""
    remaining_steps: list[str]
    """The texts of the steps not completed yet."""
    decisions: list[str]
    """The pinned decisions, verbatim, in order."""
    constraints: list[str]
    """The pinned constraints, verbatim, in order."""
    files: list[str]
    """Paths of the files the task observed."""
    refs: int
    """Number of refs the task holds."""
    failures: list[FailureSummary]
    """The failures recorded (the last 20)."""
    lessons: list[str]
    """Lessons learned from failures that were later resolved."""
    ledger: ReportLedger
    """The task's savings and costs."""
    budget: BudgetState
    """Where the task stands against its budget."""
    audit: ReportAudit
    """Whether nothing of the task was lost or altered."""


CheckpointAnswer = (CheckpointSnapshot | CheckpointCompaction | CheckpointRestore
                    | CheckpointResume | CheckpointReport)
"""What ``checkpoint`` answers, by mode."""
