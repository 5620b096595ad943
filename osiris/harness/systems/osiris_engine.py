"""OSIRIS as a benchmark system: the real engine, in process, with only the routing
the client really gives it (:mod:`osiris.harness.replay.profiles`):

* ``outputs`` (an agent loop that owns its history): every output goes through
  ``observe``; a bystander payload stays verbatim, an externalized one is replaced by
  OSIRIS's answer (ref and preview), exactly as the MCP server renders it; a missing
  need is fetched with the engine's real ``recall`` (grep, range), charged;
* ``observe-hooks`` (Claude Code and Codex with ``osiris install``): the PreToolUse
  and PostToolUse hooks precheck and observe every call through the engine's hook path,
  and what the hooks answer enters the prompt;
* ``shell`` (the same clients): a shell call runs in the client's shell; its
  PostToolUse hook stores a large output and the model gets its preview and ref
  instead (see :meth:`_through_hooks`).

``evict`` lets the agent drop what prune advice names (drop receipts) — only where the
profile allows eviction.

Pruning is a policy object (:class:`PruningPolicy`): by default the agent follows
OSIRIS's own prune advice; a researcher can pass any object with the same method,
from a notebook, without touching ``core``.
"""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from osiris.clients.adapters import adapter
from osiris.config import Settings
from osiris.core import hook_advice
from osiris.core.operating_context import DOCTRINE
from osiris.core.routing import SHELL_TOOLS
from osiris.engine import Engine
from osiris.errors import InvalidInputError
from osiris.harness.replay.profiles import PROFILES
from osiris.harness.replay.retrieval import WINDOW_LINES, Exchange, window
from osiris.harness.replay.turns import Context, HeadPart, Item, ReplayBase, ReplayClock
from osiris.harness.replay.workloads import Session, Step
from osiris.server.answers import text_of
from osiris.server.definitions import model_facing


def plain(answer: Mapping[str, Any]) -> dict[str, Any]:
    """An engine answer (a contract record) as the replay reads it: a plain dict whose
    fields it looks up by name, whatever the kind of answer."""
    return dict(answer)


def loopguard_flag(step: int, tool: str, args: dict[str, Any],
                   verdict: Mapping[str, Any]) -> dict[str, Any] | None:
    """A precheck verdict worth showing: not ``allow``, or carrying a LoopGuard note."""
    reasons = [str(r) for r in verdict.get("reasons", [])]
    if verdict["verdict"] == "allow" and not any(r.startswith("loopguard") for r in reasons):
        return None
    text = args.get("command") or args.get("file_path") or args.get("pattern") or \
        json.dumps(args, ensure_ascii=False)
    text = " ".join(str(text).split())
    return {"step": step, "tool": tool, "call": text[:90] + ("…" if len(text) > 90 else ""),
            "verdict": verdict["verdict"],
            "patterns": sorted({r.split(":")[1] for r in reasons
                                if r.startswith("loopguard") and ":" in r}),
            "reason": reasons[0] if reasons else ""}


CODEX_RECORD_BYTES = 64 * 1024
CODEX_RECORD_MARK = "\n\n... command output truncated for persistence ...\n\n"


def codex_record(output: str) -> str:
    """The ``aggregated_output`` Codex 0.169.0 records for a command (what its
    PostToolUse hook can get): the whole output up to 64 KiB, else its first and last
    32 KiB around Codex's mark (as seen in the real binary's rollouts)."""
    data = output.encode("utf-8")
    if len(data) <= CODEX_RECORD_BYTES:
        return output
    half = CODEX_RECORD_BYTES // 2
    return (data[:half].decode("utf-8", "ignore") + CODEX_RECORD_MARK
            + data[-half:].decode("utf-8", "ignore"))


class PruningPolicy(Protocol):
    """Which refs the agent drops from its context after an output."""

    name: str

    def choose(self, advice: dict[str, Any] | None, held: list[Item],
               context_tokens: int) -> list[str]:
        """Refs to drop, given OSIRIS's prune advice (if any), the outputs still held
        (each :class:`Item` says its ``mode`` and the ``source_tokens`` it stands for)
        and the context size."""
        ...


@dataclass
class FollowAdvice:
    """Drop what OSIRIS's auto-prune advice names (the default)."""

    name: str = "follow-advice"

    def choose(self, advice: dict[str, Any] | None, held: list[Item],
               context_tokens: int) -> list[str]:
        return [d["ref"] for d in (advice or {}).get("drop", [])]


@dataclass
class NeverPrune:
    """Keep everything (what externalization alone saves)."""

    name: str = "never"

    def choose(self, advice: dict[str, Any] | None, held: list[Item],
               context_tokens: int) -> list[str]:
        return []


@dataclass
class OsirisSystem(ReplayBase):
    """``osiris-adaptive`` (``fixed_mode=None``) or ``osiris-fixed`` (one mode)."""

    home: Path
    fixed_mode: str | None = None
    policy: PruningPolicy = field(default_factory=FollowAdvice)
    settings_overrides: dict[str, Any] = field(default_factory=dict)
    label: str | None = None
    route: str = "hook"
    """``hook``: a client hook starts the task (nothing in the context until OSIRIS first
    engages); ``plan``: the agent calls plan(mode="start") itself."""
    precheck: bool = False
    """Also precheck every call before its output (as a pre-tool-use hook would) and
    keep what LoopGuard says in :attr:`flags` (``osiris replay``)."""
    profiles: tuple[str, ...] = PROFILES
    """The client profiles this system is replayed in (osiris-fixed: agent loops only)."""

    def __post_init__(self) -> None:
        self.name = self.label or ("osiris-fixed" if self.fixed_mode else "osiris-adaptive")
        settings = replace(Settings(home=self.home), **self.settings_overrides)
        ids = itertools.count(1)
        # Deterministic task ids: the manifest (and its token count) is the same each run;
        # replay time: idle-time triggers follow the replayed turns, not this machine.
        self.clock = ReplayClock()
        self.engine = Engine(settings, exclusive=True, fixed_mode=self.fixed_mode,
                             clock=self.clock, task_ids=lambda: f"t_bench{next(ids):06d}")
        self._refs: dict[int, str] = {}
        self._items: dict[str, list[Item]] = {}
        self._sessions_seen = 0
        self._cursor: dict[int, int] = {}
        self._last_advice: dict[str, Any] | None = None
        self.flags: list[dict[str, Any]] = []
        self.verdicts: Counter[str] = Counter()

    def head_extra(self) -> HeadPart | None:
        measured = self.profile.osiris_head_tokens
        if measured is not None:
            # What `osiris install` adds to this client's every prompt, measured from the
            # real binary (its tool listing as the client shows it, the instructions).
            return HeadPart("system", "", measured)
        tools = json.dumps(model_facing(), separators=(",", ":"))
        return HeadPart("system", f"{tools}\n\n{DOCTRINE}", 0)

    @property
    def routing(self) -> frozenset[str]:
        """What OSIRIS can really do in the client of this replay."""
        return self.profile.osiris_routing

    def begin(self, session: Session, ctx: Context) -> None:
        self._refs = {}
        self._items = {}
        self._cursor = {}
        self.flags = []
        self.verdicts = Counter()
        self._last_advice = None
        self.clock.follow(ctx)
        self._session_task = f"session:{self._sessions_seen:06d}"
        self._sessions_seen += 1
        if "outputs" not in self.routing:
            return  # the client's hooks (if any) start the task on first sight
        objective = f"{session.workload}: {session.name}"[:200]
        args = {"mode": "start", "objective": objective}
        answer = plain(self.engine.plan("start", objective=objective,
                                        announce=self.route == "plan"))
        self.task = answer["task_id"]
        if self.route == "plan":
            call = ctx.add("osiris_call", json.dumps({"tool": "osiris_plan", "args": args}),
                           -1)
            shown = ctx.add("osiris_answer", text_of("plan", answer), -1)
            self._overhead += call.tokens + shown.tokens

    def _flag(self, step: Step, verdict: Mapping[str, Any]) -> None:
        self.verdicts[verdict["verdict"]] += 1
        flag = loopguard_flag(step.i, step.tool, step.args, verdict)
        if flag is not None:
            self.flags.append(flag)

    def _hook_text(self, advice: Mapping[str, Any], step: Step, ctx: Context) -> None:
        """What a hook's advice adds to the prompt (its reason or added context)."""
        text = hook_advice.shown(advice)
        if text:
            item = ctx.add("hook", text, step.i)
            self._overhead += item.tokens

    def keep_output(self, step: Step, shown: str, ctx: Context) -> Item | None:
        if "observe-hooks" in self.routing:
            return self._through_hooks(step, shown, ctx)
        if "outputs" not in self.routing:
            return ctx.add("output", shown, step.i)  # installed, but in nothing's path
        if self.precheck:
            self._flag(step, self.engine.precheck(self.task, step.tool, args=step.args))
        answer = plain(self.engine.observe(self.task, "error" if step.is_error else "result",
                                           tool=step.tool, args=step.args,
                                           result=shown or "(no output)"))
        self._refs[step.i] = answer["ref"]
        self._last_advice = answer.get("prune")
        mode = answer.get("mode") or ("duplicate" if answer.get("duplicate") else "other")
        self.modes[mode] += 1
        if mode == "bystander":
            item = ctx.add("output", shown, step.i, ref=answer["ref"])
        else:
            item = ctx.add("output", text_of("observe", answer), step.i, ref=answer["ref"])
            self._overhead += item.tokens
        item.mode = mode
        item.source_tokens = ctx.counting.count(step.output)
        self._items.setdefault(answer["ref"], []).append(item)
        return item

    def _through_hooks(self, step: Step, shown: str, ctx: Context) -> Item:
        """A client with OSIRIS's command hooks: PreToolUse prechecks, PostToolUse
        observes. With ``shell`` routing, PostToolUse is given a shell call's output as
        the real client gives it (:mod:`osiris.clients.shell_output`): Claude Code's
        whole output of a command it counts a success (a failure comes as
        PostToolUseFailure, which no hook can replace), Codex's record of the command
        (the whole output up to 64 KiB, head and tail beyond: :func:`codex_record`);
        an output over the threshold reaches the model as the preview and ref the hook
        answers; the payoff weighs it against the prompt as it stood at the last request,
        which Claude Code's hook reads from the transcript (:meth:`_session_size`).
        Windows of large reads and re-read pointers need the files themselves,
        which a replay does not have: not modelled (the real-client stage measures them)."""
        client = "codex" if self.profile.name == "codex" else "claude-code"
        traits = adapter(client).traits
        verdict = self.engine.precheck(self._session_task, step.tool, args=step.args,
                                       client=traits)
        self._flag(step, verdict)
        self._hook_text(verdict["hook"], step, ctx)
        if hook_advice.objects(verdict["hook"]):
            # The real client would not have run this call (or would have asked the
            # user); what the agent did instead is unknown, so the replay goes on as the
            # log did, with the hook's reason added, and counts it.
            self.modes[f"hook_{verdict['hook']['permission']}"] += 1
        observed, shell = shown or "(no output)", None
        if "shell" in self.routing and step.output and step.tool in SHELL_TOOLS \
                and (client == "codex" or not step.is_error):
            observed = codex_record(step.output) if client == "codex" else step.output
            shell = {"exit_code": (1 if step.is_error else 0) if client == "codex" else None,
                     "complete": observed == step.output}
        answer = plain(self.engine.observe(
            self._session_task, "error" if step.is_error else "result", tool=step.tool,
            args=step.args, result=observed, client=traits,
            replaceable=not step.is_error or client == "codex", shell=shell,
            session=self._session_size(client, ctx)))
        replaced = answer.get("replaced")
        if replaced is not None:
            shown = str(replaced["text"])
            self.modes[f"routed_{replaced['output']}"] += 1
        item = ctx.add("output", shown, step.i)
        self._hook_text(answer["hook"], step, ctx)
        self.modes["observed"] += 1
        return item

    @staticmethod
    def _session_size(client: str, ctx: Context) -> dict[str, int] | None:
        """What Claude Code's hook reads of the session (:mod:`osiris.clients.session_size`):
        the last request's prompt, which the payoff weighs (Codex's hook reads none)."""
        if client != "claude-code" or not ctx.prompt_tokens:
            return None
        return {"prompt_tokens": ctx.prompt_tokens[-1]}

    def after_output(self, step: Step, ctx: Context) -> None:
        if "evict" not in self.routing or not self.profile.evicts:
            return
        held = [i for i in ctx.items if i.kind == "output" and not i.dropped and i.ref]
        for ref in self.policy.choose(self._last_advice, held, ctx.tokens()):
            live = [item for item in self._items.get(ref, []) if not item.dropped]
            for item in live:
                item.dropped = True
                ctx.replace(item, f"[dropped {ref[13:25]}… recall to restore]")
            if live:
                # The receipt travels by the same route as the output: no model tokens.
                self.engine.observe(self.task, "dropped", result=ref)

    def search(self, source: Step, queries: list[str], ctx: Context) -> Exchange | None:
        ref = self._refs.get(source.i)
        if ref is None or "outputs" not in self.routing:
            return None
        # The agent's query is a literal string it saw; it takes recall's default bounds
        # (matches and tokens), as it cannot know how many lines hold its string.
        pattern = "|".join(re.escape(q) for q in queries)
        return self._grep(ref, {"op": "grep", "pattern": pattern})

    def _grep(self, ref: str, args: dict[str, Any]) -> Exchange:
        """One recall grep (its `next` continuation followed verbatim, as a real agent)."""
        options = {k: v for k, v in args.items() if k != "op"}
        answer = plain(self.engine.recall(ref, "grep", task_id=self.task, **options))
        call = json.dumps({"tool": "osiris_recall",
                           "args": {"ref": ref, **args, "task_id": self.task}})
        following = answer.get("next") if answer.get("truncated") else None
        more = (lambda: self._grep(ref, dict(following))) if following else None
        return Exchange(call, text_of("recall", answer), overhead=True, more=more)

    def page(self, source: Step, k: int, ctx: Context) -> Exchange | None:
        ref = self._refs.get(source.i)
        if ref is None or "outputs" not in self.routing:
            return None
        # The agent pages on from where the last answer stopped: a window that did not
        # fit the answer's token bound continues at its `next`, as a real agent would.
        first = 1 if k == 0 else self._cursor.get(source.i, window(k)[0])
        last = first + WINDOW_LINES - 1
        try:
            answer = plain(self.engine.recall(ref, "range", start=first, end=last,
                                              task_id=self.task))
        except InvalidInputError:  # past the end of the stored output
            return None
        following = answer.get("next") or {}
        self._cursor[source.i] = int(following.get("start", last + 1)) \
            if answer.get("truncated") else last + 1
        args = {"ref": ref, "op": "range", "start": first, "end": last, "task_id": self.task}
        return Exchange(json.dumps({"tool": "osiris_recall", "args": args}),
                        text_of("recall", answer), overhead=True)

    def close(self) -> None:
        """Release the engine."""
        self.engine.close()
