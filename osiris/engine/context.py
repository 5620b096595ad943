"""What every engine operation needs, and the task load/save discipline.

One engine call is one store transaction: the task is loaded inside it, changed
by pure core functions, saved, and the journal event that describes the change
(with the new state's hash) commits with it.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import duckdb

from osiris.config import Settings
from osiris.contracts.events import VERSIONS
from osiris.core.cost_models import CostModel
from osiris.core.hashing import canonical_json, ref_digest_prefix, ref_for_digest
from osiris.core.task_state import TaskState
from osiris.core.tokens import TokenCounter
from osiris.engine.operating_context import OperatingContextLoader
from osiris.engine.rules import RulesLoader
from osiris.errors import InvalidInputError, NotFoundError
from osiris.store import statements
from osiris.store.db import fetch_row
from osiris.store.journal import JournalEvent
from osiris.store.state import Store, Tx

TASK_ID_PREFIX = "t_"


@dataclass
class EngineContext:
    """Collaborators shared by the engine's operations."""

    settings: Settings
    store: Store
    counter: TokenCounter
    cost_model: CostModel
    rules: RulesLoader
    operating: OperatingContextLoader
    task_ids: Callable[[], str] | None = None
    """Replaces random task ids (the benchmark's, for identical figures across runs)."""

    def new_task_id(self) -> str:
        """An unguessable task id (96 random bits), unless ``task_ids`` supplies one."""
        if self.task_ids is not None:
            return self.task_ids()
        return TASK_ID_PREFIX + secrets.token_hex(12)


def check_task_id(task_id: object) -> str:
    """A syntactically valid task id, or InvalidInputError."""
    if not isinstance(task_id, str) or not task_id.strip():
        raise InvalidInputError("task_id is required: pass the id returned by "
                                "plan(mode='start')")
    task_id = task_id.strip()
    if len(task_id) > 128 or not all(c.isalnum() or c in "_-.:" for c in task_id):
        raise InvalidInputError(f"{task_id[:40]!r} is not a task id")
    return task_id


def authorize(con: duckdb.DuckDBPyConnection, task_id: str, principal: str | None) -> None:
    """NotFoundError unless the task exists and ``principal`` may use it.

    A task created under an HTTP bearer identity belongs to it; another identity gets
    the same answer as for a task that does not exist (no existence oracle).
    """
    row = con.execute(statements.TASK_OWNER, [task_id]).fetchone()
    if row is None or (principal is not None and row[0] != principal):
        raise NotFoundError(f"task {task_id!r} does not exist; start one with "
                            "plan(mode='start') or check the id in your manifest")


def resolve_ref(con: Any, ref: object, principal: str | None = None) -> str:
    """The whole ref for a whole ref or its short form (:func:`short_ref`, what previews
    show); the answer an unknown ref gets when no ref of the home starts so, and an
    InvalidInputError naming the way out when two do. A principal's short ref resolves
    among the refs it may read, so another's cannot make it ambiguous."""
    digits = ref_digest_prefix(ref)
    if len(digits) == 64:
        return ref_for_digest(digits)
    prefix = ref_for_digest(digits)
    found = [row[0] for row in con.execute(statements.REFS_FROM_PREFIX,
                                           [prefix, prefix + "g"]).fetchall()]
    if principal is not None:
        found = [r for r in found if con.execute(
            statements.PRINCIPAL_HOLDS_REF, [r, principal]).fetchone() is not None]
    if not found:
        raise NotFoundError(f"{prefix} is unknown to this OSIRIS home")
    if len(found) > 1:
        raise InvalidInputError(f"{prefix} starts more than one ref of this home: give the "
                                "whole ref (64 hex digits), as the journal or the "
                                "dashboard shows it")
    return str(found[0])


def check_ref_visible(con: Any, ref: str, principal: str | None) -> None:
    """NotFoundError unless ``principal`` may read ``ref``.

    A ref is a capability within one principal: an HTTP bearer identity reads a ref only
    when a task it owns holds it (observed there, or handed to it); the local user (no
    principal: stdio, hooks, the CLI, a server without tokens) owns the home and reads
    every ref of it. Another identity's ref gets the answer an unknown ref gets (no
    existence oracle)."""
    if principal is None:
        return
    if con.execute(statements.PRINCIPAL_HOLDS_REF, [ref, principal]).fetchone() is None:
        raise NotFoundError(f"{ref} is unknown to this OSIRIS home")


def load_task(tx: Tx, task_id: str, model: CostModel | None = None) -> TaskState:
    """The task's state inside a transaction (derived counts refreshed when a cost model
    is given); NotFoundError when absent."""
    row = tx.con.execute(statements.TASK_STATE, [task_id]).fetchone()
    if row is None:
        raise NotFoundError(f"task {task_id!r} does not exist; start one with "
                            "plan(mode='start') or check the id in your manifest")
    saved = _SAVED.get(task_id)
    if saved is not None and saved[0] == row[0]:
        state = saved[1]
    else:
        state = TaskState.from_dict(json.loads(row[0]))
    return derived_counts(tx.con, state, model) if model is not None else state


_SAVED: dict[str, tuple[str, TaskState]] = {}
"""The state this process last saved for a task, with its text. A load whose stored text
is that text gets the same (immutable) state back instead of parsing it again: the same
text is the same state, whoever wrote it and in whichever home. This also lets the
nested records keep their plain form from one call to the next."""
_SAVED_MAX = 256
_SAVED_LOCK = threading.Lock()


def journal(tx: Tx, kind: str, body: Mapping[str, Any], *, task_id: str | None,
            ) -> JournalEvent:
    """Append a ``kind`` event whose body is ``body`` stamped with the version of its
    record in the catalogue (:mod:`osiris.contracts.events`): every event the engine
    journals goes through here."""
    version = VERSIONS.get(kind)
    if version is None:
        raise ValueError(f"{kind!r} is not in the event catalogue (osiris.contracts.events)")
    return tx.event(kind, {**body, "v": version}, task_id=task_id)


def save_task(tx: Tx, state: TaskState, kind: str, body: dict[str, Any]) -> int:
    """Persist ``state`` and journal ``kind`` with its body and the new state hash."""
    text = canonical_json(state.as_dict())
    digest = tx.update_task(state.task_id, text, status=state.status)
    with _SAVED_LOCK:
        _SAVED.pop(state.task_id, None)
        if len(_SAVED) >= _SAVED_MAX:
            _SAVED.pop(next(iter(_SAVED)))  # the least recently saved
        _SAVED[state.task_id] = (text, state)
    event = journal(tx, kind, {**body, "state_hash": digest}, task_id=state.task_id)
    return event.seq


def derived_counts(con: duckdb.DuckDBPyConnection, state: TaskState,
                   model: CostModel) -> TaskState:
    """Figures that the ledger and other tables own: refs held, tokens in context by
    source, and (until the agent reports provider usage) the estimated consumption."""
    refs = fetch_row(con, statements.TASK_REF_COUNT, [state.task_id])[0]
    rows = con.execute(statements.CONTEXT_BY_SOURCE, [state.task_id]).fetchall()
    measured = tuple(sorted((str(src), int(total)) for src, total, _ in rows if total))
    state = replace(state, refs=int(refs), measured=measured)
    if state.budget_source == "estimate":
        added = sum(int(pos) for _, _, pos in rows)
        state = replace(state, budget=replace(
            state.budget, tokens_consumed=added,
            cost_consumed_usd=round(model.token_cost(added), 8)))
    return state


def account_answer(ctx: EngineContext, tx: Tx, task_id: str | None, operation: str,
                   answer: dict[str, Any], shown: str | None = None) -> None:
    """Ledger row for an answer: its tokens enter the agent's context and are OSIRIS's
    overhead (counted on the structured form, which is what clients show the model).
    ``shown``: only this text reaches the model (a client hook's decision reason or
    added context); an empty one costs nothing and books no row."""
    if shown is not None and not shown:
        return
    tokens = ctx.counter.count(canonical_json(answer) if shown is None else shown)
    # The row is booked on an event of its own task (the audit checks that every ledger row
    # of a task is backed by one): an operation that journaled nothing for this task (a
    # handoff status, a memory lookup, a repeated accept, the child's side of an accept)
    # journals the answer itself.
    seq = tx.last_event_of(task_id)
    if seq is None:
        seq = journal(tx, "answer", {"operation": operation, "tokens": tokens},
                      task_id=task_id).seq
    tx.ledger(kind=f"answer.{operation}", task_id=task_id, event_seq=seq,
              encoding=ctx.counter.encoding_name, tokens=tokens, overhead_tokens=tokens,
              context_tokens=tokens, cost_model=ctx.cost_model.name,
              cost_usd=ctx.cost_model.token_cost(tokens))
