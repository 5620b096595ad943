"""OSIRIS: a local-first MCP server and research harness for AI coding agents."""

from __future__ import annotations

from osiris._version import __version__
from osiris.errors import (
    ConfigError,
    IntegrityError,
    InvalidInputError,
    NotFoundError,
    OsirisError,
    PolicyError,
    SandboxError,
    SchemaError,
    StoreBusyError,
    StoreError,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from osiris.config import Settings


def __getattr__(name: str) -> object:
    # Settings is loaded when asked for: hooks and `osiris run` import the package on
    # every tool call and need none of config's imports (dataclasses, pathlib).
    if name == "Settings":
        from osiris.config import Settings

        return Settings
    raise AttributeError(f"module 'osiris' has no attribute {name!r}")


__all__ = [
    "ConfigError",
    "IntegrityError",
    "InvalidInputError",
    "NotFoundError",
    "OsirisError",
    "PolicyError",
    "SandboxError",
    "SchemaError",
    "Settings",
    "StoreBusyError",
    "StoreError",
    "__version__",
]
