"""Answers of ``handoff``: delegation contracts a machine can check.

The parent task ``create``s a contract; the child agent ``accept``s it, which starts a
child task linked to the parent (the contract's refs handed over); ``complete``
validates the child's structured result against the contract with what OSIRIS observed
of the child's work, and on success hands the result's refs back to the parent;
``status`` says where a handoff stands.
"""

from __future__ import annotations

from typing import Literal, NotRequired

from typing_extensions import TypedDict

from osiris.contracts.shared import BudgetState


class ContractChecks(TypedDict):
    """The acceptance checks a contract names (a kind with no entries is left out)."""

    required_fields: NotRequired[list[str]]
    """Fields the child's result must have, non-empty."""
    commands_passed: NotRequired[list[str]]
    """Commands OSIRIS must have seen succeed in the child task (matched as
    substrings of the observed calls' arguments)."""
    paths_allowed: NotRequired[list[str]]
    """Globs every path the child changed must match."""
    paths_forbidden: NotRequired[list[str]]
    """Globs no path the child changed may match."""


class ContractBudget(TypedDict):
    """The child's budget under the contract."""

    tokens: int | None
    """Token limit (None: no token limit)."""
    cost_usd: float | None
    """Cost limit in USD (None: no cost limit)."""


class ContractBrief(TypedDict):
    """The few facts of a contract an answer repeats (the full contract is journaled)."""

    objective: str
    """The child's objective."""
    checks: NotRequired[ContractChecks]
    """The acceptance checks (absent when the contract names none)."""
    input_refs: NotRequired[int]
    """Number of refs handed to the child (absent when none)."""
    budget: NotRequired[ContractBudget]
    """The child's budget (absent when the contract sets neither limit)."""
    deadline: NotRequired[str]
    """The deadline, ISO 8601 in UTC (absent when there is none)."""


class CheckOutcome(TypedDict):
    """One acceptance check of a completion and how it went."""

    check: str
    """What was checked: ``result``, ``required_field:<name>``,
    ``command_passed:<command>``, ``paths_allowed``, ``paths_forbidden``, ``paths``,
    ``budget_tokens``, ``budget_cost`` or ``deadline``."""
    passed: bool
    """Whether it passed."""
    detail: str
    """What OSIRIS found, in a phrase."""


class HandoffCreated(TypedDict):
    """``handoff(mode="create")``: a new contract from the parent task."""

    handoff_id: str
    """The handoff's id (``h_`` and 16 hex digits): give it to the child agent."""
    status: Literal["created"]
    """Always ``created``."""
    task_id: str
    """The parent task."""
    contract: ContractBrief
    """The contract, in brief."""
    how: str
    """What to do next, in a sentence."""


class HandoffAccepted(TypedDict):
    """``handoff(mode="accept")``: the child task (accepting again returns the same one)."""

    handoff_id: str
    """The handoff accepted."""
    status: Literal["accepted"]
    """Always ``accepted``."""
    task_id: str
    """The child task: the child agent uses it as its ``task_id``."""
    parent_task_id: str
    """The task that created the handoff."""
    manifest: str
    """The child task's sealed manifest: keep it at the end of the context."""
    seal: str
    """The manifest's seal, to pass with each ``observe``."""
    contract: ContractBrief
    """The contract, in brief."""


class HandoffCompleted(TypedDict):
    """``handoff(mode="complete")`` whose result passed every check: the handoff and the
    child task are completed."""

    handoff_id: str
    """The handoff completed."""
    task_id: str
    """The child task."""
    status: Literal["completed"]
    """Always ``completed``."""
    accepted: Literal[True]
    """Always true: the result was accepted."""
    checks_passed: int
    """Number of checks run, all passed (0 when the contract has none)."""
    refs_returned: list[str]
    """Refs named in the result that the child holds, now handed to the parent task."""


class HandoffRejected(TypedDict):
    """``handoff(mode="complete")`` whose result failed a check: the handoff stays
    accepted, and the child may complete again."""

    handoff_id: str
    """The handoff."""
    task_id: str
    """The child task."""
    status: Literal["accepted"]
    """Always ``accepted``: the handoff is still open."""
    accepted: Literal[False]
    """Always false: the result was refused."""
    failed_checks: list[CheckOutcome]
    """The checks that failed (at least one)."""
    how: str
    """What to do next, in a sentence."""


class HandoffStatus(TypedDict):
    """``handoff(mode="status")``: where a handoff stands."""

    handoff_id: str
    """The handoff."""
    status: Literal["created", "accepted", "completed"]
    """``created`` (not accepted yet), ``accepted`` (a child task works on it; a refused
    completion leaves it so) or ``completed`` (a result was accepted)."""
    parent_task_id: str
    """The task that created it."""
    task_id: str | None
    """The child task (None until the handoff is accepted)."""
    contract: ContractBrief
    """The contract, in brief."""
    progress: NotRequired[str]
    """The child task's ``{completed}/{total}`` steps (present once accepted)."""
    budget: NotRequired[BudgetState]
    """Where the child task stands against its budget (present once accepted)."""
    last_checks: NotRequired[list[CheckOutcome] | Literal["passed"]]
    """The outcome of the last completion (present after one): the checks that failed,
    or ``passed`` when every check did."""


HandoffAnswer = (HandoffCreated | HandoffAccepted | HandoffCompleted | HandoffRejected
                 | HandoffStatus)
"""What ``handoff`` answers, by mode (``complete``: accepted or refused)."""
