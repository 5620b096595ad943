"""The MCP server: one factory for every transport (SPEC §8).

:func:`build_server` wires the engine to the six tools, the resources and the
resume prompt, with the operating context's doctrine as ``instructions``. Transports
(:mod:`osiris.server.transports`) know nothing of the engine; the engine knows
nothing of MCP.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from osiris._version import __version__
from osiris.config import Settings
from osiris.core.operating_context import instructions_text
from osiris.engine import Engine
from osiris.server.definitions import DISPATCH, TOOLS
from osiris.server.resources import prompt_guard, register_resources
from osiris.server.tools import EngineGate, argument_guard, build_tools


def build_server(settings: Settings, engine: Engine | None = None) -> MCPServer:
    """The OSIRIS MCP server for ``settings`` (the engine is created unless given)."""
    engine = engine or Engine(settings)
    gate = EngineGate(engine)
    # The soft layer is read once: the instructions stay fixed for the life of the
    # process (an HTTP server must be restarted to serve an edited summary).
    context, _ = engine.ctx.operating.load()
    tools = build_tools(gate, dotted=settings.tool_names == "dotted",
                        dispatch_only=settings.dispatch_only)
    server = MCPServer("osiris", title="OSIRIS", version=__version__,
                       instructions=instructions_text(context), tools=tools,
                       log_level=settings.log_level)  # type: ignore[arg-type]
    server.middleware.append(argument_guard((*TOOLS, DISPATCH), settings.tool_names == "dotted"))
    register_resources(server, gate)
    server.middleware.append(prompt_guard(server))
    return server


__all__ = ["build_server"]
