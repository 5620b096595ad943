"""The MCP server's factory: one for every transport (SPEC §8).

:func:`build_server` wires the engine to the six tools, the resources and the resume
prompt, with the operating context's doctrine as ``instructions``. It builds the SDK's
low-level ``Server``: OSIRIS's tool schemas are written by hand
(:mod:`osiris.server.definitions`), so they are listed as written and validated once
(:class:`~osiris.server.tools.ToolRouter`), with nothing derived from Python signatures.
Every handler reaches the engine through one :class:`~osiris.server.tools.EngineGate`.
Transports (:mod:`osiris.server.transports`) know nothing of the engine; the engine
knows nothing of MCP.
"""

from __future__ import annotations

from typing import Any

from mcp.server import Server

from osiris._version import __version__
from osiris.config import Settings
from osiris.core.operating_context import DOCTRINE, HOOKS_DOCTRINE, instructions_text
from osiris.engine.operating_context import OperatingContextLoader
from osiris.engine.remote import RemoteEngine
from osiris.server.resources import ResourceRouter
from osiris.server.tools import EngineGate, ToolRouter


def build_server(settings: Settings, engine: Any = None) -> Server[Any]:
    """The OSIRIS MCP server for ``settings``. The engine is the home's store owner's
    (:class:`osiris.engine.remote.RemoteEngine`) unless ``OSIRIS_STORE_OWNER=off`` or one
    is given (an :class:`osiris.engine.Engine` in process)."""
    from osiris.engine import open_engine

    engine = engine or open_engine(settings)
    gate = EngineGate(engine)
    # The soft layer is read once: the instructions stay fixed for the life of the
    # process (an HTTP server must be restarted to serve an edited summary). Read here,
    # not asked of the store owner: a server starts without waiting for one.
    if isinstance(engine, RemoteEngine):
        context, _ = OperatingContextLoader(settings.sidecar_path).load()
        instructions = instructions_text(context, settings.surface)
        engine.start_owner()  # in the background: the first tool call finds it ready
    else:
        instructions = engine.instructions()
        if settings.surface == "hooks":
            instructions = instructions.replace(DOCTRINE, HOOKS_DOCTRINE, 1).strip()
    tools = ToolRouter(gate, dotted=settings.tool_names == "dotted",
                       dispatch_only=settings.dispatch_only, hook_tool=settings.hook_tool,
                       surface=settings.surface)
    views = ResourceRouter(gate)
    # The hooks surface lists no resources or prompts: a client names the tools that
    # read them in every request (Claude Code: three deferred tool names).
    extra: dict[str, Any] = {} if settings.surface == "hooks" else {
        "on_list_resources": views.list_resources,
        "on_list_resource_templates": views.list_templates, "on_read_resource": views.read,
        "on_list_prompts": views.list_prompts, "on_get_prompt": views.get_prompt}
    server: Server[Any] = Server(
        "osiris", title="OSIRIS", version=__version__, instructions=instructions or None,
        get_tool_input_schema=tools.input_schema, on_list_tools=tools.list_tools,
        on_call_tool=tools.call_tool, **extra)
    return server


__all__ = ["build_server"]
