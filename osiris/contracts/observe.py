"""The answers of ``observe``: per kind, what OSIRIS stored and what the agent should
keep, with the drift, the budget, prune advice and (when the manifest changed) the new
manifest."""

from __future__ import annotations

from typing import Literal, NotRequired

from typing_extensions import TypedDict

from osiris.contracts.shared import BudgetState, Drift, HookAdvice, VolatileToken


class LoopPattern(TypedDict):
    """A LoopGuard pattern the call matched."""

    pattern: str
    """``exact_duplicate``, ``repeated_failure``, ``loop_pattern``, ``oscillation``,
    ``runaway``, …"""
    level: str
    """How strongly the next such call is discouraged: ``warn``,
    ``suggest_alternative`` or ``block``."""
    message: str
    """What happened and what to do instead."""


class Loop(TypedDict):
    """What LoopGuard found about this call."""

    patterns: list[LoopPattern]
    """The patterns matched (may be empty for a plain repeat)."""
    duplicate_of_event: NotRequired[int]
    """The journal event of the identical earlier call, when there was one."""


class Usage(TypedDict):
    """The provider usage the agent reported, against OSIRIS's estimate."""

    prompt_tokens: int
    """The prompt size the provider reported."""
    estimated_prompt_tokens: int
    """OSIRIS's own estimate of the prompt (what it saw enter the context)."""
    difference_tokens: int
    """``prompt_tokens - estimated_prompt_tokens``."""
    cost_usd: float
    """What the turn cost under the cost model, 6 decimals."""


class PruneTarget(TypedDict):
    """A payload to evict."""

    ref: str
    """Its ref."""
    tokens: int
    """Its size in tokens."""
    zone: str
    """Its prompt zone: ``A`` (head), ``B`` (tool list), ``C`` (working set), ``D``."""


class MoreToPrune(TypedDict):
    """Payloads advised beyond those listed."""

    refs: int
    """How many."""
    tokens: int
    """Their tokens."""
    how: str
    """When they are listed."""


class Prune(TypedDict):
    """Prune advice: what to evict now (present only when advice triggered)."""

    mode: Literal["cache_ttl", "conservative", "balanced", "aggressive"]
    """The prune mode (``OSIRIS_PRUNE_MODE``)."""
    triggered: Literal[True]
    """Always true here."""
    trigger: str
    """Why: the pressure past the threshold, or an expired prompt cache."""
    drop: list[PruneTarget]
    """The largest payloads to evict, at most a handful."""
    pruned_tokens: int
    """Tokens all advised payloads hold."""
    net_savings_tokens: int
    """What dropping them saves, net of re-prefilling the cached prefix."""
    how: str
    """How to evict and report it."""
    more: NotRequired[MoreToPrune]
    """Advised payloads not listed yet."""


class Observed(TypedDict):
    """What every ``observe`` answer carries."""

    task_id: str
    """The task."""
    drift: Drift
    """The drift found (from the seal you passed, or what this call changed)."""
    budget: BudgetState
    """The budget's state."""
    manifest: NotRequired[str]
    """The new manifest, when it changed, drifted, or is shown for the first time: put
    it at the end of your context in place of the old one."""
    seal: NotRequired[str]
    """The new manifest's seal (with ``manifest``)."""
    usage: NotRequired[Usage]
    """The usage you reported, against OSIRIS's estimate (when ``usage`` was passed)."""
    hook: NotRequired[HookAdvice]
    """Only for a client hook through the Python API: the advice for the model, which
    the client's adapter says in the client's JSON."""


class ShellReplaced(TypedDict):
    """A client's large output OSIRIS stored and shows as a preview (the hook puts
    ``text`` where the client would have shown the output)."""

    output: Literal["shell", "mcp"]
    """What was replaced: a shell command's output, or another MCP server's."""
    text: str
    """What the model is shown instead of the output: the preview and the ref."""
    ref: str
    """Ref of the output as the client gave it (``mem://sha256:…``)."""
    tokens: int
    """Tokens of the stored output."""
    complete: bool
    """Whether the stored output is the whole output (false: the client had already cut
    it, as Codex does past 64 KiB)."""


class ReadReplaced(TypedDict):
    """A Claude Code ``Read`` OSIRIS answers with part of the file (the hook puts
    ``content`` where the client would have shown the whole file)."""

    content: str
    """The lines shown: the file's first lines (a mid-size read shaped), or the lines
    that hold every change since the earlier read (a re-read after an edit)."""
    lines: int
    """How many lines ``content`` holds."""
    start: NotRequired[int]
    """The file line ``content`` starts at (absent: 1)."""
    context: str
    """The note shown beside them: where the rest is, and how to get it."""
    ref: str | None
    """Ref of the whole file as read (None: the read was not stored)."""
    tokens: int
    """Tokens of the whole file."""


class Called(Observed):
    """An observe of a call (action, result, error, file): LoopGuard and prune ran."""

    loop: NotRequired[Loop]
    """What LoopGuard found (absent: nothing)."""
    prune: NotRequired[Prune]
    """What to evict now (absent: nothing)."""
    shown: NotRequired[str]
    """Only through the Python API with ``routed``: the text that stands for the output
    in a loop that owns its history."""
    replaced: NotRequired[ShellReplaced]
    """Only for a client hook through the Python API: the output's replacement."""
    replaced_read: NotRequired[ReadReplaced]
    """Only for a Claude Code hook through the Python API: part of a ``Read`` shown in
    place of the whole file."""


class ObservePrompt(Observed):
    """``observe(kind="head"|"contract")``: the system prompt or the tool list recorded."""

    kind: Literal["head", "contract"]
    """The kind observed."""
    ref: str
    """The ref it is stored under."""
    tokens: int
    """Its size in tokens."""
    redacted: int
    """Secrets scrubbed from it before storing."""
    volatile: list[VolatileToken]
    """Tokens in it that break the prompt cache when they change."""


class ObserveAction(Called):
    """``observe(kind="action")`` without a result: the call recorded."""

    kind: Literal["action"]
    """The kind observed."""
    recorded: Literal[True]
    """Always true."""


PayloadKind = Literal["action", "result", "error", "file"]


class ObserveStored(Called):
    """A result, error or file stored, and how it reaches you (``mode``)."""

    kind: PayloadKind
    """The kind observed (an action with a result is stored like a result)."""
    ref: str
    """The payload's ref: ``recall`` it for any part, exactly."""
    tokens: int
    """The payload's size in tokens."""
    mode: Literal["bystander", "light", "standard", "full"]
    """``bystander``: small, kept as it is; ``light``, ``standard``, ``full``: keep only
    the ref and the preview."""
    reason: str
    """Why that mode."""
    redacted: NotRequired[int]
    """Secrets scrubbed from it (present when there were any)."""
    content: NotRequired[str]
    """A small file's text (``file`` in ``bystander`` mode only)."""
    preview: NotRequired[str]
    """The preview to keep instead of the payload (externalized only)."""
    preview_tokens: NotRequired[int]
    """Its size in tokens."""
    lines: NotRequired[int]
    """The payload's lines."""
    strategy: NotRequired[str]
    """How the preview was cut: ``errors``, ``outline``, ``head_tail``, …"""
    recall: NotRequired[str]
    """The recall operations that fit this payload."""


class ObserveDuplicate(Called):
    """The same tool, arguments and output as a result already stored."""

    kind: PayloadKind
    """The kind observed."""
    duplicate: Literal[True]
    """Always true."""
    ref: str
    """The original's ref."""
    tokens: int
    """The original's size in tokens."""
    first_seen_us: int
    """When it was stored (µs since the epoch)."""
    hint: str
    """What to do: drop this copy, recall the ref when needed."""


class ObserveUnchanged(Called):
    """``observe(kind="file")`` of a file whose bytes have not changed since the task
    read it."""

    kind: Literal["file"]
    """The kind observed."""
    unchanged: Literal[True]
    """Always true."""
    ref: str
    """The ref of the earlier read."""
    path: str
    """The file's resolved path."""
    hint: str
    """What to do: recall the ref instead of reading again."""


class ObserveDropped(Observed):
    """``observe(kind="dropped")``: receipts for the payloads you evicted."""

    kind: Literal["dropped"]
    """The kind observed."""
    dropped: int
    """Refs with a receipt (one already dropped gets none)."""
    proven_saved_tokens: int
    """Savings this drop proves."""
    context_freed_tokens: int
    """Tokens the drop took out of your context."""
    already_dropped: NotRequired[Literal[True]]
    """Nothing was left to drop."""


ObserveAnswer = (ObservePrompt | ObserveAction | ObserveStored | ObserveDuplicate
                 | ObserveUnchanged | ObserveDropped)
"""Every answer of ``observe``."""
