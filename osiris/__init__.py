"""OSIRIS: a local-first MCP server and research harness for AI coding agents."""

from osiris._version import __version__
from osiris.config import Settings
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
