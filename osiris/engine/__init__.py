"""Engine: the one facade over core and store that the MCP server, the CLI and the
benchmark all drive (:class:`~osiris.engine.facade.Engine`).

Importing this package is cheap: the facade (and DuckDB, the tokenizer and every
operation behind it) loads on first use of ``Engine``, so a process that reaches the
store through its owner (:func:`~osiris.engine.remote.open_engine`) never loads them.
This module only re-exports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from osiris.engine.facade import PLAN_MODES, Engine
    from osiris.engine.remote import open_engine

__all__ = ["PLAN_MODES", "Engine", "open_engine"]


def __getattr__(name: str) -> Any:
    if name in ("Engine", "PLAN_MODES"):
        from osiris.engine import facade

        return getattr(facade, name)
    if name == "open_engine":
        from osiris.engine import remote

        return remote.open_engine
    raise AttributeError(f"module 'osiris.engine' has no attribute {name!r}")
