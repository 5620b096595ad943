"""``osiris hook CLIENT EVENT``: the process a client starts for each hook call.

It is on the path of every tool call, so it imports as little as it can: the settings,
the standard library and the owner's client (:mod:`osiris.store.owner_client`). The
store owner runs the hook (:func:`osiris.clients.hooks.run_hook`, with its engine) and
this process prints the answer. Only when no owner can serve, or to report a problem,
does it load the hook module itself and do the work here.
"""

from __future__ import annotations

import sys

from osiris.config import Settings, settings_to_wire
from osiris.core.client_hooks import CLIENTS, EVENTS
from osiris.errors import ConfigError, OsirisError


def run_hook_via_owner(settings: Settings, event: str, raw: bytes,
                       client: str = "claude-code") -> tuple[str, int]:
    """The hook handled by the home's store owner (started if none runs): the decision
    JSON and the exit code. Where no owner can serve, the hook runs in this process
    instead; a call the owner may have recorded before it died is not repeated."""
    from osiris.store.owner_client import OwnerClient, OwnerLost

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return _in_process(settings, event, raw, client)  # it reports the bad input
    owner = OwnerClient(settings.home, settings_to_wire(settings))
    try:
        result, _ = owner.request({"op": "hook", "client": client, "event": event,
                                   "raw": text})
    except OwnerLost as exc:
        return _skipped(settings, event, f"{exc.code}: {exc}", raw)
    except OsirisError:  # no owner: do the work here, as without one
        return _in_process(settings, event, raw, client)
    finally:
        owner.close()
    if result.get("stderr"):
        sys.stderr.write(str(result["stderr"]))
    return str(result.get("stdout") or ""), int(result.get("exit_code") or 0)


def _in_process(settings: Settings, event: str, raw: bytes, client: str) -> tuple[str, int]:
    from osiris.clients.hooks import run_hook

    outcome = run_hook(settings, event, raw, client)
    return outcome.stdout, outcome.exit_code


def _skipped(settings: Settings | None, event: str, problem: str,
             raw: bytes) -> tuple[str, int]:
    from osiris.clients.hooks import skipped

    outcome = skipped(settings, event, problem, raw)
    return outcome.stdout, outcome.exit_code


def main(argv: list[str]) -> int:
    """``osiris hook CLIENT EVENT`` (dispatched before the CLI is imported): the client's
    JSON on stdin, its decision JSON on stdout, exit 0 whatever OSIRIS's problem."""
    raw = sys.stdin.buffer.read()
    if len(argv) != 2 or argv[1] not in EVENTS:
        stdout, code = _skipped(None, argv[1] if len(argv) > 1 else "?",
                                "usage: osiris hook claude-code|codex " + "|".join(EVENTS),
                                raw)
    elif argv[0] not in CLIENTS:
        stdout, code = _skipped(None, argv[1], f"unknown client {argv[0]!r}: use "
                                + " or ".join(CLIENTS), raw)
    else:
        try:
            settings = Settings.from_env()
        except ConfigError as exc:
            stdout, code = _skipped(None, argv[1], f"configuration error: {exc}", raw)
        else:
            if settings.store_owner:
                stdout, code = run_hook_via_owner(settings, argv[1], raw, argv[0])
            else:
                stdout, code = _in_process(settings, argv[1], raw, argv[0])
    if stdout:
        sys.stdout.write(stdout + "\n")
    return code
