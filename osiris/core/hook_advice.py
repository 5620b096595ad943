"""What a client hook tells the model, in no client's format.

A hook asks OSIRIS before a call (precheck) and tells it what happened after (observe).
The engine answers with an *advice*: whether OSIRIS objects to the call (``deny`` or
``ask``), the reason the model reads, and context added for it. The client adapters
(:mod:`osiris.clients.adapters`) turn an advice into Claude Code's or Codex's hook
JSON; the engine books exactly :func:`shown` as OSIRIS's overhead, so what is booked is
what the adapters put in front of the model, whatever the client.

============================  =====================================================
precheck verdict              advice
============================  =====================================================
allow                         no objection (the user's own permission rules apply)
warn                          no objection, the warning as context
suggest_alternative           ``deny``, the reason names the alternative (a ref to
                              recall instead of re-reading)
require_approval              ``ask``, with the reason
block                         ``deny``, with the required action
============================  =====================================================

OSIRIS never says ``allow``: that would skip the user's permission prompt, and OSIRIS
not objecting is not the user consenting. Three exceptions keep OSIRIS from costing the
agent: an exact duplicate of a ``Read`` passes (the client needs the read before an
edit, and OSIRIS cannot see whether the first one is still in the prompt), a warning
of the same failures from different arguments or of a stale streak is said after the
call that reached it and not again before the next call, and the advice after a call
never carries prune advice (the client owns its history).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from osiris.core.hashing import short_ref
from osiris.errors import InvalidInputError

MAX_REASON_CHARS = 600
OBJECTIONS = ("deny", "ask")
ADVICE_KEYS = ("permission", "reason", "context")

REREAD_TOOLS = frozenset({"Read"})
"""Tools a client must be let to run again: Claude Code edits only a file it has read,
and after a compaction the earlier read may have left the prompt, which OSIRIS cannot
see; denying the re-read made the next edit fail (the real-client benchmark)."""

SAID_AFTER = ("loopguard:loop_pattern", "loopguard:runaway")
"""LoopGuard's patterns whose warning before a call repeats, word for word, the one
after the call before it: the same failures (``loop_pattern``) or the same stale streak
(``runaway``: the intended call counted in, as the observed one was)."""

TRAITS = {"name": str, "payoff": bool, "status_line": bool, "shapes_reads": bool}
"""A client as the engine knows it (:class:`osiris.contracts.shared.ClientTraits`): a
name it journals, and what its hooks can take. The engine decides from the traits,
never from the name."""


def check_traits(client: object) -> dict[str, Any] | None:
    """None (an agent's own call) or a client's traits, every one present and typed."""
    if client is None:
        return None
    if not isinstance(client, dict) or set(client) != set(TRAITS) or not all(
            isinstance(client[k], kind) for k, kind in TRAITS.items()) or not client["name"]:
        raise InvalidInputError(
            "client must be an object with exactly " + ", ".join(
                f"{k} ({kind.__name__})" for k, kind in TRAITS.items())
            + ": a client adapter's traits (osiris.clients.adapters)")
    return client


def clip(text: str) -> str:
    """A reason or a note, cut to what a hook may say."""
    return text if len(text) <= MAX_REASON_CHARS else text[:MAX_REASON_CHARS - 1] + "…"


def _alternative_text(alternative: dict[str, Any] | None) -> str:
    if not alternative:
        return ""
    if alternative.get("op") == "recall" and alternative.get("ref"):
        return (f" Instead: osiris_recall(ref={short_ref(alternative['ref'])!r}) — the "
                "output is already stored.")
    if alternative.get("instead"):
        return f" Instead: {alternative['instead']}."
    return " Instead: " + json.dumps(alternative, ensure_ascii=False, sort_keys=True) + "."


def before_call(answer: dict[str, Any], note: str | None = None,
                tool: str | None = None) -> dict[str, str]:
    """The advice for a precheck answer (``{}``: no objection, nothing to say); ``note``
    is context the agent should get whatever the verdict. An exact duplicate of a
    :data:`REREAD_TOOLS` call passes here (OSIRIS's re-read check, which knows whether
    the first result is still in the prompt, is routing's). A warning of LoopGuard's
    :data:`SAID_AFTER` patterns alone is not said again either: it counts the calls
    already observed, and :func:`after_call` told the agent the same sentence after the
    last of them (in the client's history ever since, re-sent on every request); their
    block, at higher counts, still denies the call."""
    verdict = answer.get("verdict", "allow")
    found = [str(r) for r in answer.get("reasons", ())]
    if (tool in REREAD_TOOLS and verdict == "suggest_alternative" and found
            and all(r.startswith("loopguard:exact_duplicate") for r in found)):
        verdict, found = "allow", []
    if verdict == "warn" and found and all(r.startswith(SAID_AFTER) for r in found):
        verdict, found = "allow", []
    reasons = "; ".join(found)
    head = f"OSIRIS {verdict}: {reasons}" if reasons else f"OSIRIS {verdict}"
    advice: dict[str, str] = {"context": note} if note else {}
    if verdict == "allow":
        return advice
    if verdict == "warn":
        advice["context"] = clip(" ".join(filter(None, (note, head))))
    elif verdict == "suggest_alternative":
        advice.update(permission="deny", reason=clip(
            head + "." + _alternative_text(answer.get("alternative"))))
    elif verdict == "require_approval":
        advice.update(permission="ask", reason=clip(head))
    elif verdict == "block":
        action = answer.get("required_action")
        advice.update(permission="deny",
                      reason=clip(head + (f". Required first: {action}" if action else "")))
    else:
        raise InvalidInputError(f"unknown precheck verdict {verdict!r}")
    return advice


def after_call(answer: dict[str, Any], note: str | None = None) -> dict[str, str]:
    """The advice for an observe answer: quiet unless LoopGuard has something the agent
    should hear (or ``note`` is given)."""
    notes = [note] if note else []
    loop = answer.get("loop")
    patterns = loop.get("patterns", []) if isinstance(loop, dict) else []
    for pattern in patterns:
        if isinstance(pattern, dict) and pattern.get("level") in ("warn", "block"):
            notes.append(f"OSIRIS LoopGuard {pattern['level']} ({pattern.get('pattern')}): "
                         f"{pattern.get('message', '')}")
    # No prune advice: a client that runs hooks keeps its own history, and the agent
    # cannot drop anything from it; the advice only cost tokens (119 of 199 Claude Code
    # tool results carried it in the real-client benchmark).
    return {"context": clip(" ".join(notes))} if notes else {}


def objects(advice: Mapping[str, Any]) -> bool:
    """Whether the advice denies the call or asks the user."""
    return advice.get("permission") in OBJECTIONS


def with_context(advice: dict[str, str], context: str) -> dict[str, str]:
    """``advice`` with ``context`` added for the model (a windowed read's outline and
    ref; never clipped)."""
    return {**advice, "context": "\n".join(filter(None, (advice.get("context"), context)))}


def pointer(advice: dict[str, str], reason: str) -> dict[str, str]:
    """``advice`` turned into a denial whose reason points at an earlier result (a
    re-read OSIRIS is sure of): the model gets the pointer instead of a second copy."""
    return {**advice, "permission": "deny", "reason": reason}


def shown(advice: Mapping[str, Any]) -> str:
    """What of the advice reaches the model: its reason and its context."""
    return "\n".join(advice[k] for k in ("reason", "context") if advice.get(k))
