"""What OSIRIS's two HTTP surfaces (the MCP server's Streamable HTTP transport and the
dashboard) admit: one list of loopback names for their Host and Origin allow-lists, and
one constant-time bearer-token check. Each surface adds its own bind address and the
user's ``OSIRIS_HTTP_ALLOWED_HOSTS`` / ``_ORIGINS``."""

from __future__ import annotations

import hmac
from collections.abc import Iterable

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
"""Host names a loopback request carries (an IPv6 address is bracketed in ``Host``)."""


def bearer_token(header: str) -> str:
    """The token of an ``Authorization: Bearer <token>`` header ("" for any other)."""
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def token_name(presented: str, tokens: Iterable[tuple[str, str]]) -> str | None:
    """The name of the known token ``presented`` is, or None. Every known token is
    compared, in constant time, whatever matched before."""
    found = None
    for name, known in tokens:
        if hmac.compare_digest(presented.encode(), known.encode()) and presented:
            found = name
    return found
