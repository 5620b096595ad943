"""Answers of ``precheck`` (a verdict on an intended action) and of ``hook`` (Claude
Code's ``mcp_tool`` hooks).

precheck's verdict is the most severe of what the invariants, the budget and LoopGuard
found: ``allow`` < ``warn`` < ``suggest_alternative`` < ``require_approval`` < ``block``.
``require_approval`` turns into ``allow`` only when the same action comes back with
``confirmed: true``; ``block`` cannot be confirmed away. With ``format="claude-code"``
(a client hook asking) the answer may also say how the hook should rewrite the call
(``route``); the client's decision JSON is the tool's text, not part of the answer.
"""

from __future__ import annotations

from typing import Literal, NotRequired

from typing_extensions import TypedDict

from osiris.contracts.shared import HookAdvice, Recommendation

Verdict = Literal["allow", "warn", "suggest_alternative", "require_approval", "block"]
"""precheck's verdicts, least severe first."""


class InsteadAlternative(TypedDict):
    """What a project invariant (``.osiris/invariants.toml``) suggests doing instead."""

    instead: str
    """The rule's ``alternative``, as written."""


class RecallAlternative(TypedDict):
    """LoopGuard's alternative to an exact repeat of a call: recall its stored result."""

    op: Literal["recall"]
    """Always ``recall``."""
    ref: str
    """The ref of the earlier call's stored result (``mem://sha256:…``)."""
    why: str
    """Why, in a sentence."""


class RoutePointer(TypedDict):
    """The hook denies a re-read: the file is unchanged and its first read is still in
    the conversation."""

    op: Literal["pointer"]
    """Always ``pointer``."""
    reason: str
    """What the hook tells the model instead of reading again."""


class RouteWindow(TypedDict):
    """The hook turns a large ``Read`` into a window of its first lines, the whole file
    stored as a ref."""

    op: Literal["window"]
    """Always ``window``."""
    offset: int
    """First line of the window (always 1)."""
    limit: int
    """Lines in the window (``read_window_lines`` of the routing rules)."""
    context: str
    """The context the hook adds for the model: the file's size, its ref, its outline
    and how to read the rest."""
    ref: str
    """Ref of the whole file (``mem://sha256:…``)."""


class PrecheckResult(TypedDict):
    """``precheck``: one verdict for an intended action, journaled with the caller."""

    task_id: str
    """The task (the real id when the call named ``session:<client session id>``)."""
    verdict: Verdict
    """``allow``; ``warn`` (go ahead, mind the reasons); ``suggest_alternative`` (do
    ``alternative`` instead); ``require_approval`` (ask the user, then repeat with
    ``confirmed=true``); ``block`` (do not: see ``required_action``)."""
    reasons: list[str]
    """``{source}: {message}`` per finding, most severe first (source
    ``invariant:<id>``, ``budget`` or ``loopguard:<pattern>``); empty when nothing was
    found."""
    required_action: NotRequired[str]
    """What must happen before the action may go ahead (absent when nothing is
    required)."""
    alternative: NotRequired[InsteadAlternative | RecallAlternative]
    """What to do instead (absent when no finding suggests anything)."""
    approved: NotRequired[bool]
    """Present (and true) when a ``require_approval`` was confirmed: the verdict became
    ``allow``."""
    rules_problems: NotRequired[list[str]]
    """Rules files that could not be read or parsed, one line each (absent when none;
    the last good rules stay in force)."""
    compass: NotRequired[list[Recommendation]]
    """Tools of the reported tool list that fit the active step better, best first, at
    most 3 (absent unless the best one is not the tool asked about)."""
    hook: NotRequired[HookAdvice]
    """The advice for a client hook (``format="claude-code"``): the engine returns it to
    the hook's adapter; the MCP tool sends the client's decision JSON as the text and
    leaves the advice out of this answer."""
    route: NotRequired[RoutePointer | RouteWindow]
    """How the client hook rewrites the call (``format="claude-code"`` only; absent when
    the hook's decision denies the call or asks the user, or when no routing applies).
    A Read whose only finding is an exact duplicate is not denied for it, so ``route``
    may come with ``suggest_alternative``."""


class PrecheckHookFailure(TypedDict):
    """``precheck(format="claude-code")`` that failed: the hook's text lets the call go
    ahead with a warning for the user (a hook never stops the user's tool)."""

    error: str
    """What went wrong: ``{code}: {message}``, or ``internal error {exception}``."""


PrecheckAnswer = PrecheckResult | PrecheckHookFailure
"""What ``precheck`` answers (a failure is ``PrecheckHookFailure`` only with
``format="claude-code"``; otherwise it is an error result)."""


class HookResult(TypedDict):
    """``hook``: how a Claude Code hook, run in the server, ended (its decision JSON is
    the tool's text, empty when OSIRIS has none)."""

    exit_code: int
    """The exit code the hook process would have (0: a hook never fails the tool)."""
    problem: str | None
    """Why OSIRIS skipped the hook, or what failed after it recorded the call (the user
    is warned and ``hooks.log`` has it); None when the hook ran."""


HookAnswer = HookResult
"""What ``hook`` answers."""
