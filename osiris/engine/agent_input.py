"""Agent input is scrubbed once, where it enters the engine.

Every string an agent (or a client hook on its behalf) hands OSIRIS may hold a secret:
an objective, a constraint, a memory entry, a contract, a tool name, call arguments,
a payload. Each is scrubbed before anything else sees it, so no hash, seal, table row,
journal event, answer or report is ever computed from the raw text. This is structural,
not a call each writer must remember: :func:`scrubbing_facade` wraps every public
method of the :class:`~osiris.engine.Engine` facade (the only way into the engine for
the MCP server, the CLI, the hooks and the harness), and a test checks that none is
left unwrapped.

A payload that is scrubbed here arrives as :class:`~osiris.core.redaction.ScrubbedText`,
which carries the scrub's findings, so the payload path records how many secrets it held
without scrubbing it twice.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from osiris.core.redaction import scrub_value

T = TypeVar("T")

#: Arguments that are not agent-supplied: the caller's authenticated identity (an HTTP
#: bearer token's name from the operator's configuration), compared with stored owners.
TRUSTED_ARGUMENTS = frozenset({"principal"})


def scrubbed(method: Callable[..., T]) -> Callable[..., T]:
    """``method`` with every argument but the trusted ones scrubbed of secrets."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> T:
        clean_args = [scrub_value(a) for a in args]
        clean_kwargs = {k: v if k in TRUSTED_ARGUMENTS else scrub_value(v)
                        for k, v in kwargs.items()}
        return method(self, *clean_args, **clean_kwargs)

    wrapper.scrubs_agent_input = True  # type: ignore[attr-defined]
    return wrapper


def scrubbing_facade(cls: type[T]) -> type[T]:
    """Wrap every public method of ``cls`` (all but ``close``) with :func:`scrubbed`."""
    for name, member in list(vars(cls).items()):
        if name.startswith("_") or name == "close" or not callable(member):
            continue
        setattr(cls, name, scrubbed(member))
    return cls
