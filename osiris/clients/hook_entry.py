"""``osiris hook CLIENT EVENT``: the process a client starts for each hook call.

It is on the path of every tool call, so it imports as little as it can: ``os``,
``json`` and the owner's client (:mod:`osiris.owner_wire`), reading its
variables with :mod:`osiris.environ`. The store owner parses them into settings, runs
the hook (:func:`osiris.clients.hooks.run_hook`, with its engine) and this process prints
the answer. Only when no owner can serve, or to report a problem, does it load the
settings and the hook module and do the work here. ``osiris install`` writes the command
as ``PYTHON -S -P …/osiris/launch.py hook CLIENT EVENT`` (:mod:`osiris.launch`), which
also skips ``site``.

It waits for the owner at most ``OSIRIS_HOOK_TIMEOUT_S`` (3 s), starting it included:
an owner that is stopped, stuck, still starting, or that cannot open the store (now or
at a remembered start) ends in a logged skip, and the call goes ahead unchanged, well
inside the client's own hook timeout.
"""

from __future__ import annotations

import os
import sys

from osiris import environ
from osiris.clients.sitepath import full_path
from osiris.errors import ConfigError, OsirisError

CLIENTS = ("claude-code", "codex")
""":data:`osiris.clients.adapters.CLIENTS` (a test keeps them equal; importing that
module costs the hook's start ``dataclasses`` and ``re``)."""
EVENTS = ("pre-tool-use", "post-tool-use", "session-start")
""":data:`osiris.clients.hook_input.EVENTS`."""
PRIVATE_UMASK = 0o077
""":data:`osiris.store.fsutil.PRIVATE_UMASK` (a test keeps them equal; a client may not
import the store)."""


def run_hook_via_owner(event: str, raw: bytes, client: str = "claude-code") -> tuple[str, int]:
    """The hook handled by the home's store owner (started if none runs): the decision
    JSON and the exit code. Where no owner can serve, the hook runs in this process
    instead; a call the owner may have recorded before it died is not repeated, nor one
    that an owner which does not answer in time holds (it has the database)."""
    from osiris.owner_wire import OwnerClient, OwnerFailed, OwnerLost

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return _in_process(event, raw, client)  # it reports the bad input
    variables = environ.settings_variables()
    owner = OwnerClient(variables["OSIRIS_HOME"], environment=variables,
                        timeout_s=environ.hook_timeout_s(variables))
    try:
        result, _ = owner.request({"op": "hook", "client": client, "event": event,
                                   "raw": text})
    except (OwnerLost, OwnerFailed) as exc:  # OwnerTimeout is an OwnerLost
        return _skipped(event, f"{exc.code}: {exc}", raw, with_settings=True, client=client)
    except OsirisError:  # no owner: do the work here, as without one
        return _in_process(event, raw, client)
    finally:
        owner.close()
    if result.get("stderr"):
        sys.stderr.write(str(result["stderr"]))
    return str(result.get("stdout") or ""), int(result.get("exit_code") or 0)


def _in_process(event: str, raw: bytes, client: str) -> tuple[str, int]:
    full_path()  # the hook is done here: the installed packages are needed
    from osiris.clients.hooks import run_hook
    from osiris.config import Settings

    try:
        settings = Settings.from_env()
    except ConfigError as exc:
        return _skipped(event, f"configuration error: {exc}", raw, client=client)
    outcome = run_hook(settings, event, raw, client)
    return outcome.stdout, outcome.exit_code


def _skipped(event: str, problem: str, raw: bytes, *, with_settings: bool = False,
             client: str = "claude-code") -> tuple[str, int]:
    full_path()  # the hook is done here: the installed packages are needed
    from osiris.clients.hooks import skipped
    from osiris.config import Settings

    settings = None
    if with_settings:
        try:
            settings = Settings.from_env()
        except ConfigError:
            settings = None
    outcome = skipped(settings, event, problem, raw, client=client)
    return outcome.stdout, outcome.exit_code


def main(argv: list[str]) -> int:
    """``osiris hook CLIENT EVENT`` (dispatched before the CLI is imported): the client's
    JSON on stdin, its decision JSON on stdout, exit 0 whatever OSIRIS's problem."""
    # A hook process runs no command of the user's, only OSIRIS's work: what it creates in
    # the home (the home itself, hooks.log, and the store owner it starts, which inherits
    # the umask) is the user's alone.
    os.umask(PRIVATE_UMASK)
    raw = sys.stdin.buffer.read()
    try:
        stdout, code = _dispatch(argv, raw)
    except Exception as exc:  # a read-only or full home, anything: the call goes on
        stdout, code = _skipped(argv[1] if len(argv) > 1 else "?",
                                f"internal error {type(exc).__name__}: {exc}", raw)
    if stdout:
        sys.stdout.write(stdout + "\n")
    return code


def _dispatch(argv: list[str], raw: bytes) -> tuple[str, int]:
    if len(argv) != 2 or argv[1] not in EVENTS:
        stdout, code = _skipped(argv[1] if len(argv) > 1 else "?",
                                "usage: osiris hook claude-code|codex " + "|".join(EVENTS),
                                raw)
    elif argv[0] not in CLIENTS:
        stdout, code = _skipped(argv[1], f"unknown client {argv[0]!r}: use "
                                + " or ".join(CLIENTS), raw)
    elif environ.current().get("OSIRIS_STORE_OWNER", "").strip().lower() in ("", "on"):
        stdout, code = run_hook_via_owner(argv[1], raw, argv[0])
    else:  # off, or a bad value that the settings will name
        stdout, code = _in_process(argv[1], raw, argv[0])
    return stdout, code
