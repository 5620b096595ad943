"""Agent input is checked and scrubbed once, where it enters the engine.

Every string an agent (or a client hook on its behalf) hands OSIRIS may hold a secret:
an objective, a constraint, a memory entry, a contract, a tool name, call arguments,
a payload. Each is scrubbed before anything else sees it, so no hash, seal, table row,
journal event, answer or report is ever computed from the raw text. This is structural,
not a call each writer must remember: :func:`scrubbing_facade` wraps every public
method of the :class:`~osiris.engine.Engine` facade (the only way into the engine for
the MCP server, the CLI, the hooks and the harness), and a test checks that none is
left unwrapped.

The same walk refuses, with the argument's path, what no part of OSIRIS can store:
integers outside the range every JSON client represents exactly (DuckDB's BIGINT would
fail on them deep inside a transaction), non-finite floats, strings that are not valid
Unicode (a lone surrogate cannot be encoded as UTF-8), and nesting deeper than any tool
argument needs.

A payload that is scrubbed here arrives as :class:`~osiris.core.redaction.ScrubbedText`,
which carries the scrub's findings, so the payload path records how many secrets it held
without scrubbing it twice.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from typing import Any, TypeVar

from osiris.core.redaction import ScrubbedText, scrub
from osiris.errors import InvalidInputError

T = TypeVar("T")

#: Arguments that are not agent-supplied: the caller's authenticated identity (an HTTP
#: bearer token's name from the operator's configuration), compared with stored owners.
TRUSTED_ARGUMENTS = frozenset({"principal", "prepared"})
"""Set by OSIRIS itself: the transport's principal, a client's checked payload work."""
#: The integers every JSON implementation holds exactly (JavaScript's safe range).
MAX_SAFE_INTEGER = 2 ** 53 - 1
MAX_DEPTH = 64


def _invalid(path: str, problem: str) -> InvalidInputError:
    return InvalidInputError(f"{path}: {problem}")


def _text(value: str, path: str) -> ScrubbedText:
    try:
        return ScrubbedText(scrub(value))
    except UnicodeEncodeError as exc:
        raise _invalid(path, f"not valid Unicode text (a lone surrogate at character "
                             f"{exc.start}); send UTF-8 text") from None


def clean_value(value: Any, path: str, depth: int = 0) -> Any:
    """``value`` checked and with every string scrubbed (dict keys too); InvalidInputError,
    naming ``path``, for what OSIRIS cannot hold."""
    if isinstance(value, str) and not isinstance(value, ScrubbedText):
        return _text(value, path)
    if isinstance(value, int | float) and not isinstance(value, bool):
        _check_number(value, path)
        return value
    if not isinstance(value, dict | list | tuple):
        return value
    if depth >= MAX_DEPTH:
        raise _invalid(path, f"nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            name = f"{path}.{key}" if isinstance(key, str) and len(key) <= 40 else f"{path}.…"
            clean_key = str(_text(key, name)) if isinstance(key, str) else key
            out[clean_key] = clean_value(item, name, depth + 1)
        return out
    return type(value)(clean_value(item, f"{path}[{index}]", depth + 1)
                       for index, item in enumerate(value))


def _check_number(value: float, path: str) -> None:
    if isinstance(value, int) and not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        raise _invalid(path, f"integers must lie within ±{MAX_SAFE_INTEGER:,} "
                             f"(got one of {len(str(abs(value)))} digits)")
    if isinstance(value, float) and not math.isfinite(value):
        raise _invalid(path, "numbers must be finite")


def scrubbed(method: Callable[..., T]) -> Callable[..., T]:
    """``method`` with every argument but the trusted ones checked and scrubbed."""
    signature = inspect.signature(method)

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> T:
        bound = signature.bind(self, *args, **kwargs)
        for name, value in list(bound.arguments.items())[1:]:
            if name in TRUSTED_ARGUMENTS:
                continue
            if signature.parameters[name].kind is inspect.Parameter.VAR_KEYWORD:
                bound.arguments[name] = {k: clean_value(v, k) for k, v in value.items()}
            else:
                bound.arguments[name] = clean_value(value, name)
        return method(*bound.args, **bound.kwargs)

    wrapper.scrubs_agent_input = True  # type: ignore[attr-defined]
    return wrapper


def scrubbing_facade(cls: type[T]) -> type[T]:
    """Wrap every public method of ``cls`` (all but ``close``) with :func:`scrubbed`."""
    for name, member in list(vars(cls).items()):
        if name.startswith("_") or name == "close" or not callable(member):
            continue
        setattr(cls, name, scrubbed(member))
    return cls
