"""OSIRIS for an agent loop that owns its message history.

In Claude Code and Codex the client owns the prompt: OSIRIS can shape what enters it but
never take anything out. A loop of your own (mini-swe-agent, a loop on the Anthropic or
OpenAI SDK) holds its message list itself, so there OSIRIS's whole design applies: a
big tool output enters the history as a preview and a ref, prune advice names earlier
outputs the loop can replace with a one-line stub (a drop receipt proves each saving),
and anything dropped is one recall away. ::

    from osiris.agent import AgentSession

    with AgentSession("fix the failing test") as osiris:
        seen = osiris.observe(output, command=command, failed=exit_code != 0)
        messages.append({"role": "tool", "tool_call_id": call.id, "content": seen.text})
        refs[call.id] = seen.ref
        osiris.apply(messages, ref_of=lambda m: refs.get(m.get("tool_call_id")))

``docs/agent-loops.md`` has a whole loop on a chat-completions model, and
:mod:`osiris.clients.minisweagent` the mini-swe-agent integration built on this class.

The engine runs in the home's store owner (the default, shared with every other OSIRIS
process of the home) or in this process (``OSIRIS_STORE_OWNER=off``). OSIRIS never stops
the loop: an output it cannot store (too big, a busy or broken home) enters the history
unchanged, with a warning logged and kept on the :class:`Observation`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, MutableMapping, MutableSequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from osiris.config import Settings
from osiris.core import routing
from osiris.core.hashing import short_ref
from osiris.errors import InvalidInputError

if TYPE_CHECKING:
    from osiris.contracts.observe import ObserveDropped
    from osiris.contracts.plan import PlanStart
    from osiris.engine.interface import Facade

log = logging.getLogger(__name__)

RECALL_COMMAND = re.compile(r"\s*osiris\s+recall\s")
"""A shell command that reads back a stored output (:func:`shell_recall`'s)."""

RecallHint = Callable[[str], str]
"""How the model is told to recall a ref (the ref in, one sentence out; it is called with
``"{ref}"`` once, and the engine puts each ref in that template)."""


def shell_recall(ref: str) -> str:
    """The recall hint of a model that acts through a shell (``osiris recall``; a ref
    holds no character a shell would read)."""
    return (f"`osiris recall {ref} --grep PATTERN` shows the lines you need "
            "(`--lines A:B` a range, `--tail N` the end)")


@dataclass(frozen=True)
class Observation:
    """What an output becomes in the history."""

    text: str
    """The text to put in the history: the output itself when small, else OSIRIS's
    preview with the ref and how to recall the rest."""
    ref: str | None
    """The stored output's ref (None when OSIRIS could not store it); keep it beside the
    message so that :meth:`AgentSession.apply` can find the message again."""
    tokens: int
    """Tokens of the whole output (0 when OSIRIS could not store it)."""
    stored: bool
    """True when ``text`` stands for the output (a preview or a pointer), False when it
    is the output verbatim."""
    warning: str | None = None
    """Why the output passed unchanged, when OSIRIS could not store it."""
    answer: dict[str, Any] = field(default_factory=dict, repr=False)
    """The engine's whole answer (mode, LoopGuard's findings, prune advice …)."""


@dataclass(frozen=True)
class Eviction:
    """An earlier output prune advice says the loop can drop now."""

    ref: str
    stub: str
    """The text to put in place of the output (it names the ref and how to recall it)."""
    tokens: int
    """Tokens the advice expects the drop to free (per copy in the history)."""


class AgentSession:
    """One task of a loop that owns its history: observe outputs, follow prune advice,
    recall, and read the task's manifest.

    ``home``: the OSIRIS home (default: ``OSIRIS_HOME``, else ``~/.osiris``);
    ``settings`` and ``engine`` override what is read from the environment (an
    :class:`osiris.Engine` of your own, for a notebook); ``recall_hint`` words how the
    model recalls a ref (default: the ``osiris recall`` shell command)."""

    def __init__(self, objective: str, *, home: str | Path | None = None,
                 settings: Settings | None = None, engine: Facade | None = None,
                 recall_hint: RecallHint = shell_recall) -> None:
        if settings is None:
            settings = Settings.from_env()
        if home is not None:
            settings = settings.with_home(Path(home).expanduser())
        if engine is None:
            from osiris.engine import open_engine

            engine = open_engine(settings)
        self.settings = settings
        self.engine: Facade = engine
        self.recall_hint = recall_hint
        self._routed = recall_hint("{ref}")  # the engine puts each ref in it
        self.task_id: str = cast("PlanStart", engine.plan(
            "start", objective=objective[:500] or "agent loop", announce=False))["task_id"]
        self._advice: dict[str, int] = {}  # ref → tokens, from the newest observe
        self._dropped: set[str] = set()

    def __enter__(self) -> AgentSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the engine (the store owner's connection, or the database)."""
        self.engine.close()

    # -- outputs -----------------------------------------------------------------------

    def observe(self, output: str, *, command: str | None = None, tool: str = "bash",
                args: dict[str, Any] | None = None, failed: bool = False,
                usage: dict[str, Any] | None = None) -> Observation:
        """Store one tool output and say what enters the history for it.

        ``command`` (or ``args``) is the call that produced it: LoopGuard and the
        duplicate check compare calls. ``usage``: the provider's usage of the model
        call that asked for it (``{"input_tokens": …}`` or ``{"prompt_tokens": …}``),
        which tells OSIRIS how full the context is, and so when to advise drops."""
        if command is not None and RECALL_COMMAND.match(command):
            # OSIRIS's own bounded answer about an output it holds: shown as it is
            # (stored again, it would hide what the model asked for behind a preview).
            return Observation(output, None, 0, False)
        if args is None:
            args = {"command": command} if command is not None else {}
        try:
            answer: dict[str, Any] = dict(self.engine.observe(
                self.task_id, "error" if failed else "result", tool=tool, args=args,
                result=output or "(no output)", usage=usage, routed=self._routed))
        except Exception as exc:  # the loop must go on, whatever failed
            problem = f"{type(exc).__name__}: {exc}"
            log.warning("osiris: this output enters the history unchanged: %s", problem)
            return Observation(output, None, 0, False, warning=problem)
        self._advice = {str(d["ref"]): int(d.get("tokens") or 0)
                        for d in (answer.get("prune") or {}).get("drop", [])}
        ref, tokens, shown = answer.get("ref"), int(answer.get("tokens") or 0), \
            answer.get("shown")
        if ref is not None:
            self._dropped.discard(ref)  # in the history again
        if not isinstance(shown, str):
            return Observation(output, ref, tokens, False, answer=answer)
        return Observation(shown, ref, tokens, True, answer=answer)

    def advice(self) -> list[Eviction]:
        """The outputs the newest prune advice says the loop can drop now (none while
        the context is small or the cache warm), not yet dropped."""
        return [Eviction(ref, self.stub(ref), tokens) for ref, tokens in self._advice.items()
                if ref not in self._dropped]

    def stub(self, ref: str) -> str:
        """The one line that stands in the history for a dropped output (naming the ref
        by its short form, as every preview does)."""
        return routing.routed_stub(self.recall_hint(short_ref(ref)))

    def drop(self, ref: str) -> ObserveDropped:
        """Record that the loop took ``ref``'s output out of its history (the drop
        receipt: the saving it proves is in the answer's ``proven_saved_tokens``)."""
        answer = cast("ObserveDropped", self.engine.observe(self.task_id, "dropped",
                                                            result=ref, routed=self._routed))
        self._dropped.add(ref)
        return answer

    def apply(self, messages: MutableSequence[MutableMapping[str, Any]], *,
              ref_of: Callable[[MutableMapping[str, Any]], str | None] | None = None,
              ) -> list[str]:
        """Follow the newest advice in ``messages``: each message holding an advised ref
        gets its stub as content, and each ref dropped gets its receipt. ``ref_of``
        finds a message's ref (default: ``message["extra"]["osiris_ref"]``, where
        mini-swe-agent keeps what it does not send). Returns the refs dropped; a receipt
        OSIRIS cannot record is logged and the message keeps its stub."""
        find = ref_of or _extra_ref
        advised = {e.ref: e.stub for e in self.advice()}
        dropped: list[str] = []
        for message in messages:
            ref = find(message)
            if ref is None or ref not in advised or message.get("content") == advised[ref]:
                continue
            message["content"] = advised[ref]
            if ref not in dropped:
                dropped.append(ref)
        for ref in dropped:
            try:
                self.drop(ref)
            except Exception as exc:  # the history is already lighter
                self._dropped.add(ref)
                log.warning("osiris: no drop receipt for %s: %s: %s", ref,
                            type(exc).__name__, exc)
        return dropped

    # -- reading back ----------------------------------------------------------------

    def recall(self, ref: str, *, grep: str | None = None,
               lines: tuple[int, int] | None = None, tail: int | None = None,
               max_tokens: int | None = None) -> str:
        """Part of a stored output, as the model would read it: the lines matching
        ``grep``, a range of ``lines`` (1-based, inclusive), the last ``tail`` lines, or
        the head."""
        op, options = _recall_op(grep=grep, lines=lines, tail=tail)
        answer = self.engine.recall(ref, op, task_id=self.task_id, max_tokens=max_tokens,
                                    **options)
        return str(answer.get("text") or "")

    def manifest(self) -> str:
        """The task's sealed manifest (~120 tokens), for a fixed position in the prompt."""
        return str(self.engine.manifest_view(self.task_id)["manifest"])


def _extra_ref(message: MutableMapping[str, Any]) -> str | None:
    extra = message.get("extra")
    ref = extra.get("osiris_ref") if isinstance(extra, dict) else None
    return ref if isinstance(ref, str) else None


def _recall_op(*, grep: str | None, lines: tuple[int, int] | None,
               tail: int | None) -> tuple[str, dict[str, Any]]:
    chosen = [name for name, value in (("grep", grep), ("lines", lines), ("tail", tail))
              if value is not None]
    if len(chosen) > 1:
        raise InvalidInputError(f"recall one way at a time, not {' and '.join(chosen)}")
    if grep is not None:
        return "grep", {"pattern": grep}
    if lines is not None:
        return "range", {"start": lines[0], "end": lines[1]}
    if tail is not None:
        return "tail", {"n": tail}
    return "head", {}


__all__ = ["AgentSession", "Eviction", "Observation", "RecallHint", "shell_recall"]
