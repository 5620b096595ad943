"""Client sessions: the task OSIRIS keeps for a session it only sees through hooks.

A client hook (Claude Code's PreToolUse/PostToolUse) carries the client's
``session_id``, not an OSIRIS task id. The first time a session is seen, OSIRIS starts
a task for it without announcing the manifest (``plan(start, announce=False)``) and
records the mapping; afterwards the session resolves to that task, in every process.
``precheck`` and ``observe`` accept ``session:<session_id>`` as the task id, so an
``mcp_tool`` hook can call ``osiris_precheck`` with it directly. The first hook answer
of a session tells the agent the task id, so its own calls can join the same task.
"""

from __future__ import annotations

from typing import Any

from osiris.engine import planning
from osiris.engine.context import EngineContext, authorize, check_task_id
from osiris.errors import InvalidInputError, NotFoundError
from osiris.store import statements
from osiris.store.state import Tx

SESSION_PREFIX = "session:"
_ALLOWED = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


def check_session_id(session_id: object) -> str:
    """A client session id (1-128 of letters, digits, ``-_.``), or InvalidInputError."""
    if not isinstance(session_id, str) or not session_id.strip():
        raise InvalidInputError("session_id is required: the client's session id")
    text = session_id.strip()
    if len(text) > 128 or not set(text) <= _ALLOWED:
        raise InvalidInputError(f"{text[:40]!r} is not a session id (1-128 letters, digits, "
                                "'-', '_' or '.')")
    return text


def check_subagent(subagent: object) -> str | None:
    """A client's subagent id (1-128 of letters, digits, ``-_.``), None for the main
    agent (None or empty), or InvalidInputError."""
    if subagent is None or subagent == "":
        return None
    if not isinstance(subagent, str) or len(subagent) > 128 or not set(subagent) <= _ALLOWED:
        raise InvalidInputError(f"{str(subagent)[:40]!r} is not a subagent id (1-128 "
                                "letters, digits, '-', '_' or '.')")
    return str(subagent)


def session_task(ctx: EngineContext, tx: Tx, session_id: str, *, client: str,
                 cwd: str | None = None, principal: str | None = None) -> tuple[str, bool]:
    """The task of ``session_id``, created on first sight; returns (task_id, created)."""
    session_id = check_session_id(session_id)
    row = tx.con.execute(statements.SESSION_TASK, [session_id]).fetchone()
    if row is not None:
        try:
            authorize(tx.con, row[0], principal)
        except NotFoundError:
            # Another identity's session: say so without naming its task.
            raise NotFoundError(f"client session {session_id!r} belongs to another "
                                "identity; it cannot be joined") from None
        return str(row[0]), False
    where = f" in {cwd}" if cwd else ""
    answer: dict[str, Any] = planning.plan_start(
        ctx, tx, objective=f"{client} session {session_id}{where}", steps=None,
        active_step=None, constraints=None, decisions=None, agent_id=client,
        project_id=None, budget=None, owner=principal, announce=False)
    task_id = str(answer["task_id"])
    tx.con.execute("INSERT INTO client_sessions VALUES (?, ?, ?, ?, ?)",
                   [session_id, client, task_id, cwd, tx.now_us])
    return task_id, True


def resolve_task(ctx: EngineContext, tx: Tx, task_id: object, principal: str | None, *,
                 client: str = "client", cwd: str | None = None) -> tuple[str, bool]:
    """A task id the caller may use, and whether it was just created: a plain id, or
    ``session:<id>`` (created on first sight)."""
    if isinstance(task_id, str) and task_id.strip().startswith(SESSION_PREFIX):
        session = task_id.strip()[len(SESSION_PREFIX):]
        return session_task(ctx, tx, session, client=client, cwd=cwd, principal=principal)
    task = check_task_id(task_id)
    authorize(tx.con, task, principal)
    return task, False


def first_sight_note(task_id: str) -> str:
    """What a client hook tells the agent when OSIRIS starts a task for its session."""
    return f"OSIRIS task {task_id} governs this session: use it as task_id with OSIRIS tools."

