"""Resources and the resume prompt: read-only views of the engine's state, served by the
SDK's low-level server through the engine's one gate.

``osiris://task/{task_id}/manifest``, ``…/status``, ``osiris://ref/{+ref}`` (the exact
bytes of a ref), ``osiris://context`` and the prompt ``osiris/task-resume``. A client's
mistake (an unknown URI or prompt, a missing argument, a task that does not exist) is a
JSON-RPC invalid-params error (-32602) that names what to fix.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from typing import Any

from mcp import MCPError
from mcp.types import (
    INVALID_PARAMS,
    BlobResourceContents,
    GetPromptRequestParams,
    GetPromptResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    Prompt,
    PromptArgument,
    PromptMessage,
    ReadResourceRequestParams,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    TextContent,
    TextResourceContents,
)

from osiris.core.display import escape_controls
from osiris.errors import OsirisError
from osiris.server.answers import model_facing
from osiris.server.tools import EngineGate, bounded_text, principal_of

JSON = "application/json"
RESUME = "osiris/task-resume"
TEMPLATES = (
    ResourceTemplate(name="ref", uri_template="osiris://ref/{+ref}",
                     description="Raw bytes of a ref (mem://sha256:…), verified against its "
                                 "hash"),
    ResourceTemplate(name="task-manifest", uri_template="osiris://task/{task_id}/manifest",
                     description="Active zones, drift state, objective and manifest",
                     mime_type=JSON),
    ResourceTemplate(name="task-status", uri_template="osiris://task/{task_id}/status",
                     description="Live context pressure, budget and plan progress",
                     mime_type=JSON),
)
CONTEXT = Resource(name="operating-context", uri="osiris://context",
                   description="The operating context: doctrine, project registry, defaults",
                   mime_type=JSON)
PROMPT = Prompt(name=RESUME, title="Resume an OSIRIS task",
                description="Recover after a crash from the stored task state alone",
                arguments=[PromptArgument(name="task_id", required=True)])
_TASK = re.compile(r"osiris://task/(?P<task_id>[^/]+)/(?P<view>manifest|status)")
_REF = re.compile(r"osiris://ref/(?P<ref>.+)", re.S)


def _json(value: dict[str, Any]) -> str:
    # Read by the model like any answer: control characters escaped (osiris.core.display).
    return json.dumps(model_facing(value), ensure_ascii=False, indent=1)


def _invalid(message: str) -> MCPError:
    return MCPError(INVALID_PARAMS, message)


class ResourceRouter:
    """The resource and prompt handlers of the low-level server."""

    def __init__(self, gate: EngineGate) -> None:
        self.gate = gate

    async def _call(self, fn: Callable[[Any], Any]) -> Any:
        """``fn(engine)`` through the gate; a domain error becomes -32602 naming what to
        fix, quoting at most a short scrubbed excerpt of the input."""
        try:
            return await self.gate.call(fn)
        except OsirisError as exc:
            raise _invalid(bounded_text(f"{exc.code}: {exc}")) from None

    async def list_resources(self, ctx: Any, params: Any) -> ListResourcesResult:
        return ListResourcesResult(resources=[CONTEXT])

    async def list_templates(self, ctx: Any, params: Any) -> ListResourceTemplatesResult:
        return ListResourceTemplatesResult(resource_templates=list(TEMPLATES))

    async def read(self, ctx: Any, params: ReadResourceRequestParams) -> ReadResourceResult:
        uri, principal = str(params.uri), principal_of(ctx)
        if uri == CONTEXT.uri:
            text = _json(await self._call(lambda e: e.operating_context(None)))
            return ReadResourceResult(contents=[TextResourceContents(
                uri=uri, text=text, mime_type=JSON)])
        if task := _TASK.fullmatch(uri):
            task_id = task["task_id"]
            view = (lambda e: e.manifest_view(task_id, principal)) \
                if task["view"] == "manifest" else (lambda e: e.status_view(task_id, principal))
            return ReadResourceResult(contents=[TextResourceContents(
                uri=uri, text=_json(await self._call(view)), mime_type=JSON)])
        if ref := _REF.fullmatch(uri):
            data, _ = await self._call(lambda e: e.ref_bytes(ref["ref"], principal))
            return ReadResourceResult(contents=[BlobResourceContents(
                uri=uri, blob=base64.b64encode(bytes(data)).decode(),
                mime_type="application/octet-stream")])
        raise _invalid(f"unknown resource {bounded_text(uri, 120)!r}; read osiris://context, "
                       "osiris://task/{task_id}/manifest, osiris://task/{task_id}/status "
                       "or osiris://ref/{ref}")

    async def list_prompts(self, ctx: Any, params: Any) -> ListPromptsResult:
        return ListPromptsResult(prompts=[PROMPT])

    async def get_prompt(self, ctx: Any, params: GetPromptRequestParams) -> GetPromptResult:
        if params.name != RESUME:
            raise _invalid(f"unknown prompt {params.name[:80]!r}; available: {RESUME}")
        task_id = (params.arguments or {}).get("task_id")
        if not task_id:
            raise _invalid(f"prompt {RESUME!r} needs the argument(s) task_id")
        principal = principal_of(ctx)
        view = await self._call(lambda e: e.resume_view(task_id, principal))
        return GetPromptResult(description=PROMPT.description, messages=[PromptMessage(
            role="user", content=TextContent(type="text", text=resume_text(view)))])


def resume_text(view: dict[str, Any]) -> str:
    """The resume prompt's text: the stored task state, for a model that lost its own."""
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
