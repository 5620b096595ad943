"""The tool compass over the store: the agent's reported tools, ranked for its step."""

from __future__ import annotations

from typing import Any

import duckdb

from osiris.core.compass import ToolInfo, costly, parse_tool_list, rank
from osiris.core.task_state import TaskState
from osiris.engine.context import EngineContext

_PARSED: dict[str, tuple[ToolInfo, ...]] = {}


def _tools_of(digest: str, text: str, ctx: EngineContext) -> tuple[ToolInfo, ...]:
    # A contract rarely changes: parse (and count) each one once per process.
    if digest not in _PARSED:
        if len(_PARSED) > 32:
            _PARSED.clear()
        _PARSED[digest] = tuple(parse_tool_list(text, ctx.counter))
    return _PARSED[digest]


def compass_for(ctx: EngineContext, con: duckdb.DuckDBPyConnection,
                state: TaskState) -> dict[str, Any] | None:
    """Recommendations for the active step (or the objective), None without a contract."""
    ref = state.zones.contract_ref
    if ref is None:
        return None
    text = ctx.store.refs.get(ref).decode("utf-8", errors="replace")
    tools = list(_tools_of(state.zones.contract_digest, text, ctx))
    if not tools:
        return None
    step = state.plan.steps[state.plan.active] if state.plan.active is not None \
        else state.objective
    history = {str(tool): (int(ok), int(total)) for tool, ok, total in con.execute(
        "SELECT tool, count(*) FILTER (WHERE NOT is_error), count(*) FROM calls"
        " WHERE task_id = ? GROUP BY tool", [state.task_id]).fetchall()}
    out: dict[str, Any] = {"for": step[:80], "recommended": [
        {"tool": r.name, "score": r.score, "why": r.why} for r in rank(tools, step, history)]}
    heavy = costly(tools)
    if heavy:
        out["costly"] = heavy[:5]
    return out
