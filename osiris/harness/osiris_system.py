"""OSIRIS as a benchmark system: the real engine, in process.

Each output reaches the model through OSIRIS (the routing that client hooks or a
command wrapper provide, issue 12): a bystander payload stays verbatim, an
externalized one is replaced by OSIRIS's answer (ref and preview), exactly as the MCP
server would render it. A need missing from the context is fetched with the engine's
real ``recall`` (grep for the exact string), and the call and its answer are charged.

Pruning is a policy object (:class:`PruningPolicy`): by default the agent follows
OSIRIS's own prune advice; a researcher can pass any object with the same method,
from a notebook, without touching ``core``.
"""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from osiris.config import Settings
from osiris.core.operating_context import DOCTRINE
from osiris.engine import Engine
from osiris.harness.replay import Context, Item, ReplayBase, ReplayClock
from osiris.harness.workloads import Need, Session, Step
from osiris.server.answers import text_of
from osiris.server.definitions import model_facing


def loopguard_flag(step: int, tool: str, args: dict[str, Any],
                   verdict: dict[str, Any]) -> dict[str, Any] | None:
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
        self.flags: list[dict[str, Any]] = []
        self.verdicts: Counter[str] = Counter()

    def head_extra(self) -> str:
        tools = json.dumps(model_facing(), separators=(",", ":"))
        return f"{tools}\n\n{DOCTRINE}"

    def begin(self, session: Session, ctx: Context) -> None:
        self._refs = {}
        self._items = {}
        self.flags = []
        self.verdicts = Counter()
        self.clock.follow(ctx)
        objective = f"{session.workload}: {session.name}"[:200]
        args = {"mode": "start", "objective": objective}
        answer = self.engine.plan("start", objective=objective,
                                  announce=self.route == "plan")
        self.task = answer["task_id"]
        if self.route == "plan":
            call = ctx.add("osiris_call", json.dumps({"tool": "osiris_plan", "args": args}),
                           -1)
            shown = ctx.add("osiris_answer", text_of("plan", answer), -1)
            self._overhead += call.tokens + shown.tokens

    def keep_output(self, step: Step, ctx: Context) -> Item | None:
        if self.precheck:
            verdict = self.engine.precheck(self.task, step.tool, args=step.args)
            self.verdicts[verdict["verdict"]] += 1
            flag = loopguard_flag(step.i, step.tool, step.args, verdict)
            if flag is not None:
                self.flags.append(flag)
        answer = self.engine.observe(self.task, "error" if step.is_error else "result",
                                     tool=step.tool, args=step.args,
                                     result=step.output or "(no output)")
        self._refs[step.i] = answer["ref"]
        self._last_advice = answer.get("prune")
        mode = answer.get("mode") or ("duplicate" if answer.get("duplicate") else "other")
        self.modes[mode] += 1
        if mode == "bystander":
            item = ctx.add("output", step.output, step.i, ref=answer["ref"])
        else:
            item = ctx.add("output", text_of("observe", answer), step.i, ref=answer["ref"])
            self._overhead += item.tokens
        item.mode = mode
        item.source_tokens = ctx.counting.count(step.output)
        self._items.setdefault(answer["ref"], []).append(item)
        return item

    def after_output(self, step: Step, ctx: Context) -> None:
        held = [i for i in ctx.items if i.kind == "output" and not i.dropped and i.ref]
        for ref in self.policy.choose(self._last_advice, held, ctx.tokens()):
            live = [item for item in self._items.get(ref, []) if not item.dropped]
            for item in live:
                item.dropped = True
                ctx.replace(item, f"[dropped {ref[13:25]}… recall to restore]")
            if live:
                # The receipt travels by the same route as the output: no model tokens.
                self.engine.observe(self.task, "dropped", result=ref)

    def retrieve(self, source: Step, needs: list[Need], ctx: Context) -> int:
        ref = self._refs.get(source.i)
        if ref is None:
            return 0
        pattern = "|".join(re.escape(n.text) for n in needs)
        args = {"ref": ref, "op": "grep", "pattern": pattern, "n": 3 * len(needs),
                "task_id": self.task}
        answer = self.engine.recall(ref, "grep", pattern=pattern, n=3 * len(needs),
                                    task_id=self.task)
        self.charge(ctx, json.dumps({"tool": "osiris_recall", "args": args}),
                    text_of("recall", answer), source.i, overhead=True)
        return sum(1 for n in needs if n.text in answer["text"])

    def close(self) -> None:
        """Release the engine."""
        self.engine.close()
