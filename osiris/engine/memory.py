"""The memory registry over the store: writes, scoped lookups, automatic entries."""

from __future__ import annotations

from typing import Any

from osiris.core.hashing import canonical_json
from osiris.core.memory import KINDS, SCOPES, MemoryEntry, parse_entry, scope_chain
from osiris.core.task_state import TaskState
from osiris.engine.context import journal
from osiris.errors import InvalidInputError
from osiris.store import statements
from osiris.store.state import Tx

MAX_RESULTS = 20


def put(tx: Tx, entry: MemoryEntry, task_id: str) -> bool:
    """Store an entry once; True when it is new."""
    row = tx.con.execute(statements.MEMORY_EXISTS, [entry.entry_id]).fetchone()
    if row is not None:
        return False
    tx.con.execute(
        statements.MEMORY.sql,
        [entry.entry_id, entry.scope, entry.scope_id, entry.kind, entry.key,
         canonical_json(entry.value), task_id, tx.now_us])
    return True


def write(tx: Tx, state: TaskState, entries: list[Any]) -> list[str]:
    """Write the agent's entries; return their ids."""
    if len(entries) > 50:
        raise InvalidInputError("write at most 50 memory entries per call")
    ids = []
    for raw in entries:
        entry = parse_entry(raw, task_id=state.task_id, project_id=state.project_id,
                            agent_id=state.agent_id)
        put(tx, entry, state.task_id)
        ids.append(entry.entry_id)
    journal(tx, "memory.write", {"entries": ids}, task_id=state.task_id)
    return ids


def lookup(tx: Tx, state: TaskState, query: dict[str, Any]) -> list[dict[str, Any]]:
    """Entries visible to the task (task → project → agent → global), filtered."""
    unknown = sorted(set(query) - {"kind", "scope", "key"})
    if unknown:  # {"write": [...]} must not read everything back as if it were a lookup
        raise InvalidInputError(
            f"unknown memory lookup field(s) {unknown}: look up with {{kind, scope, key}} "
            "(all optional), or pass a list of entries to write them")
    kind, scope, key = query.get("kind"), query.get("scope"), query.get("key")
    if kind is not None and kind not in KINDS:
        raise InvalidInputError(f"memory kind must be one of {', '.join(KINDS)}")
    if scope is not None and scope not in SCOPES:
        raise InvalidInputError(f"memory scope must be one of {', '.join(SCOPES)}")
    chain = scope_chain(state.task_id, state.project_id, state.agent_id)
    if scope is not None:
        chain = [pair for pair in chain if pair[0] == scope]
    rank = {pair: i for i, pair in enumerate(chain)}
    out: list[tuple[int, int, dict[str, Any]]] = []
    for scope_name, scope_id in chain:
        sql = ("SELECT kind, key, value, created_us, entry_id FROM memory WHERE scope = ? AND"
               " scope_id = ?")
        params: list[Any] = [scope_name, scope_id]
        if kind is not None:
            sql += " AND kind = ?"
            params.append(kind)
        if key is not None:
            sql += " AND key = ?"
            params.append(key)
        for k, name, value, created, entry_id in tx.con.execute(sql, params).fetchall():
            out.append((rank[(scope_name, scope_id)], -int(created),
                        {"scope": scope_name, "kind": k, "key": name,
                         "value": _parse(value), "entry_id": entry_id}))
    out.sort(key=lambda item: (item[0], item[1], item[2]["key"]))
    return [entry for _, _, entry in out[:MAX_RESULTS]]


def _parse(value: str) -> Any:
    import json

    return json.loads(value)


def remember(tx: Tx, state: TaskState, kind: str, key: str, value: Any,
             scope: str = "task") -> None:
    """An automatic entry (a decision, a file read, a handoff result)."""
    scope_id = {"task": state.task_id, "project": state.project_id,
                "agent": state.agent_id, "global": ""}.get(scope)
    if scope_id is None:
        return
    put(tx, MemoryEntry(scope, scope_id, kind, key, value), state.task_id)
