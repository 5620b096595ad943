"""Claude Code's command hooks: ``osiris hook claude-code pre-tool-use|post-tool-use``.

The hook reads Claude Code's JSON on stdin, finds (or creates) the OSIRIS task of the
session, and answers on stdout in Claude Code's format (see
:mod:`osiris.core.client_hooks` for the verdict mapping). PreToolUse runs ``precheck``;
PostToolUse (and PostToolUseFailure) runs ``observe`` with the tool's result or error,
so LoopGuard, dedup and the ledger see every call, including calls to other MCP
servers. Calls to OSIRIS's own tools are left alone.

A hook must never stand between the user and their tool because of OSIRIS: malformed
input, an unknown event or any failure of OSIRIS itself is logged (stderr and
``$OSIRIS_HOME/hooks.log``) and answered with no decision plus a ``systemMessage``
warning, exit code 0.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from dataclasses import dataclass, replace
from typing import Any

from osiris.config import Settings
from osiris.core import client_hooks
from osiris.core.client_hooks import HookCall
from osiris.engine import Engine
from osiris.errors import CommittedWithErrors, OsirisError

log = logging.getLogger(__name__)
CLIENT = "claude-code"
# Below the timeout `osiris install` gives the hook (10 s): a busy store must end in a
# logged skip, not in Claude Code killing the hook and waiting out its timeout.
HOOK_LOCK_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class HookOutcome:
    """What the hook process writes and how it exits."""

    stdout: str
    exit_code: int
    problem: str | None = None


def pre_tool_use(engine: Engine, call: HookCall) -> dict[str, Any]:
    """Precheck the intended call; Claude Code's decision for it."""
    if call.own_tool:
        return {}
    answer = engine.precheck(f"session:{call.session_id}", call.tool, args=call.tool_input,
                             path=call.path, actor=f"{CLIENT}:{call.session_id}",
                             client_format=CLIENT, cwd=call.cwd)
    return dict(answer["client_output"])


def post_tool_use(engine: Engine, call: HookCall) -> dict[str, Any]:
    """Observe the call's result or error; what the agent should hear about it."""
    if call.own_tool:
        return {}
    text, failed = client_hooks.response_text(call)
    answer = engine.observe(f"session:{call.session_id}", "error" if failed else "result",
                            tool=call.tool, args=call.tool_input, result=text,
                            actor=f"{CLIENT}:{call.session_id}", client_format=CLIENT,
                            client_event=call.event, cwd=call.cwd)
    return dict(answer["client_output"])


def run_hook(settings: Settings, event: str, raw: bytes) -> HookOutcome:
    """Handle one hook invocation; never raises and never blocks because of OSIRIS."""
    try:
        call = client_hooks.parse_hook_input(raw, event)
    except OsirisError as exc:
        return skipped(settings, event, f"malformed hook input: {exc}", raw)
    settings = replace(settings, lock_timeout_s=min(settings.lock_timeout_s,
                                                    HOOK_LOCK_TIMEOUT_S))
    try:
        with Engine(settings) as engine:
            handler = pre_tool_use if event == "pre-tool-use" else post_tool_use
            doc = handler(engine, call)
    except CommittedWithErrors as exc:  # the call is recorded; only later work failed
        return skipped(settings, event, f"{exc.code}: {exc}", raw, recorded=True)
    except OsirisError as exc:
        return skipped(settings, event, f"{exc.code}: {exc}", raw)
    except Exception as exc:  # any failure of OSIRIS must leave the user's tool alone
        log.exception("OSIRIS hook failed")
        return skipped(settings, event, f"internal error {type(exc).__name__}: {exc}", raw)
    return HookOutcome(client_hooks.decision_json(doc) if doc else "", 0)


def skipped(settings: Settings | None, event: str, problem: str, raw: bytes, *,
            recorded: bool = False) -> HookOutcome:
    """Log the problem (``hooks.log`` when the settings are known); let the tool call go
    ahead with a visible warning, exit 0. ``recorded``: OSIRIS did record the call (its
    transaction committed) and only work after the commit failed."""
    line = json.dumps({"ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       "client": CLIENT, "event": event, "problem": problem,
                       "recorded": recorded,
                       "input_bytes": len(raw)},  # not the input itself: it may hold secrets
                      ensure_ascii=False)
    if settings is not None:
        try:
            settings.home.mkdir(parents=True, exist_ok=True)
            with settings.hooks_log_path.open("a", encoding="utf-8") as fh:
                fh.write(line + "\n")
        except OSError as exc:  # the log is a courtesy; the answer must still go out
            log.warning("cannot write %s: %s", settings.hooks_log_path, exc)
    sys.stderr.write(f"osiris: hook {event} {'recorded, but' if recorded else 'skipped'}: "
                     f"{problem}\n")
    return HookOutcome(client_hooks.decision_json(client_hooks.allow_with_warning(problem)),
                       0, problem)
