"""Replaying a session through a system, inside a client: the prompt, turn by turn.

The prompt at each turn is the head — the client's own system prompt and tool
definitions (measured: :mod:`osiris.harness.replay.profiles`), what the system adds to it
(OSIRIS's tool definitions and instructions, a peer's), the agent framework's system
prompt and the task — followed by the history the system retains (BENCHMARK.md §2).
A turn is one model call: before each tool call, before each retrieval turn, and once
at the end. Every text is counted with one encoding; the one exception is a task
prompt the log does not hold, whose size the provider reported (it is added as a part
of known size and unknown text, and says so in the row).

Each output first takes the shape the client gives it (Claude Code's Read cap and
persisted large outputs, Codex's cut of long shell output); then the system decides
what the history keeps. The client compacts its history when the profile says so, for
every system alike.

When a later step needs a string from an earlier output (a :class:`Need`) that the
prompt no longer holds, the scripted agent retrieves it by the rule of
:mod:`osiris.harness.replay.retrieval` — with only what it can see — through the system's
own means or the client's, and every call and answer is charged to the system.
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
from osiris.harness.replay.profiles import ClientProfile, native_profile
from osiris.harness.replay.retrieval import (
    MAX_CALLS,
    RETRIEVAL_MODELS,
    WINDOW_LINES,
    Exchange,
    query_for,
    window,
)
from osiris.harness.replay.workloads import Need, Session, Step

TURN_SECONDS = 20.0
#: Most matching lines a client Grep (or ``grep -n``) answer shows before it is cut.
CLIENT_GREP_LINES = 100
_READ_NUMBER = re.compile(r"^ *\d+\u2192", re.MULTILINE)


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


@dataclass(frozen=True)
class HeadPart:
    """A part of the prompt head: its text when known, and its tokens."""

    name: str
    text: str
    tokens: int


@dataclass
class Context:
    """The history a system keeps, and the prompts it sent."""

    counting: CountingCache
    head: list[HeadPart]
    turn_seconds: float = TURN_SECONDS
    items: list[Item] = field(default_factory=list)
    prompts: list[Prompt] = field(default_factory=list)
    prompt_tokens: list[int] = field(default_factory=list)
    compactions: int = 0
    _visible: str | None = field(default=None, repr=False)

    def add(self, kind: str, text: str, step: int, ref: str | None = None) -> Item:
        """Append a history item."""
        item = Item(kind, text, self.counting.count(text), step, ref,
                    key=hashlib.sha256(f"{len(self.items)}|{kind}|{text}".encode()).hexdigest())
        self.items.append(item)
        self._visible = None
        return item

    def replace(self, item: Item, text: str) -> None:
        """An item's text changes (dropped, cleared): the prompt changes from there on."""
        item.text = text
        item.tokens = self.counting.count(text)
        item.key = hashlib.sha256(f"{item.key}|{text}".encode()).hexdigest()
        self._visible = None

    def compact(self, summary: str, step: int) -> None:
        """The client replaces the whole conversation by ``summary``: the history and the
        task prompt (its first message) go; the system prompt and tools stay."""
        self.head = [part for part in self.head if part.name != "task"]
        self.items = []
        self.add("summary", summary, step)
        self.compactions += 1

    def head_tokens(self) -> int:
        """Tokens of the head."""
        return sum(part.tokens for part in self.head)

    def tokens(self) -> int:
        """Tokens of the prompt as it stands."""
        return self.head_tokens() + sum(i.tokens for i in self.items)

    def turn(self) -> None:
        """The model is called with the current prompt."""
        head = Segment(hashlib.sha256("|".join(f"{p.name}:{p.tokens}:{p.text}"
                                               for p in self.head).encode()).hexdigest(),
                       self.head_tokens(), breakpoint=True)
        segments = (head, *(Segment(i.key, i.tokens) for i in self.items if i.tokens))
        self.prompts.append(Prompt(self.elapsed(), segments))
        self.prompt_tokens.append(self.tokens())

    def elapsed(self) -> float:
        """Replay seconds since the first turn: ``turn_seconds`` per model turn."""
        return len(self.prompts) * self.turn_seconds

    def visible(self) -> str:
        """Every text of the prompt as it stands (what the agent can see and quote)."""
        if self._visible is None:
            self._visible = "\n".join([p.text for p in self.head if p.text]
                                       + [i.text for i in self.items])
        return self._visible

    def holds(self, text: str) -> bool:
        """Whether ``text`` is readable somewhere in the current prompt."""
        return text in self.visible()


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
    client: str = ""
    """The client profile the session was replayed under."""
    retrieval: str = "visible"
    needs_by_kind: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Per need kind: (found, total)."""
    compactions: int = 0
    head_tokens: int = 0
    """Tokens of the head (client, system additions, framework prompt, task)."""
    unseen_head_tokens: int = 0
    """Of those, tokens whose text the log does not hold (size from provider usage)."""


class System(Protocol):
    """A way of keeping tool output in an agent's context (the seam for peers)."""

    name: str

    def replay(self, session: Session, counting: CountingCache, *,
               turn_seconds: float = TURN_SECONDS, profile: ClientProfile | None = None,
               retrieval: str = "visible") -> ReplayResult:
        """Play ``session`` through this system inside ``profile``'s client (default: the
        client that produced it), turns ``turn_seconds`` apart."""
        ...


def call_text(tool: str, args: dict[str, Any]) -> str:
    """How a tool call appears in the history."""
    return json.dumps({"tool": tool, "args": args}, ensure_ascii=False, sort_keys=True)


def file_text(step: Step) -> str:
    """The text of the file a Claude Code ``Read`` showed (its ``N→`` numbers removed)."""
    return _READ_NUMBER.sub("", step.output)


def _command(step: Step) -> str | None:
    command = step.args.get("command") if isinstance(step.args, dict) else None
    return command if isinstance(command, str) and command.strip() else None


def _grep_lines(text: str, queries: list[str], skip: int = 0) -> tuple[str, bool]:
    """Matching lines from the ``skip``-th on, at most :data:`CLIENT_GREP_LINES`; and
    whether more follow."""
    lines = [f"{n}:{line}" for n, line in enumerate(text.split("\n"), 1)
             if any(q in line for q in queries)]
    shown = lines[skip:skip + CLIENT_GREP_LINES]
    more = len(lines) > skip + len(shown)
    if more:
        shown.append(f"… {len(lines) - skip - len(shown)} more matching lines")
    return ("\n".join(shown) if shown else "(no matches)"), more


class ReplayBase(ABC):
    """The turn loop every system shares; subclasses decide what the history keeps and
    what retrieval means of their own they offer."""

    name = "base"
    profile: ClientProfile
    retrieval: str = "visible"

    def head_extra(self) -> HeadPart | None:
        """What this system adds to every prompt (OSIRIS: tool definitions and
        instructions, or what its installation adds in this client); ``tokens`` 0 means
        "count the text"."""
        return None

    def begin(self, session: Session, ctx: Context) -> None:  # noqa: B027 (optional hook)
        """Before the first step."""

    @abstractmethod
    def keep_output(self, step: Step, shown: str, ctx: Context) -> Item | None:
        """Add what the history keeps of ``step``'s output; ``shown`` is the output as the
        client shapes it (what reaches the model when nothing intervenes)."""

    def after_output(self, step: Step, ctx: Context) -> None:  # noqa: B027 (optional hook)
        """After an output is in the history (pruning)."""

    def after_compaction(self, step: Step, ctx: Context) -> None:  # noqa: B027 (optional)
        """After the client compacted the history (re-injection, where routing exists)."""

    # Retrieval means of the system's own (None: it has none for this output).
    def search(self, source: Step, queries: list[str], ctx: Context) -> Exchange | None:
        """Search ``source``'s output for any of ``queries``."""
        return None

    def page(self, source: Step, k: int, ctx: Context) -> Exchange | None:
        """Window ``k`` (from 0) of ``source``'s output; None past its end."""
        return None

    # -- the client's own tools ---------------------------------------------------------

    def client_search(self, source: Step, queries: list[str], skip: int = 0) -> Exchange:
        """The client's own search: ``Grep`` on the file a Read showed, the command again
        through ``grep -n -F``, else the call again; cut at :data:`CLIENT_GREP_LINES`
        matches, continued from the ``skip``-th."""
        path = source.args.get("file_path") if isinstance(source.args, dict) else None
        if source.tool == "Read" and isinstance(path, str):
            pattern = "|".join(re.escape(q) for q in queries)
            answer, more = _grep_lines(file_text(source), queries, skip)
            call = call_text("Grep", {"pattern": pattern, "path": path, "-n": True,
                                      "output_mode": "content", "offset": skip,
                                      "head_limit": CLIENT_GREP_LINES})
        elif (command := _command(source)) is not None:
            flags = " ".join("-e " + json.dumps(q, ensure_ascii=False) for q in queries)
            answer, more = _grep_lines(source.output, queries, skip)
            window_ = f" | tail -n +{skip + 1}" if skip else ""
            call = call_text(source.tool, {"command": f"{command} | grep -n -F {flags}"
                                                      f"{window_} | head -n {CLIENT_GREP_LINES}"})
        else:
            return self.client_page(source, 0) or Exchange(call_text(source.tool, source.args),
                                                           "", overhead=False)
        follow = (lambda: self.client_search(source, queries, skip + CLIENT_GREP_LINES)) \
            if more else None
        return Exchange(call, self._shaped(source, answer), overhead=False, more=follow)

    def client_page(self, source: Step, k: int) -> Exchange | None:
        """The client's own paging: ``Read`` with offset/limit, ``sed -n`` on the command,
        else the call again (once)."""
        first, last = window(k)
        path = source.args.get("file_path") if isinstance(source.args, dict) else None
        if source.tool == "Read" and isinstance(path, str):
            lines = file_text(source).split("\n")
            if first > len(lines):
                return None
            answer = "\n".join(f"{n:>6}\u2192{line}"
                                for n, line in enumerate(lines[first - 1:last], first))
            call = call_text("Read", {"file_path": path, "offset": first,
                                      "limit": WINDOW_LINES})
        elif (command := _command(source)) is not None:
            lines = source.output.split("\n")
            if first > len(lines):
                return None
            answer = "\n".join(lines[first - 1:last])
            call = call_text(source.tool, {"command": f"{command} | sed -n '{first},{last}p'"})
        else:
            if k > 0:
                return None
            call, answer = call_text(source.tool, source.args), source.output
        return Exchange(call, self._shaped(source, answer), overhead=False)

    def _shaped(self, source: Step, answer: str) -> str:
        return self.profile.shape(Step(source.i, source.tool, source.args, answer,
                                       source.is_error))

    # -- the loop -----------------------------------------------------------------------

    def replay(self, session: Session, counting: CountingCache, *,
               turn_seconds: float = TURN_SECONDS, profile: ClientProfile | None = None,
               retrieval: str = "visible") -> ReplayResult:
        """Play ``session`` inside ``profile``'s client, turns ``turn_seconds`` apart."""
        if retrieval not in RETRIEVAL_MODELS:
            raise ValueError(f"unknown retrieval model {retrieval!r}: use one of "
                             + ", ".join(RETRIEVAL_MODELS))
        self.profile = profile or native_profile(session)
        self.retrieval = retrieval
        head, unseen = self._head(session, counting)
        ctx = Context(counting, head, turn_seconds)
        extra = next((p for p in head if p.name == "system"), None)
        fixed = extra.tokens if extra else 0
        self._overhead = fixed
        self._extra_calls = 0
        self.modes: Counter[str] = Counter()
        self.begin(session, ctx)
        pending = session.needs
        found: Counter[str] = Counter()
        records: list[StepRecord] = []
        kept: dict[int, Item] = {}
        logged = [c.summary for c in session.compactions if c.summary]
        # An interactive session's later prompts enter the history where the user sent
        # them (every system alike: no system can take them out).
        later = session.later_prompts()
        for step in session.steps:
            for text in later.get(step.i, []):
                ctx.add("user", text, step.i)
            found.update(self._needs_due(session, step.i, pending, ctx))
            ctx.turn()
            if step.agent_text:
                ctx.add("text", step.agent_text, step.i)
            ctx.add("call", call_text(step.tool, step.args), step.i)
            item = self.keep_output(step, self.profile.shape(step), ctx)
            if item is not None:
                item.source_tokens = item.source_tokens or counting.count(step.output)
                kept[step.i] = item
            records.append(StepRecord(step.i, step.tool, counting.count(step.output),
                                      item.tokens if item else 0,
                                      mode=item.mode if item else "", is_error=step.is_error))
            self.after_output(step, ctx)
            if self.compacts_after(session, step, ctx):
                ctx.compact(self._summary(ctx, logged, counting), step.i)
                self.after_compaction(step, ctx)
        for text in later.get(len(session.steps), []):
            ctx.add("user", text, len(session.steps))
        found.update(self._needs_due(session, len(session.steps), pending, ctx))
        if session.final_text:
            ctx.add("text", session.final_text, len(session.steps))
        ctx.turn()
        for record in records:
            item = kept.get(record.step)
            record.final_tokens = item.tokens if item and item in ctx.items else 0
        totals = Counter(n.kind for _, n in pending)
        by_kind = {kind: (found[kind], total) for kind, total in sorted(totals.items())}
        return ReplayResult(self.name, session, ctx.prompts, ctx.prompt_tokens, len(pending),
                            sum(found.values()), self._extra_calls, self._overhead, fixed,
                            self.modes, steps=records, client=self.profile.name,
                            retrieval=retrieval, needs_by_kind=by_kind,
                            compactions=ctx.compactions, head_tokens=ctx.head_tokens(),
                            unseen_head_tokens=unseen)

    def compacts_after(self, session: Session, step: Step, ctx: Context) -> bool:
        """Whether the client compacts after ``step``: past the profile's threshold."""
        limit = self.profile.compact_at_tokens
        return limit is not None and ctx.tokens() > limit

    def _head(self, session: Session, counting: CountingCache) -> tuple[list[HeadPart], int]:
        parts: list[HeadPart] = []
        if self.profile.head_tokens:
            parts.append(HeadPart("client", "", self.profile.head_tokens))
        extra = self.head_extra()
        if extra is not None and (extra.tokens or extra.text):
            parts.append(HeadPart("system", extra.text,
                                  extra.tokens or counting.count(extra.text)))
        if session.system_prompt:
            parts.append(HeadPart("framework", session.system_prompt,
                                  counting.count(session.system_prompt)))
        unseen = 0
        if session.task_prompt:
            parts.append(HeadPart("task", session.task_prompt,
                                  counting.count(session.task_prompt)))
        elif session.task_prompt_provider_tokens:
            unseen = int(session.task_prompt_provider_tokens)
            parts.append(HeadPart("task", "", unseen))
        return parts, unseen

    def _summary(self, ctx: Context, logged: list[str], counting: CountingCache) -> str:
        """What the client puts in place of the history: the summary the log holds (the
        client's own), else the agent's latest messages up to the profile's summary size."""
        if logged:
            return logged[0]
        texts = [i.text for i in ctx.items if i.kind == "text"]
        budget = self.profile.summary_tokens
        kept: list[str] = []
        for text in reversed(texts):
            cost = counting.count(text)
            if cost > budget:
                break
            kept.insert(0, text)
            budget -= cost
        return "This session is being continued from a previous conversation that ran out " \
               "of context. Summary:\n" + "\n".join(kept)

    def _needs_due(self, session: Session, at: int, pending: list[tuple[int, Need]],
                   ctx: Context) -> Counter[str]:
        due = [(s, n) for s, n in pending if n.use_step == at]
        found: Counter[str] = Counter(n.kind for _, n in due if ctx.holds(n.text))
        missing = [(s, n) for s, n in due if not ctx.holds(n.text)]
        if missing:
            # What is missing at one point is fetched in one model turn, with parallel
            # tool calls (one per source output, as today's agents do).
            ctx.turn()
            by_source: dict[int, list[Need]] = {}
            for source_index, need in missing:
                by_source.setdefault(source_index, []).append(need)
            for source_index, needs in by_source.items():
                for need in self._fetch(session.steps[source_index], needs, ctx):
                    found[need.kind] += 1
        return found

    def _fetch(self, source: Step, needs: list[Need], ctx: Context) -> list[Need]:
        """Retrieve ``needs`` of one output by the retrieval model; the ones that came back."""
        missing = list(needs)
        calls = 0
        visible = ctx.visible()
        queries = list(dict.fromkeys(
            q for n in needs if (q := query_for(n.text, visible, self.retrieval))))
        if queries:
            exchange: Exchange | None = self.search(source, queries, ctx) \
                or self.client_search(source, queries)
            while exchange is not None:
                self.charge(ctx, exchange, source.i)
                calls += 1
                missing = [n for n in missing if n.text not in exchange.found_in]
                if not missing or calls >= MAX_CALLS or exchange.more is None:
                    break
                exchange = exchange.more()
        k = 0
        while missing and calls < MAX_CALLS:
            page = self.page(source, k, ctx) or self.client_page(source, k)
            if page is None:
                break
            self.charge(ctx, page, source.i)
            calls += 1
            k += 1
            missing = [n for n in missing if n.text not in page.found_in]
        return [n for n in needs if n not in missing]

    def charge(self, ctx: Context, exchange: Exchange, step: int) -> None:
        """A retrieval exchange (inside the retrieval turn): its call and its answer."""
        call_item = ctx.add("retrieval_call", exchange.call, step)
        answer_item = ctx.add("retrieval_answer", exchange.answer, step)
        self._extra_calls += 1
        if exchange.overhead:
            self._overhead += call_item.tokens + answer_item.tokens


class RawSystem(ReplayBase):
    """History keeps every output verbatim, as logged (not even the client's own cuts)."""

    name = "raw"

    def keep_output(self, step: Step, shown: str, ctx: Context) -> Item | None:
        return ctx.add("output", step.output, step.i)


class OracleSystem(ReplayBase):
    """History keeps only the needed strings of each output: the physical limit. Its
    prompt never fills the window, so where the client compacts it follows the log:
    the history (and the task prompt) go where the real session compacted."""

    name = "oracle"

    def compacts_after(self, session: Session, step: Step, ctx: Context) -> bool:
        if self.profile.compact_at_tokens is None:
            return False
        return any(c.step == step.i + 1 for c in session.compactions)

    def keep_output(self, step: Step, shown: str, ctx: Context) -> Item | None:
        if not step.needs:
            return None
        return ctx.add("output", "\n".join(n.text for n in step.needs), step.i)


class ClientNativeSystem(ReplayBase):
    """The bare client: every output as the client shapes it (its caps, persisted large
    outputs, cuts), its compaction, nothing else — the baseline of every net gain."""

    name = "client-native"

    def keep_output(self, step: Step, shown: str, ctx: Context) -> Item | None:
        return ctx.add("output", shown, step.i)


Factory = Callable[[], System]
