"""The MCP server's factory: one for every transport (SPEC §8).

:func:`build_server` wires the engine to the six tools, the resources and the
resume prompt, with the operating context's doctrine as ``instructions``. Transports
(:mod:`osiris.server.transports`) know nothing of the engine; the engine knows
nothing of MCP.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer

from osiris._version import __version__
from osiris.config import Settings
from osiris.core.operating_context import instructions_text
from osiris.engine.operating_context import OperatingContextLoader
from osiris.engine.remote import RemoteEngine
from osiris.server.definitions import DISPATCH, TOOLS
from osiris.server.resources import prompt_guard, register_resources
from osiris.server.tools import EngineGate, argument_guard, build_tools, hook_calls


def build_server(settings: Settings, engine: Any = None) -> MCPServer:
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
        instructions = instructions_text(context)
        engine.start_owner()  # in the background: the first tool call finds it ready
    else:
        instructions = engine.instructions()
    tools = build_tools(gate, dotted=settings.tool_names == "dotted",
                        dispatch_only=settings.dispatch_only, hook_tool=settings.hook_tool)
    server = MCPServer("osiris", title="OSIRIS", version=__version__,
                       instructions=instructions, tools=tools,
                       log_level=settings.log_level)  # type: ignore[arg-type]
    # Not osiris_hook: a hook's problem must be a warning, never an error that stops a tool.
    server.middleware.append(argument_guard((*TOOLS, DISPATCH), settings.tool_names == "dotted"))
    if settings.hook_tool:
        server.middleware.append(hook_calls(gate, settings.tool_names == "dotted"))
    register_resources(server, gate)
    server.middleware.append(prompt_guard(server))
    return server


__all__ = ["build_server"]
