"""Resources and the resume prompt: read-only views of the engine's state."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mcp import MCPError
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import INVALID_PARAMS

from osiris.core.display import escape_controls
from osiris.errors import OsirisError
from osiris.server.answers import model_facing
from osiris.server.tools import EngineGate, bounded_text, principal_of


def _json(value: dict[str, Any]) -> str:
    # Read by the model like any answer: control characters escaped (osiris.core.display).
    return json.dumps(model_facing(value), ensure_ascii=False, indent=1)


def _guard(fn: Any) -> Any:
    """Domain errors become clean JSON-RPC errors (-32602) naming what to fix, quoting
    at most a short scrubbed excerpt of the input."""
    try:
        return fn()
    except OsirisError as exc:
        raise MCPError(INVALID_PARAMS, bounded_text(f"{exc.code}: {exc}")) from None


def prompt_guard(server: MCPServer) -> Any:
    """Middleware: ``prompts/get`` for an unknown prompt or without a required argument
    is answered -32602 (invalid params), as the spec wants. The SDK (mcp 2.3) raises a
    ValueError for both, which reaches the client as code 0 (2025-11-25) or -32603
    "Internal server error" with a logged traceback (2026-07-28)."""

    async def guard(ctx: Any, call_next: Any) -> Any:
        if ctx.method == "prompts/get" and isinstance(ctx.params, Mapping):
            name = ctx.params.get("name")
            prompts = {p.name: p for p in await server.list_prompts()}
            prompt = prompts.get(name) if isinstance(name, str) else None
            if prompt is None:
                raise MCPError(INVALID_PARAMS, f"unknown prompt {str(name)[:80]!r}; "
                               f"available: {', '.join(sorted(prompts))}")
            given = ctx.params.get("arguments") or {}
            missing = [a.name for a in prompt.arguments or ()
                       if a.required and (not isinstance(given, Mapping) or a.name not in given)]
            if missing:
                raise MCPError(INVALID_PARAMS, f"prompt {prompt.name!r} needs the "
                               f"argument(s) {', '.join(missing)}")
        return await call_next(ctx)

    return guard


def register_resources(server: MCPServer, gate: EngineGate) -> None:
    """``osiris://task/{task_id}/manifest``, ``…/status``, ``osiris://ref/{ref}``,
    ``osiris://context`` and the prompt ``osiris/task-resume``."""

    @server.resource("osiris://task/{task_id}/manifest", name="task-manifest",
                     description="Active zones, drift state, objective and manifest",
                     mime_type="application/json")
    def task_manifest(task_id: str, ctx: Context) -> str:
        principal = principal_of(ctx)
        return _json(_guard(lambda: gate.run(lambda e: e.manifest_view(task_id, principal))))

    @server.resource("osiris://task/{task_id}/status", name="task-status",
                     description="Live context pressure, budget and plan progress",
                     mime_type="application/json")
    def task_status(task_id: str, ctx: Context) -> str:
        principal = principal_of(ctx)
        return _json(_guard(lambda: gate.run(lambda e: e.status_view(task_id, principal))))

    @server.resource("osiris://ref/{+ref}", name="ref",
                     description="Raw bytes of a ref (mem://sha256:…), verified against its hash")
    def ref_bytes(ref: str, ctx: Context) -> bytes:
        principal = principal_of(ctx)
        data, _ = _guard(lambda: gate.engine.ref_bytes(ref, principal))
        return bytes(data)

    @server.resource("osiris://context", name="operating-context",
                     description="The operating context: doctrine, project registry, defaults",
                     mime_type="application/json")
    def operating_context() -> str:
        return _json(gate.engine.operating_context(None))

    @server.prompt(name="osiris/task-resume", title="Resume an OSIRIS task",
                   description="Recover after a crash from the stored task state alone")
    def task_resume(task_id: str, ctx: Context) -> str:
        principal = principal_of(ctx)
        view = _guard(lambda: gate.run(lambda e: e.resume_view(task_id, principal)))
        plan = view["plan"]
        steps = "\n".join(
            f"{'[x]' if i in plan['completed'] else '[>]' if i == plan['active'] else '[ ]'} "
            f"{i + 1}. {s}" for i, s in enumerate(plan["steps"])) or "(no plan)"
        constraints = [f"- {c}" for c in view["constraints"]] or ["- (none)"]
        decisions = [f"- {d}" for d in view["decisions"]] or ["- (none)"]
        lines = [
            f"You are resuming OSIRIS task {view['task_id']} after a crash or a context "
            "reset. Everything below comes from OSIRIS's store; trust it over your memory.",
            "", f"Objective: {view['objective']}", "",
            "Constraints (pinned, verbatim):", *constraints, "",
            "Decisions (pinned, verbatim; append, never rewrite):", *decisions, "",
            "Plan:", steps, "",
        ]
        if view["lessons"]:
            lines += ["Lessons learned:", *[f"- {x}" for x in view["lessons"]], ""]
        if view["files"]:
            lines += ["Files read (recall their refs instead of re-reading):",
                      *[f"- {f}" for f in view["files"][:30]], ""]
        lines += [
            "First call osiris_plan(mode=\"resume\", task_id=\"" + view["task_id"] + "\") to "
            "confirm the state, then keep this manifest at the END of your context and pass "
            "its SEAL line to osiris_observe every turn:", "", view["manifest"]]
        return escape_controls("\n".join(lines))
