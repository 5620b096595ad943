"""Replaying a session through a system: the context it keeps, turn by turn.

The prompt at each turn is the head (system prompt, plus OSIRIS's tool definitions
and instructions when OSIRIS is on) followed by the history the system retains
(BENCHMARK.md §2). A turn is one model call: before each tool call, before each
retrieval call, and once at the end. Every text is counted with one encoding.

When a later step needs a string from an earlier output (a :class:`Need`), the
scripted agent looks for it in what its context still holds; if it is not there it
retrieves it through the system's own means (OSIRIS: ``recall``; the client: its
Grep on a spilled file, or running the call again), and every token of that exchange
is charged to the system. A need is preserved only if the exact string comes back.
"""

from __future__ import annotations

import hashlib
import json
import re
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from osiris.core.cache_sim import Prompt, Segment
from osiris.core.tokens import TokenCounter
from osiris.harness.workloads import Need, Session, Step

TURN_SECONDS = 20.0
SPILL_DIR = "~/.claude/tool-outputs"  # only a name in the replayed text; nothing is written


class CountingCache:
    """Token counts by content (the same outputs are counted for every system)."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._cache: dict[str, int] = {}

    def count(self, text: str) -> int:
        """Tokens of ``text``."""
        key = hashlib.sha256(text.encode("utf-8", errors="replace")).hexdigest()
        found = self._cache.get(key)
        if found is None:
            found = self.counter.count(text)
            self._cache[key] = found
        return found


@dataclass
class Item:
    """One piece of history."""

    kind: str
    text: str
    tokens: int
    step: int
    ref: str | None = None
    dropped: bool = False
    key: str = ""
    mode: str = ""
    """How the system engaged the output (OSIRIS: bystander, standard, ...)."""
    source_tokens: int = 0
    """Tokens of the output this item stands for (0: not an output)."""


@dataclass
class Context:
    """The history a system keeps, and the prompts it sent."""

    counting: CountingCache
    head: str
    turn_seconds: float = TURN_SECONDS
    items: list[Item] = field(default_factory=list)
    prompts: list[Prompt] = field(default_factory=list)
    prompt_tokens: list[int] = field(default_factory=list)

    def add(self, kind: str, text: str, step: int, ref: str | None = None) -> Item:
        """Append a history item."""
        item = Item(kind, text, self.counting.count(text), step, ref,
                    key=hashlib.sha256(f"{len(self.items)}|{kind}|{text}".encode()).hexdigest())
        self.items.append(item)
        return item

    def replace(self, item: Item, text: str) -> None:
        """An item's text changes (dropped, cleared): the prompt changes from there on."""
        item.text = text
        item.tokens = self.counting.count(text)
        item.key = hashlib.sha256(f"{item.key}|{text}".encode()).hexdigest()

    def tokens(self) -> int:
        """Tokens of the prompt as it stands."""
        return self.counting.count(self.head) + sum(i.tokens for i in self.items)

    def turn(self) -> None:
        """The model is called with the current prompt."""
        head = Segment(hashlib.sha256(self.head.encode()).hexdigest(),
                       self.counting.count(self.head), breakpoint=True)
        segments = (head, *(Segment(i.key, i.tokens) for i in self.items if i.tokens))
        self.prompts.append(Prompt(self.elapsed(), segments))
        self.prompt_tokens.append(self.tokens())

    def elapsed(self) -> float:
        """Replay seconds since the first turn: ``turn_seconds`` per model turn."""
        return len(self.prompts) * self.turn_seconds

    def holds(self, text: str) -> bool:
        """Whether ``text`` is readable somewhere in the current history."""
        return any(text in i.text for i in self.items)


class ReplayClock:
    """The engine's clock during a replay: time advances with the model turns.

    Idle time (the cache-TTL trigger of prune advice) then means replay time, not how
    fast this machine happens to run; each session starts an hour after the last one.
    """

    START_US = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z
    GAP_US = 3_600_000_000

    def __init__(self) -> None:
        self._base = self.START_US
        self._ctx: Context | None = None

    def follow(self, ctx: Context) -> None:
        """From now on, time is ``ctx``'s turns."""
        self._base = self.now_us() + self.GAP_US
        self._ctx = ctx

    def now_us(self) -> int:
        """Microseconds since the epoch, in replay time."""
        return self._base + (int(self._ctx.elapsed() * 1e6) if self._ctx else 0)


@dataclass
class StepRecord:
    """What a system kept of one output."""

    step: int
    tool: str
    output_tokens: int
    kept_tokens: int
    """Tokens the history took in when the output arrived."""
    final_tokens: int = 0
    """Tokens of it still in the history at the end."""
    mode: str = ""
    is_error: bool = False


@dataclass
class ReplayResult:
    """What a system did with a session."""

    system: str
    session: Session
    prompts: list[Prompt]
    prompt_tokens: list[int]
    needs_total: int
    needs_found: int
    extra_calls: int
    overhead_tokens: int
    fixed_overhead_tokens: int
    modes: Counter[str] = field(default_factory=Counter)
    notes: dict[str, Any] = field(default_factory=dict)
    steps: list[StepRecord] = field(default_factory=list)


class System(Protocol):
    """A way of keeping tool output in an agent's context (the seam for peers)."""

    name: str

    def replay(self, session: Session, counting: CountingCache, *,
               turn_seconds: float = TURN_SECONDS) -> ReplayResult:
        """Play ``session`` through this system, turns ``turn_seconds`` apart."""
        ...


def call_text(tool: str, args: dict[str, Any]) -> str:
    """How a tool call appears in the history."""
    return json.dumps({"tool": tool, "args": args}, ensure_ascii=False, sort_keys=True)


class ReplayBase(ABC):
    """The turn loop every system shares; subclasses decide what the history keeps."""

    name = "base"

    def head_extra(self) -> str:
        """Text this system adds to the head (OSIRIS: tool definitions, instructions)."""
        return ""

    def begin(self, session: Session, ctx: Context) -> None:  # noqa: B027 (optional hook)
        """Before the first step."""

    @abstractmethod
    def keep_output(self, step: Step, ctx: Context) -> Item | None:
        """Add what the history keeps of ``step``'s output."""

    def after_output(self, step: Step, ctx: Context) -> None:  # noqa: B027 (optional hook)
        """After an output is in the history (pruning, context editing)."""

    def retrieve(self, source: Step, needs: list[Need], ctx: Context) -> int:
        """Get ``needs`` of one output back; return how many exact strings came back."""
        return 0

    def replay(self, session: Session, counting: CountingCache, *,
               turn_seconds: float = TURN_SECONDS) -> ReplayResult:
        """Play ``session``, turns ``turn_seconds`` apart."""
        extra = self.head_extra()
        head = session.system_prompt + (f"\n\n{extra}" if extra else "")
        ctx = Context(counting, head, turn_seconds)
        # What the system adds to the head, measured as the difference it makes.
        fixed = counting.count(head) - counting.count(session.system_prompt)
        self._overhead = fixed
        self._extra_calls = 0
        self.modes: Counter[str] = Counter()
        self.begin(session, ctx)
        pending = session.needs
        found = 0
        records: list[StepRecord] = []
        kept: dict[int, Item] = {}
        for step in session.steps:
            found += self._needs_due(session, step.i, pending, ctx)
            ctx.turn()
            if step.agent_text:
                ctx.add("text", step.agent_text, step.i)
            ctx.add("call", call_text(step.tool, step.args), step.i)
            item = self.keep_output(step, ctx)
            if item is not None:
                item.source_tokens = item.source_tokens or counting.count(step.output)
                kept[step.i] = item
            records.append(StepRecord(step.i, step.tool, counting.count(step.output),
                                      item.tokens if item else 0,
                                      mode=item.mode if item else "", is_error=step.is_error))
            self.after_output(step, ctx)
        found += self._needs_due(session, len(session.steps), pending, ctx)
        if session.final_text:
            ctx.add("text", session.final_text, len(session.steps))
        ctx.turn()
        for record in records:
            item = kept.get(record.step)
            record.final_tokens = item.tokens if item else 0
        return ReplayResult(self.name, session, ctx.prompts, ctx.prompt_tokens, len(pending),
                            found, self._extra_calls, self._overhead, fixed, self.modes,
                            steps=records)

    def _needs_due(self, session: Session, at: int, pending: list[tuple[int, Need]],
                   ctx: Context) -> int:
        due = [(s, n) for s, n in pending if n.use_step == at]
        found = sum(1 for _, n in due if ctx.holds(n.text))
        missing = [(s, n) for s, n in due if not ctx.holds(n.text)]
        if missing:
            # What is missing at one point is fetched in one model turn, with parallel
            # tool calls (one per source output, as today's agents do).
            ctx.turn()
            by_source: dict[int, list[Need]] = {}
            for source_index, need in missing:
                by_source.setdefault(source_index, []).append(need)
            for source_index, needs in by_source.items():
                found += self.retrieve(session.steps[source_index], needs, ctx)
        return found

    def charge(self, ctx: Context, call: str, answer: str, step: int,
               overhead: bool) -> None:
        """A retrieval exchange (inside the retrieval turn): its call and its answer."""
        call_item = ctx.add("retrieval_call", call, step)
        answer_item = ctx.add("retrieval_answer", answer, step)
        self._extra_calls += 1
        if overhead:
            self._overhead += call_item.tokens + answer_item.tokens


class RawSystem(ReplayBase):
    """History keeps every output verbatim."""

    name = "raw"

    def keep_output(self, step: Step, ctx: Context) -> Item | None:
        return ctx.add("output", step.output, step.i)


class OracleSystem(ReplayBase):
    """History keeps only the needed strings of each output: the physical limit."""

    name = "oracle"

    def keep_output(self, step: Step, ctx: Context) -> Item | None:
        if not step.needs:
            return None
        return ctx.add("output", "\n".join(n.text for n in step.needs), step.i)


class ClientNativeSystem(ReplayBase):
    """What Claude Code keeps on its own, with Anthropic context editing.

    Outputs over 50,000 characters go to a file; the model sees a ~2 KB preview and
    greps the file for what it needs. Past 100,000 tokens of context, old tool
    results are cleared, keeping the last 3; a cleared need is had by running the call
    again. (MCP results are capped at 25,000 tokens; the replayed outputs come from
    built-in tools, so that cap does not apply here.)
    """

    name = "client-native"
    SPILL_CHARS = 50_000
    PREVIEW_CHARS = 2_000
    CLEAR_AT_TOKENS = 100_000
    KEEP_RESULTS = 3

    def keep_output(self, step: Step, ctx: Context) -> Item | None:
        return ctx.add("output", self._shown(step), step.i)

    def _shown(self, step: Step) -> str:
        if len(step.output) <= self.SPILL_CHARS:
            return step.output
        return (step.output[:self.PREVIEW_CHARS] + f"\n… Output too large "
                f"({len(step.output):,} characters). Full output saved to "
                f"{SPILL_DIR}/tool-output-{step.i}.txt")

    def after_output(self, step: Step, ctx: Context) -> None:
        if ctx.tokens() <= self.CLEAR_AT_TOKENS:
            return
        outputs = [i for i in ctx.items if i.kind == "output" and not i.dropped]
        for item in outputs[:-self.KEEP_RESULTS]:
            item.dropped = True
            ctx.replace(item, "[tool result cleared]")

    def retrieve(self, source: Step, needs: list[Need], ctx: Context) -> int:
        if len(source.output) > self.SPILL_CHARS:
            pattern = "|".join(re.escape(n.text) for n in needs)
            lines = [f"{n}:{line}" for n, line in enumerate(source.output.split("\n"), 1)
                     if any(need.text in line for need in needs)]
            answer = "\n".join(lines[:20])
            self.charge(ctx, call_text("Grep", {"pattern": pattern,
                                                "path": f"{SPILL_DIR}/tool-output-{source.i}.txt",
                                                "-n": True}),
                        answer, source.i, overhead=False)
            return sum(1 for n in needs if n.text in answer)
        # Cleared: run the call again; its output enters the history once more.
        shown = self._shown(source)
        self.charge(ctx, call_text(source.tool, source.args), shown, source.i, overhead=False)
        return sum(1 for n in needs if n.text in shown)


Factory = Callable[[], System]
