"""One adapter per client: the client's hook input in, the engine's advice out in the
client's own JSON. The engine knows no client (an import contract keeps it so): it gets
an adapter's :attr:`Adapter.traits` and answers with an advice
(:mod:`osiris.core.hook_advice`), a rewrite (``route``) and what replaces an output
(``replaced``, ``replaced_read``); the adapter says them as its client understands.

Claude Code (2.1.328) and Codex (0.169.0) read the same hook JSON, and answer with it
too, except where they differ:

=======================  ==========================  ===============================
                         Claude Code                 Codex
=======================  ==========================  ===============================
a large read's window    ``updatedInput``            never: Codex applies it only
                                                     with ``allow``, which OSIRIS
                                                     never says
another MCP server's     ``updatedMCPToolOutput``    ``decision: "block"``, whose
large output                                         reason becomes the output
a large shell output     ``updatedToolOutput``: the  ``decision: "block"``, the
                         Bash response, ``stdout``   preview opening with Codex's
                         replaced                    ``Process exited with code N``
a mid-size whole read    ``updatedToolOutput``: the  not shaped
                         Read response, its lines
                         cut (read-before-edit
                         keeps working)
outputs routed by        the payoff (Anthropic's     size thresholds
                         cache, 167k compaction)
a shell output, whole    ``persistedOutputPath``     the command's record in the
                         past the hook's 30,000      rollout (``transcript_path``),
                         characters                  with its exit status
the prompt's size        the transcript's last       not read
                         usage record
=======================  ==========================  ===============================

An adapter turns a finished call's hook input into one :class:`Observed` event (the
output as fully as the client left it, whether it failed, may be replaced, and the
session's size) and the engine's answers back into the client's JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from osiris.clients import session_size, shell_output
from osiris.clients.hook_input import PRE_EVENT, SESSION_EVENT, HookCall, response_text
from osiris.core.hook_advice import OBJECTIONS, clip
from osiris.errors import InvalidInputError


@dataclass(frozen=True)
class Observed:
    """A finished call as the engine's ``observe`` takes it, whatever the client: the
    output as fully as the client left it, whether it failed, whether the hook may
    replace it, what the client says of a shell call and of its session."""

    text: str
    failed: bool
    replaceable: bool
    shell: dict[str, Any] | None
    """``{"exit_code": int | None, "complete": bool}`` for a shell call's output."""
    session: dict[str, int] | None
    """``{"prompt_tokens": int}``: the prompt of the client's last request."""


class Adapter:
    """A client's hook format. ``traits`` is all the engine learns of the client."""

    name: ClassVar[str]
    traits: ClassVar[dict[str, Any]]
    rewrites_input: ClassVar[bool]
    """Whether a PreToolUse answer may change the call's input without ``allow``."""

    def observed(self, call: HookCall, max_bytes: int) -> Observed:
        """The normalized event of a PostToolUse (or PostToolUseFailure) input."""
        text, failed = response_text(call)
        found = self.shell_output(call, max_bytes)
        shell = None
        if found is not None:
            text, failed = found.text, failed or found.exit_code not in (0, None)
            shell = {"exit_code": found.exit_code, "complete": found.complete}
        prompt = self.prompt_tokens(call)
        return Observed(text, failed, call.event == "PostToolUse", shell,
                        None if prompt is None else {"prompt_tokens": prompt})

    def shell_output(self, call: HookCall, max_bytes: int) -> shell_output.ShellOutput | None:
        """A finished shell call's output as fully as the client left it (None: leave
        the output alone)."""
        raise NotImplementedError

    def prompt_tokens(self, call: HookCall) -> int | None:
        """The prompt of the client's last request, where the client says it."""
        return None

    def before(self, answer: Mapping[str, Any], call: HookCall | None = None) -> dict[str, Any]:
        """The PreToolUse answer for a precheck answer (``{}``: nothing to say). With
        ``call`` (the raw input the client sent, not the scrubbed one the engine saw), a
        large ``Read`` is rewritten to its window where the client allows it."""
        advice = answer.get("hook") or {}
        out: dict[str, Any] = {"hookEventName": PRE_EVENT}
        if advice.get("permission") in OBJECTIONS:
            out["permissionDecision"] = advice["permission"]
            out["permissionDecisionReason"] = advice.get("reason") or ""
        if advice.get("context"):
            out["additionalContext"] = advice["context"]
        route = answer.get("route")
        if (call is not None and self.rewrites_input and route and route.get("op") == "window"
                and "permissionDecision" not in out):
            out["updatedInput"] = {**call.tool_input, "offset": int(route["offset"]),
                                   "limit": int(route["limit"])}
        return {"hookSpecificOutput": out} if len(out) > 1 else {}

    def after(self, answer: Mapping[str, Any], call: HookCall) -> dict[str, Any]:
        """The PostToolUse (or PostToolUseFailure) answer for an observe answer."""
        advice = answer.get("hook") or {}
        out: dict[str, Any] = {"hookEventName": call.event}
        if advice.get("context"):
            out["additionalContext"] = advice["context"]
        doc: dict[str, Any] = {}
        replaced = answer.get("replaced")
        if replaced is not None:
            doc = self.replace_output(out, replaced, call.response)
        shaped = answer.get("replaced_read")
        if shaped is not None:
            self.replace_read(out, shaped, call.response)
        return {**doc, "hookSpecificOutput": out} if len(out) > 1 else doc

    def session_start(self, answer: Mapping[str, Any]) -> dict[str, Any]:
        """SessionStart's answer after a compaction: the advice's context (the manifest
        and the live refs) in front of the model."""
        context = (answer.get("hook") or {}).get("context")
        if not context:
            return {}
        return {"hookSpecificOutput": {"hookEventName": SESSION_EVENT,
                                       "additionalContext": context}}

    def replace_output(self, out: dict[str, Any], replaced: dict[str, Any],
                       response: Any) -> dict[str, Any]:
        """Put ``replaced["text"]`` where the client shows the output: into ``out``
        (``hookSpecificOutput``), or the top-level keys returned."""
        raise NotImplementedError

    def replace_read(self, out: dict[str, Any], shaped: dict[str, Any],
                     response: Any) -> None:
        """Show a whole-file read as ``shaped`` says (only a client whose traits say
        ``shapes_reads`` gets one)."""


class ClaudeCode(Adapter):
    """Claude Code 2.1.328's hooks."""

    name = "claude-code"
    traits: ClassVar[dict[str, Any]] = {"name": name, "payoff": True, "status_line": False,
                                        "shapes_reads": True}
    rewrites_input = True

    def shell_output(self, call: HookCall, max_bytes: int) -> shell_output.ShellOutput | None:
        """The Bash response, or the file Claude Code persisted a long output to."""
        return shell_output.claude_code(call, max_bytes)

    def prompt_tokens(self, call: HookCall) -> int | None:
        """From the last usage record of the session's transcript."""
        return session_size.prompt_tokens(call)

    def replace_output(self, out: dict[str, Any], replaced: dict[str, Any],
                       response: Any) -> dict[str, Any]:
        """MCP: ``updatedMCPToolOutput``. Shell: ``updatedToolOutput``, which Claude Code
        checks against the Bash tool's output shape, so it is the tool's own response
        with ``stdout`` replaced, ``stderr`` emptied (the stored output holds both) and
        ``persistedOutputPath``/``Size`` left out (with them Claude Code would wrap the
        text in its own "output too large" notice)."""
        text = str(replaced["text"])
        if replaced.get("output") == "mcp":
            out["updatedMCPToolOutput"] = text
        elif isinstance(response, dict) and isinstance(response.get("stdout"), str):
            updated = {k: v for k, v in response.items() if not k.startswith("persisted")}
            updated.update(stdout=text, stderr="")
            out["updatedToolOutput"] = updated
        # else: not the shape Claude Code would accept back: the output stays
        return {}

    def replace_read(self, out: dict[str, Any], shaped: dict[str, Any],
                     response: Any) -> None:
        """``updatedToolOutput`` in the Read tool's output shape (``{"type": "text",
        "file": {filePath, content, numLines, startLine, totalLines}}``; a plain string
        is ignored); Claude Code numbers the lines from ``startLine`` itself (the first
        line shown: 1 for a shaped read, the first changed line's window for a changed
        re-read), and its
        read-before-edit state comes from the read it made, so edits work."""
        if not isinstance(response, dict) or response.get("type") != "text" \
                or not isinstance(response.get("file"), dict):
            return  # not the shape Claude Code would accept back: left as it is
        file = {**response["file"], "content": str(shaped["content"]),
                "numLines": int(shaped["lines"]), "startLine": int(shaped.get("start", 1))}
        out["updatedToolOutput"] = {**response, "file": file}
        out["additionalContext"] = "\n".join(filter(None, (out.get("additionalContext"),
                                                           str(shaped["context"]))))


class Codex(Adapter):
    """Codex 0.169.0's hooks."""

    name = "codex"
    traits: ClassVar[dict[str, Any]] = {"name": name, "payoff": False, "status_line": True,
                                        "shapes_reads": False}
    rewrites_input = False

    def shell_output(self, call: HookCall, max_bytes: int) -> shell_output.ShellOutput | None:
        """The command's record in the session's rollout, with its exit status."""
        return shell_output.codex(call, max_bytes)

    def replace_output(self, out: dict[str, Any], replaced: dict[str, Any],
                       response: Any) -> dict[str, Any]:
        """``decision: "block"``, whose reason becomes the output (the only way in
        0.169.0: ``updatedToolOutput`` and ``updatedMCPToolOutput`` are ignored)."""
        return {"decision": "block", "reason": str(replaced["text"])}


ADAPTERS: dict[str, Adapter] = {a.name: a for a in (ClaudeCode(), Codex())}
CLIENTS = tuple(ADAPTERS)


def adapter(client: str) -> Adapter:
    """The adapter of ``client``, or InvalidInputError naming the known ones."""
    found = ADAPTERS.get(client)
    if found is None:
        raise InvalidInputError(f"unknown client format {client!r}: use one of "
                                + ", ".join(CLIENTS))
    return found


def allow_with_warning(problem: str) -> dict[str, Any]:
    """The output when the hook itself failed: the tool goes ahead, the user is told."""
    return {"systemMessage": clip(f"OSIRIS hook skipped ({problem}); the tool call was "
                                  "not checked")}


def decision_json(doc: dict[str, Any]) -> str:
    """The single line a hook writes on stdout."""
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
