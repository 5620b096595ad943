"""Engine: the one facade over core and store that the MCP server, the CLI and the
benchmark all drive (:class:`~osiris.engine.facade.Engine`).

Importing this package is cheap: the facade (and DuckDB, the tokenizer and every
operation behind it) loads on first use of ``Engine``, so a process that reaches the
store through its owner (:func:`open_engine`) never loads them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from osiris.config import Settings
    from osiris.engine.facade import PLAN_MODES, Engine, check_client_format

__all__ = ["PLAN_MODES", "Engine", "check_client_format", "open_engine"]


def __getattr__(name: str) -> Any:
    if name in ("Engine", "PLAN_MODES", "check_client_format"):
        from osiris.engine import facade

        return getattr(facade, name)
    raise AttributeError(f"module 'osiris.engine' has no attribute {name!r}")


def open_engine(settings: Settings) -> Any:
    """The engine a serving process should use: the home's store owner's
    (:class:`osiris.store.remote.RemoteEngine`) when ``OSIRIS_STORE_OWNER`` is on (the
    default), else an :class:`Engine` that opens the database for each call."""
    if settings.store_owner:
        from osiris.store.remote import RemoteEngine

        return RemoteEngine(settings)
    from osiris.engine.facade import Engine

    return Engine(settings)
