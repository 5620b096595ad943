"""One exception tree for OSIRIS (a leaf module: it imports nothing of ours).

Every error carries a message that tells the reader what to do next. The MCP
layer turns an :class:`OsirisError` into an ``isError`` tool result with that
text; the CLI prints it on one line and exits non-zero.
"""

from __future__ import annotations


class OsirisError(Exception):
    """Base of every error OSIRIS raises on purpose."""

    #: Short machine-readable code, stable across versions (used in tool results).
    code = "osiris_error"


class ConfigError(OsirisError):
    """A setting (environment variable or config file) has a value OSIRIS cannot use."""

    code = "config_error"


class StoreError(OsirisError):
    """The state store cannot complete an operation."""

    code = "store_error"


class StoreBusyError(StoreError):
    """Another process held the store longer than the configured lock timeout."""

    code = "store_busy"


class SchemaError(StoreError):
    """The database was written by a newer OSIRIS or its migrations are inconsistent."""

    code = "schema_error"


class IntegrityError(StoreError):
    """Stored bytes or journal events do not match their recorded hashes."""

    code = "integrity_error"


class QueryCancelled(StoreError):
    """A reader's query ran past its time (``OSIRIS_QUERY_TIMEOUT_S``), or its client or
    the store owner went away while it ran, and DuckDB was told to stop it."""

    code = "query_cancelled"


class CommittedWithErrors(OsirisError):
    """The call's changes were committed (it took effect), but work after the commit
    failed, e.g. the journal witness could not be written. Not a StoreError on purpose:
    retrying the call would apply it a second time (a second task for ``plan start``)."""

    code = "committed_with_errors"


class NotFoundError(OsirisError):
    """A task, ref, checkpoint or handoff id does not exist (or is not visible)."""

    code = "not_found"


class InvalidInputError(OsirisError):
    """The caller passed a value that breaks the contract (type, size, pattern)."""

    code = "invalid_input"


class SandboxError(OsirisError):
    """A file path escapes OSIRIS_ROOTS, is too big, or is not a readable text file."""

    code = "sandbox_violation"


class PolicyError(OsirisError):
    """An action was refused by a rule (invariant, budget, registry)."""

    code = "policy_refused"


__all__ = [
    "CommittedWithErrors",
    "ConfigError",
    "IntegrityError",
    "InvalidInputError",
    "NotFoundError",
    "OsirisError",
    "PolicyError",
    "QueryCancelled",
    "SandboxError",
    "SchemaError",
    "StoreBusyError",
    "StoreError",
]


HOME_CREATORS = ("it is created by the first MCP server / hook that writes: run an agent "
                 "with OSIRIS (mcp-osiris) or `osiris serve` once, or point OSIRIS_HOME at "
                 "an existing home")
"""What makes a home exist (read-only commands never create one)."""


def missing_home_message(home: object) -> str:
    """The one sentence every read-only entry point gives for a home that is not there."""
    return f"there is no OSIRIS home at {home} (no osiris.duckdb); {HOME_CREATORS}"
