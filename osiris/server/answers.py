"""The short text form of each answer (the structured form carries the same facts).

Control characters never reach the model raw (see :mod:`osiris.core.display`): the
engine escapes them where it shapes payload text (previews, recall, the manifest), and
the whole text form is escaped once more here, which also covers the fields rendered
from agent-supplied strings (objective, constraints, lessons, hints); the structured form
gets the same pass (:func:`model_facing`). ``checkpoint(mode="restore")`` included: its
exact bytes are the ref's, through the ``osiris://ref/{ref}`` resource.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from osiris.core.display import escape_controls, escape_controls_json


def _compact(value: Any) -> str:
    return escape_controls_json(
        json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str))


def _drift_line(answer: dict[str, Any]) -> list[str]:
    drift = answer.get("drift") or {}
    if not drift or drift.get("verdict") in (None, "none"):
        return []
    line = f"drift: {drift['verdict']}"
    if drift.get("cause"):
        line += f" ({drift['cause']})"
    prefill = drift.get("prefill")
    if prefill and prefill.get("tokens"):
        line += (f"; re-prefill {prefill['tokens']} tokens from token {prefill['from_token']}"
                 f" (~${prefill['extra_cost_usd']:.4f} extra)")
    if drift.get("detail"):
        line += f". {drift['detail']}"
    return [line]


def _plan(a: dict[str, Any]) -> list[str]:
    if "manifest" not in a:  # mode=context
        return [_compact(a)]
    lines = [a["manifest"], *_drift_line(a)]
    for key in ("resolved_project_id", "operating_context_warning"):
        if key in a:
            lines.append(f"{key}: {a[key]}")
    if a.get("rejected_rewrites"):
        lines.append("refused (pinned items stay verbatim): " + _compact(a["rejected_rewrites"]))
    if a.get("mode") == "resume":
        lines += [f"objective: {a['objective']}",
                  "constraints: " + _compact(a.get("constraints", [])),
                  "decisions: " + _compact(a.get("decisions", []))]
    if a.get("lessons"):
        lines.append("lessons: " + _compact(a["lessons"]))
    if a.get("pressure"):
        p = a["pressure"]
        lines.append(f"pressure: {p['used_tokens']}/{p['window_tokens']} ({p['level']}); "
                     f"measured {p['measured_tokens']}, declared {p['declared_tokens']}, "
                     f"unknown {p['unknown_tokens']}")
    if a.get("compass"):
        lines.append("tools: " + _compact(a["compass"]))
    return lines


def _precheck(a: dict[str, Any]) -> list[str]:
    lines = [f"verdict: {a['verdict']}"]
    lines += [f"- {r}" for r in a.get("reasons", [])[:4]]
    if a.get("required_action"):
        lines.append(f"required_action: {a['required_action']}")
    if a.get("alternative"):
        lines.append("alternative: " + _compact(a["alternative"]))
    if a.get("rules_problems"):
        lines.append("rules: " + "; ".join(a["rules_problems"]))
    return lines


def _observe(a: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    if "ref" in a and "mode" in a:
        lines.append(f"{a['mode']}: {a['ref']} ({a['tokens']} tok) — {a['reason']}")
    elif a.get("duplicate") or a.get("unchanged"):
        lines.append(f"{a['ref']}: {a['hint']}")
    elif "ref" in a:
        lines.append(f"recorded {a['ref']} ({a.get('tokens', 0)} tok)")
    if a.get("preview"):
        lines += [a["preview"], f"recall: {a['recall']}"]
    if "content" in a:
        lines.append(a["content"])
    if "proven_saved_tokens" in a:
        lines.append(f"dropped {a['dropped']}: proven saving {a['proven_saved_tokens']} tok")
    if a.get("volatile"):
        lines.append("volatile: " + "; ".join(f"{v['kind']} {v['text']!r} at token "
                                              f"{v['token_position']}" for v in a["volatile"]))
    if a.get("loop"):
        lines.append("loop: " + "; ".join(f"{p['pattern']} ({p['level']})"
                                          for p in a["loop"].get("patterns", [])))
    if a.get("prune"):
        lines.append("prune: " + _compact(a["prune"]))
    if a.get("usage"):
        lines.append("usage: " + _compact(a["usage"]))
    lines += _drift_line(a)
    if a.get("manifest"):
        lines.append(a["manifest"])
    if not lines:
        lines.append("recorded")
    return lines


def _recall(a: dict[str, Any]) -> list[str]:
    lines = [a["text"]]
    if a.get("truncated") and a.get("next"):
        lines.append("next: " + _compact(a["next"]))
    return lines


def _checkpoint(a: dict[str, Any]) -> list[str]:
    if a.get("mode") == "restore":
        lines = [f"[{p['ref']} from offset {p['offset']}]\n{p['text']}" for p in a["items"]]
        if a.get("next"):
            lines.append("next: " + _compact(a["next"]))
        return lines
    if a.get("summary"):
        return [a["summary"], a["how"]]
    return [_compact(a)]


_RENDERERS = {"plan": _plan, "precheck": _precheck, "observe": _observe, "recall": _recall,
              "checkpoint": _checkpoint}


def text_of(tool: str, answer: Mapping[str, Any]) -> str:
    """The text a model reads for ``answer`` of ``tool``."""
    render, found = _RENDERERS.get(tool), dict(answer)
    text = "\n".join(render(found)) if render else _compact(found)
    return escape_controls(text)


def model_facing(value: Any) -> Any:
    """``value`` (an answer's structured form) with every string control-escaped."""
    if isinstance(value, str):
        return escape_controls(value)
    if isinstance(value, dict):
        return {k: model_facing(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [model_facing(v) for v in value]
    return value
