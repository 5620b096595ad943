"""The six tools as the model sees them: name, description, input schema.

These definitions are what every client puts in the model's prompt, every session,
so they are written by hand: short descriptions that still teach the right use, and
compact JSON schemas with no generated ``title`` noise. Their total size is measured
with cl100k (``osiris footprint``) and guarded by a test (≤ 800 tokens).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

S: dict[str, Any] = {"type": "string"}
INT: dict[str, Any] = {"type": "integer"}
OBJ: dict[str, Any] = {"type": "object"}
STRS: dict[str, Any] = {"type": "array", "items": S}


def _schema(required: list[str], **props: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    return schema


@dataclass(frozen=True)
class ToolDef:
    """One tool's model-facing definition and its honest annotations."""

    key: str
    description: str
    schema: dict[str, Any]
    read_only: bool
    idempotent: bool
    destructive: bool = False

    def name(self, dotted: bool) -> str:
        """Wire name: ``osiris_plan`` (default) or ``osiris.plan``."""
        return f"osiris.{self.key}" if dotted else f"osiris_{self.key}"

    @property
    def title(self) -> str:
        """The seed's dotted name."""
        return f"osiris.{self.key}"

    @property
    def output_schema(self) -> dict[str, Any]:
        """The JSON schema of the tool's answers (``structuredContent``), written from
        the records of :mod:`osiris.contracts`."""
        return OUTPUT_SCHEMAS[self.key]


OUTPUT_SCHEMAS: dict[str, dict[str, Any]] = json.loads(
    resources.files("osiris.contracts").joinpath("output_schemas.json").read_text("utf-8"))
"""Tool key -> ``outputSchema`` (``python -m osiris.contracts.schemas --write``). No client
shows it to the model: Claude Code and Codex send the model the same tool definition with
or without it, so it costs no prompt tokens."""


TOOLS: tuple[ToolDef, ...] = (
    ToolDef(
        "plan",
        "start: objective, steps -> sealed manifest, keep it at the END of your context. "
        "update: append constraints/decisions, active_step. resume: after a crash. status. "
        "context: doctrine. memory: write [entries] or read {kind, scope}.",
        _schema(["mode"],
                mode={"enum": ["start", "update", "resume", "status", "context", "memory"]},
                task_id=S, objective=S, steps=STRS, active_step=INT, constraints=STRS,
                decisions=STRS, agent_id=S, project_id=S, budget=OBJ, flags=OBJ, section=S,
                memory={}),
        read_only=False, idempotent=False),
    ToolDef(
        "precheck",
        "Call before risky or repeated actions. Verdicts: allow, warn, suggest_alternative "
        "(e.g. recall a ref), require_approval (repeat with confirmed=true), block.",
        _schema(["task_id", "tool"], task_id=S, tool=S, args={}, path=S,
                confirmed={"type": "boolean"}, format={"enum": ["json", "claude-code"]}),
        read_only=False, idempotent=False),
    ToolDef(
        "observe",
        "Each turn; pass seal. result|error: big output -> ref + preview, keep only those. "
        "file: OSIRIS reads path. dropped: ref you evicted. head|contract: system prompt / "
        "tool list.",
        _schema(["task_id", "kind"], task_id=S,
                kind={"enum": ["action", "result", "error", "dropped", "head", "contract",
                               "file"]},
                tool=S, args=OBJ, result=S, path=S, seal=S, usage=OBJ),
        read_only=False, idempotent=False),
    ToolDef(
        "recall",
        "Expand a ref, only as needed: grep (pattern, context; (?i) ignores case), range "
        "(start, end), head/tail (n), outline, aggregate, jsonl (where, fields). "
        "Truncated: call with next.",
        _schema(["ref"], ref=S,
                op={"enum": ["grep", "range", "head", "tail", "outline", "aggregate",
                             "jsonl"]},
                pattern=S, start=INT, end=INT, n=INT, context=INT, fields=STRS, where={},
                max_tokens=INT, task_id=S, language=S),
        read_only=True, idempotent=True),
    ToolDef(
        "checkpoint",
        "snapshot, report; trim|compact|clear: what may leave your context (refs + summary "
        "to keep); restore: exact bytes back; resume.",
        _schema(["task_id", "mode"], task_id=S,
                mode={"enum": ["snapshot", "resume", "report", "compact", "trim", "clear",
                               "restore"]},
                checkpoint_id=S, item=INT, offset=INT),
        read_only=False, idempotent=False),
    ToolDef(
        "handoff",
        "Delegate: create a contract {objective, checks, budget}; accept: child task; "
        "complete: result checked against it; status.",
        _schema(["mode"], mode={"enum": ["create", "accept", "complete", "status"]},
                task_id=S, handoff_id=S, contract=OBJ, result=OBJ),
        read_only=False, idempotent=False),
)

DISPATCH = ToolDef(
    "call",
    "OSIRIS in one tool. op: plan, precheck, observe, recall, checkpoint, handoff; args: "
    "that operation's arguments (plan: mode, objective; observe: task_id, kind, result; "
    "recall: ref, op).",
    _schema(["op", "args"], op={"enum": [t.key for t in TOOLS]}, args=OBJ),
    read_only=False, idempotent=False)


HOOK = ToolDef(
    "hook",
    "Claude Code's hooks call this (osiris install writes them); you never need to.",
    _schema(["event", "session_id"], event={"enum": ["pre-tool-use", "post-tool-use"]},
            hook_event_name=S, session_id=S, cwd=S, tool_name=S, tool_input={},
            tool_use_id=S, tool_response={}, error=S, agent_id=S, transcript_path=S),
    read_only=False, idempotent=False)
"""Listed only with ``OSIRIS_HOOK_TOOL=on``: a PreToolUse or PostToolUse hook, its input
fields as Claude Code's ``mcp_tool`` hook interpolates them
(:func:`osiris.clients.hook_input.hook_input`)."""


def listed(*, dispatch_only: bool, hook_tool: bool, surface: str = "full",
           ) -> list[ToolDef]:
    """The tools a server lists: the six (``osiris_call`` alone with ``dispatch_only``;
    ``osiris_recall`` alone on the ``hooks`` surface), and ``osiris_hook`` when asked."""
    if surface == "hooks":
        main: tuple[ToolDef, ...] = tuple(t for t in TOOLS if t.key == "recall")
    else:
        main = (DISPATCH,) if dispatch_only else TOOLS
    return [*main, *((HOOK,) if hook_tool else ())]


def model_facing(dotted: bool = False, dispatch_only: bool = False) -> list[dict[str, Any]]:
    """What a client puts in the prompt for each listed tool."""
    tools = (DISPATCH,) if dispatch_only else TOOLS
    return [{"name": t.name(dotted), "description": t.description, "input_schema": t.schema}
            for t in tools]
