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
