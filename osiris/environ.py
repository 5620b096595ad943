"""The process environment: the only module of OSIRIS that reads ``os.environ``.

:mod:`osiris.config` parses what this module reads into :class:`~osiris.config.Settings`.
The two are apart because hooks and ``osiris run`` start a process on every tool call of
an agent: they read the variables here, with nothing but ``os`` imported, and hand them
to the home's store owner, which parses them (``config`` costs the ``dataclasses``,
``pathlib`` and ``ipaddress`` imports, several milliseconds of every start).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # not typing's: its import costs a millisecond of every hook
if TYPE_CHECKING:
    from collections.abc import Mapping

PREFIX = "OSIRIS_"
OTHER_NAMES = ("HOME", "CODEX_HOME", "CLAUDE_CONFIG_DIR")
"""Variables other than ``OSIRIS_*`` that :meth:`Settings.from_env` reads."""
DEFAULT_HOME = "~/.osiris"
DEFAULT_HOOK_TIMEOUT_S = 3.0
"""``OSIRIS_HOOK_TIMEOUT_S``'s default: well inside the 10 s that ``osiris install`` gives a
hook (a hook answers in tens of milliseconds; an owner starts in about a second)."""
DEFAULT_OWNER_TIMEOUT_S = 30.0
"""``OSIRIS_OWNER_TIMEOUT_S``'s default (every client of the store owner but the hooks)."""


def current() -> Mapping[str, str]:
    """This process's environment (read, never changed)."""
    return os.environ


def process_environment() -> dict[str, str]:
    """A copy of this process's environment, for what runs a command in it as it is
    (``osiris run``): the variables are passed on, not interpreted."""
    return dict(os.environ)


def home_path(env: Mapping[str, str]) -> str:
    """``OSIRIS_HOME`` made absolute (``~`` expanded, relative to this process's
    directory), or ``~/.osiris``: the same path :meth:`Settings.from_env` gives."""
    raw = env.get("OSIRIS_HOME", "").strip() or DEFAULT_HOME
    return os.path.abspath(os.path.expanduser(raw))


def settings_variables(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables settings are made of (``OSIRIS_*`` and :data:`OTHER_NAMES`), with
    ``OSIRIS_HOME`` absolute: what a light client sends the store owner, which builds
    the settings from them (:meth:`Settings.from_env`) as the client would have."""
    env = os.environ if env is None else env
    picked = {k: v for k, v in env.items() if k.startswith(PREFIX) or k in OTHER_NAMES}
    picked["OSIRIS_HOME"] = home_path(env)
    return picked


def hook_timeout_s(env: Mapping[str, str]) -> float:
    """``OSIRIS_HOOK_TIMEOUT_S`` as a light client reads it, without the settings: its
    default when unset or not a positive number (the store owner, which parses every
    variable it is sent, reports a bad value in the hook's answer)."""
    try:
        value = float(env.get("OSIRIS_HOOK_TIMEOUT_S", "").strip() or DEFAULT_HOOK_TIMEOUT_S)
    except ValueError:
        return DEFAULT_HOOK_TIMEOUT_S
    return value if 0 < value < float("inf") else DEFAULT_HOOK_TIMEOUT_S
