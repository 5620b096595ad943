"""The MCP server: one factory for every transport (SPEC §8), :func:`build_server` in
:mod:`osiris.server.app`.

Re-exported here on first use: a stdio server imports :mod:`osiris.server.early` (this
package) before the MCP SDK, so that it can answer the handshake while the SDK loads.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from osiris.server.app import build_server


def __getattr__(name: str) -> object:
    if name == "build_server":
        from osiris.server.app import build_server

        return build_server
    raise AttributeError(f"module 'osiris.server' has no attribute {name!r}")


__all__ = ["build_server"]
