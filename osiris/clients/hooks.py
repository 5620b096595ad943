"""Client command hooks: ``osiris hook claude-code|codex pre-tool-use|post-tool-use|
session-start``.

The hook reads the client's JSON on stdin, finds (or creates) the OSIRIS task of the
session, and answers on stdout in the client's format (see
:mod:`osiris.core.hook_advice` for the verdict mapping, :mod:`osiris.clients.adapters`
for each client's JSON). PreToolUse runs ``precheck``
and, where ``[routing]`` says so (:mod:`osiris.core.routing`), rewrites a large
``Read`` to a window of the file; it never rewrites a shell command. PostToolUse (and
PostToolUseFailure) runs ``observe`` with the tool's result or error, so LoopGuard,
dedup and the ledger see every call, including calls to other MCP servers; it replaces
another MCP server's large output, and a large shell output (found whole by
:mod:`osiris.clients.shell_output`), with its preview and ref. SessionStart after a
compaction puts the manifest and the live refs back. Calls to OSIRIS's own tools are
left alone.

The rewrites are built here, from the raw input the client sent: the engine sees the
call only scrubbed of secrets.

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
from typing import TYPE_CHECKING, Any

from osiris.clients.adapters import adapter, allow_with_warning, decision_json
from osiris.clients.hook_input import HookCall, parse_hook_input
from osiris.config import Settings
from osiris.errors import CommittedWithErrors, OsirisError

if TYPE_CHECKING:
    from osiris.engine.interface import Facade

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
    stderr: str = ""
    """The line written to stderr (the hook process writes it when the owner ran it)."""


def pre_tool_use(engine: Facade, call: HookCall, client: str = CLIENT,
                 principal: str | None = None) -> dict[str, Any]:
    """Precheck the intended call; the client's decision for it, with its rewrite.
    ``principal``: who delivered the hook (an HTTP bearer token's name; None: the local
    user), whom the session's task belongs to."""
    if call.own_tool:
        return {}
    speaks = adapter(client)
    answer = engine.precheck(f"session:{call.session_id}", call.tool, args=call.tool_input,
                             path=call.path, actor=f"{client}:{call.session_id}",
                             client=speaks.traits, cwd=call.cwd, subagent=call.agent_id,
                             principal=principal)
    return speaks.before(answer, call)


def post_tool_use(engine: Facade, call: HookCall, client: str = CLIENT,
                  principal: str | None = None) -> dict[str, Any]:
    """Observe the call's result or error; what the agent should hear about it, and, for
    a large output, the preview and ref the model is shown instead."""
    if call.own_tool:
        return {}
    speaks = adapter(client)
    seen = speaks.observed(call, engine.settings.max_payload_bytes)
    answer = engine.observe(f"session:{call.session_id}", "error" if seen.failed else "result",
                            tool=call.tool, args=call.tool_input, result=seen.text,
                            actor=f"{client}:{call.session_id}", client=speaks.traits,
                            replaceable=seen.replaceable, cwd=call.cwd,
                            tool_use_id=call.tool_use_id, subagent=call.agent_id,
                            principal=principal, shell=seen.shell, session=seen.session)
    return speaks.after(answer, call)


def session_start(engine: Facade, call: HookCall, client: str = CLIENT,
                  principal: str | None = None) -> dict[str, Any]:
    """After a compaction: the manifest and the live refs, back in front of the model."""
    if call.source != "compact":
        return {}
    speaks = adapter(client)
    answer = engine.compacted(f"session:{call.session_id}", client=speaks.traits,
                              actor=f"{client}:{call.session_id}", cwd=call.cwd,
                              principal=principal)
    return speaks.session_start(answer)


HANDLERS = {"pre-tool-use": pre_tool_use, "post-tool-use": post_tool_use,
            "session-start": session_start}


def run_hook(settings: Settings, event: str, raw: bytes, client: str = CLIENT, *,
             engine: Facade | None = None, principal: str | None = None) -> HookOutcome:
    """Handle one hook invocation; never raises and never blocks because of OSIRIS.
    ``engine``: the store owner's (else one is opened in this process for the call);
    ``principal``: as for :func:`pre_tool_use`."""
    try:
        call = parse_hook_input(raw, event)
    except OsirisError as exc:
        return skipped(settings, event, f"malformed hook input: {exc}", raw, client=client)
    settings = replace(settings, lock_timeout_s=min(settings.lock_timeout_s,
                                                    HOOK_LOCK_TIMEOUT_S))
    try:
        if engine is not None:
            doc = HANDLERS[event](engine, call, client, principal)
        else:
            from osiris.engine import Engine

            with Engine(settings) as opened:
                doc = HANDLERS[event](opened, call, client, principal)
    except CommittedWithErrors as exc:  # the call is recorded; only later work failed
        return skipped(settings, event, f"{exc.code}: {exc}", raw, recorded=True,
                       client=client)
    except OsirisError as exc:
        return skipped(settings, event, f"{exc.code}: {exc}", raw, client=client)
    except OSError as exc:  # a full disk, a read-only home: one line, not a traceback
        return skipped(settings, event, f"{type(exc).__name__}: {exc}", raw, client=client)
    except Exception as exc:  # any failure of OSIRIS must leave the user's tool alone
        log.exception("OSIRIS hook failed")
        return skipped(settings, event, f"internal error {type(exc).__name__}: {exc}", raw,
                       client=client)
    return HookOutcome(decision_json(doc) if doc else "", 0)


def hook_in_server(engine: Any, event: str, raw: bytes, client: str = CLIENT,
                   principal: str | None = None) -> HookOutcome:
    """A hook that reached the MCP server as a call to ``osiris_hook`` (Claude Code's
    ``mcp_tool`` hooks): run by the server's engine, or by the home's store owner when
    the server is its client. Never raises, like :func:`run_hook`. ``principal``: the
    caller's bearer identity, so the session's task is bound to it like any other."""
    from osiris.engine.remote import RemoteEngine

    if not isinstance(engine, RemoteEngine):
        return run_hook(engine.settings, event, raw, client, engine=engine,
                        principal=principal)
    try:
        done = engine.hook(client, event, raw.decode("utf-8"), principal)
    except OsirisError as exc:
        return skipped(engine.settings, event, f"{exc.code}: {exc}", raw, client=client)
    except Exception as exc:  # the owner's socket, anything: the tool must still run
        log.exception("OSIRIS hook failed in the store owner")
        return skipped(engine.settings, event, f"internal error {type(exc).__name__}", raw,
                       client=client)
    return HookOutcome(str(done.get("stdout") or ""), int(done.get("exit_code") or 0),
                       done.get("problem"), str(done.get("stderr") or ""))


def skipped(settings: Settings | None, event: str, problem: str, raw: bytes, *,
            recorded: bool = False, client: str = CLIENT) -> HookOutcome:
    """Log the problem (``hooks.log`` when the settings are known); let the tool call go
    ahead with a visible warning, exit 0. ``recorded``: OSIRIS did record the call (its
    transaction committed) and only work after the commit failed."""
    line = json.dumps({"ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       "client": client, "event": event, "problem": problem,
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
    message = f"osiris: hook {event} {'recorded, but' if recorded else 'skipped'}: {problem}\n"
    sys.stderr.write(message)
    return HookOutcome(decision_json(allow_with_warning(problem)),
                       0, problem, message)
