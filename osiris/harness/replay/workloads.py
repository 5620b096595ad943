"""Workloads: sessions of tool calls whose outputs carry information needs.

A :class:`Workload` yields :class:`Session` objects. Two are built in (BENCHMARK.md
§1): the payload **sweep** (five sessions at 200, 800, 2,000, 5,000 and 20,000
tokens per payload, cut from real tool output in ``datasets/traces``) and the real
**traces** (each session replayed in order). A researcher defines another workload by
implementing the Protocol; nothing in ``core`` changes.

Needs are exact strings the agent must get back from an earlier output. Each has a
``kind`` (:data:`NEED_KINDS`): ``path``, ``identifier``, ``number`` or ``edit_anchor``.

**Sweep.** In each payload, the longest identifier-like token that occurs once in the
payload, taken from the middle third and from the last third (two needs), used at the
session's last turn; its kind by :func:`need_kind`.

**Traces** (mechanical, the same for every system compared):

1. *Tokens.* A token of an output (``[A-Za-z0-9_./:-]{6,}``, stripped of ``.:/-`` at
   its ends, still at least 6 characters) that is a path (holds ``/`` or a dot after
   its first character), an identifier with some shape (an upper-case letter after
   the first character, an underscore or a digit) or a number of three digits or
   more, is a candidate when nothing the agent saw before the output contained it
   (the system prompt, earlier outputs, its own earlier calls and text, and the call
   that produced the output) and a later call or message of the agent uses it. Its
   use is the first later step naming it. At most three per output, the longest
   first, none inside another. Kind by :func:`need_kind`: ``number`` (digits and
   separators only), ``path`` (a ``/`` or a file extension), else ``identifier``.
2. *Edit anchors.* Each line of an ``Edit`` ``old_string`` (and of each ``MultiEdit``
   edit's ``old_string``), and each context or removed line (prefixed ``" "`` or
   ``"-"``) of an ``apply_patch`` patch found in a call's arguments (a rollout's
   ``apply_patch`` call, or an ``apply_patch`` heredoc in a shell command; Codex
   ``exec --json`` logs keep no patch for ``file_change``) — the line without its
   trailing newline, skipped when shorter than 8 characters once whitespace is
   stripped — is an ``edit_anchor`` need of the most recent earlier output holding it
   verbatim, used at that edit's step. A Claude Code ``Read`` output is compared
   without its ``     N→`` line-number prefixes (the agent copies the text, not the
   numbers). A line repeated within one edit counts once; there is no cap. A line the
   agent itself wrote earlier (in an earlier call's arguments, such as an earlier edit's
   ``new_string``, or in its own messages) is no need: it is in the agent's own part of
   its context (``dropped_needs["in_own_messages"]``).
3. *Task prompt.* A need whose text occurs in the task prompt is dropped: the agent
   had it from the start (``dropped_needs["in_task_prompt"]``).
4. *Same response.* A use in a call issued by the same model response as the
   output's own call does not count: the agent wrote it before it saw the output
   (parallel calls). A token need moves to its next later use in another response, an
   anchor to the most recent earlier output outside the edit's response; with none,
   it is dropped (``dropped_needs["same_response"]``; moves are counted in
   ``moved_needs["same_response"]``).

Rules 3 and 4 act before the cap of rule 1, so a dropped token leaves its place to
the next candidate. The counts say what the two rules removed from the needs that
rules 1 and 2 alone would give (151 token needs on the bundled traces before anchors).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from osiris.core.tokens import TokenCounter
from osiris.harness.importers.traces import (
    Compaction,
    Trace,
    UserPrompt,
    find_traces,
    load_trace,
)
from osiris.harness.runmeta import file_sha256

__all__ = ["CLIENTS", "NEED_KINDS", "SWEEP_SIZES", "SYSTEM_PROMPT", "Compaction", "Need",
           "NeedCounts", "Session", "Step", "SweepWorkload", "TraceWorkload", "UserPrompt",
           "Workload",
           "dataset_hashes", "derive_trace_needs", "edit_anchor_lines",
           "first_call_prompt_tokens", "need_kind", "session_from_trace", "sweep_needs"]

SWEEP_SIZES = (200, 800, 2_000, 5_000, 20_000)
SYSTEM_PROMPT = (
    "You are a careful coding agent working in a git repository. Read the code before "
    "changing it, run the tests after every change, keep commits small, and explain what "
    "you did. Use the tools you are given; prefer targeted reads and searches over dumping "
    "whole files. When a command fails, read the error before retrying. Stop when the task "
    "is done and report the result.\n\nTask: {task}")
_TOKEN = re.compile(r"[A-Za-z0-9_./:-]{6,}")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{7,}")
_MAX_NEEDS = 3
_ANCHOR_MIN_CHARS = 8
NEED_KINDS = ("path", "identifier", "number", "edit_anchor")
CLIENTS = {"claude-code": "claude-code", "codex-cli": "codex-cli",
           "mini-swe-agent": "mini-swe-agent", "swe-agent": "swe-agent"}
"""The client of each trace format (``Session.client``; the sweep's is ``"sweep"``)."""
_NUMBER = re.compile(r"[0-9][0-9.,:_-]*")
_EXTENSION = re.compile(
    r"\.(?:py|pyi|ts|tsx|js|jsx|mjs|cjs|json|jsonl|md|txt|toml|ya?ml|cfg|ini|sh|rs|go|"
    r"java|kt|rb|php|c|h|cc|cpp|hpp|cs|swift|html|css|scss|xml|csv|lock|log|traj|sql|"
    r"ipynb|rst|env|conf)$", re.IGNORECASE)
_READ_PREFIX = re.compile(r"^ *\d+→", re.MULTILINE)


@dataclass(frozen=True)
class Need:
    """A string the agent must get back from an earlier output."""

    text: str
    use_step: int
    """The step before which it is needed (``len(steps)`` = the final turn)."""
    kind: str = "identifier"
    """One of :data:`NEED_KINDS`."""


def need_kind(token: str) -> str:
    """``number``, ``path`` or ``identifier`` (rule 1 of the module docstring)."""
    if _NUMBER.fullmatch(token):
        return "number"
    if "/" in token or _EXTENSION.search(token):
        return "path"
    return "identifier"


@dataclass
class Step:
    """One tool call of a session and what came back."""

    i: int
    tool: str
    args: dict[str, Any]
    output: str
    is_error: bool = False
    agent_text: str = ""
    """What the agent wrote before this call (reasoning, messages)."""
    needs: list[Need] = field(default_factory=list)
    response: int = -1
    """Index of the model response that issued this call (calls issued in one assistant
    response share it; -1 when the log cannot tell)."""


@dataclass
class Session:
    """A replayable session."""

    name: str
    workload: str
    system_prompt: str
    """The agent framework's own system prompt when the log has it (mini-swe-agent
    ``messages[0]``, SWE-agent ``history[0]``, Codex rollout instructions), else "";
    the sweep's is a short placeholder (:data:`SYSTEM_PROMPT`)."""
    steps: list[Step]
    final_text: str = ""
    size: int | None = None
    """The sweep's payload size (tokens), None for traces."""
    sources: tuple[str, ...] = ()
    """Dataset files the session was built from (their hashes go into every row)."""
    client: str = ""
    """"claude-code" | "codex-cli" | "mini-swe-agent" | "swe-agent" | "sweep"."""
    task_prompt: str = ""
    """The task as the agent received it (its first user message), "" if unknown."""
    task_prompt_provider_tokens: int | None = None
    """When the text is not available: its size as the provider counted it."""
    task_prompt_source: str = ""
    """Where the task prompt came from: "log", "prompt.txt" (beside the log), "usage"
    (only its size, from the provider's first call), or ""."""
    demonstration: str = ""
    """SWE-agent's demonstration (a worked example sent before the task), else ""."""
    compactions: list[Compaction] = field(default_factory=list)
    dropped_needs: dict[str, int] = field(default_factory=dict)
    """Needs removed by rules 3 and 4 of the module docstring, by reason."""
    moved_needs: dict[str, int] = field(default_factory=dict)
    """Needs whose use moved to a later step by rule 4, by reason."""
    user_prompts: list[UserPrompt] = field(default_factory=list)
    """Every user message of the log, the opening ones included, each with the step it
    came before (:class:`~osiris.harness.importers.records.UserPrompt`)."""

    @property
    def needs(self) -> list[tuple[int, Need]]:
        """Every need with the index of the step that produced it."""
        return [(s.i, n) for s in self.steps for n in s.needs]

    def later_prompts(self) -> dict[int, list[str]]:
        """The user's messages after the opening (which :attr:`task_prompt` holds), by the
        step they came before: what the replay adds to the history as the user sent it."""
        by_step: dict[int, list[str]] = {}
        for prompt in self.user_prompts:
            if not prompt.opening and prompt.text.strip():
                by_step.setdefault(prompt.step, []).append(prompt.text)
        return by_step


class Workload(Protocol):
    """Something that yields sessions (the research seam for new workloads)."""

    name: str

    def sessions(self) -> Iterable[Session]:
        """The sessions, in a fixed order."""
        ...


def _payload_kind(tool: str, args: dict[str, Any], output: str) -> str | None:
    command = str(args.get("command") or "")
    path = str(args.get("file_path") or "")
    if tool == "Read" and path.endswith(".json"):
        return "json"
    if tool == "Read" or re.search(r"\b(cat|sed -n|nl)\b", command):
        return "source"
    if re.search(r"\b(jest|pytest|npm test|npm run test|pylint|tox)\b", command):
        return "log"
    if re.search(r"\b(grep|rg)\b", command) or tool == "Grep":
        return "grep"
    if re.search(r"\b(ls|find|git log|tree)\b", command) or tool == "Glob":
        return "listing"
    return None


SWEEP_KINDS = ("source", "log", "json", "grep", "listing")


@dataclass
class SweepWorkload:
    """Five payloads of one size per session, one session per size (BENCHMARK.md §1)."""

    traces_dir: Path
    counter: TokenCounter
    sizes: tuple[int, ...] = SWEEP_SIZES
    name: str = "sweep"

    def _corpus(self) -> tuple[dict[str, list[str]], tuple[str, ...]]:
        by_kind: dict[str, list[str]] = {k: [] for k in SWEEP_KINDS}
        files = find_traces(self.traces_dir)
        for path in files:
            trace = load_trace(path)
            for step in trace.steps:
                kind = _payload_kind(step.tool, step.args, step.output)
                if kind in ("source", "log", "grep", "listing") and len(step.output) > 400:
                    by_kind[kind].append(step.output)
            if trace.format in ("claude-code", "codex-cli"):
                # JSON lines as a tool would print them: the transcripts' own events.
                by_kind["json"].append(path.read_text("utf-8", errors="replace"))
        return by_kind, tuple(str(p) for p in files)

    def _cut(self, texts: list[str], size: int, offset: int) -> str:
        """``size`` tokens (at a line boundary, never more) of the kind's real text."""
        lines: list[str] = []
        total = 0
        start = offset % max(len(texts), 1)
        for text in (texts[start:] + texts[:start]) * 20:
            for line in text.split("\n"):
                cost = self.counter.count(line + "\n")
                if total + cost > size:
                    return "\n".join(lines)
                lines.append(line)
                total += cost
        return "\n".join(lines)

    def sessions(self) -> Iterator[Session]:
        """One session per size."""
        corpus, sources = self._corpus()
        for size in self.sizes:
            steps = []
            for i, kind in enumerate(SWEEP_KINDS):
                payload = self._cut(corpus[kind], size, offset=size + i)
                args = {"command": f"show {kind} #{i + 1}"}
                step = Step(i, "Bash", args, payload,
                            agent_text=f"Next I look at the {kind} output ({i + 1} of "
                                       f"{len(SWEEP_KINDS)}).", response=i)
                step.needs = [Need(t, len(SWEEP_KINDS), need_kind(t))
                              for t in sweep_needs(payload)]
                steps.append(step)
            yield Session(f"sweep-{size}", self.name,
                          SYSTEM_PROMPT.format(task="summarise what the outputs show"),
                          steps, final_text="Summary of the findings.", size=size,
                          sources=sources, client="sweep")


def sweep_needs(payload: str) -> list[str]:
    """Two needs of a sweep payload: from its middle third and its last third.

    The longest identifier occurring once in the payload; failing that, the longest
    path-like token occurring once; failing that, the longest token of the last third.
    """
    lines = payload.split("\n")
    needs: list[str] = []
    third = max(len(lines) // 3, 1)
    for pattern in (_IDENTIFIER, _TOKEN):
        counts: dict[str, int] = {}
        for token in pattern.findall(payload):
            counts[token] = counts.get(token, 0) + 1
        for chunk in (lines[third:2 * third], lines[2 * third:]):
            if len(needs) == 2:
                break
            candidates = [t for line in chunk for t in pattern.findall(line)
                          if counts.get(t) == 1 and t not in needs
                          and not any(t in n or n in t for n in needs)]
            if candidates:
                needs.append(max(candidates, key=lambda t: (len(t), t)))
        if len(needs) == 2:
            break
    if not needs:  # a payload that repeats itself: its longest late token will do
        late = [t for line in lines[2 * third:] for t in _TOKEN.findall(line)]
        if late:
            needs.append(max(late, key=lambda t: (len(t), t)))
    return needs


@dataclass
class TraceWorkload:
    """The real agent sessions under ``traces_dir``, replayed in order."""

    traces_dir: Path
    only: tuple[str, ...] = ()
    name: str = "traces"

    def sessions(self) -> Iterator[Session]:
        """One session per transcript."""
        for path in find_traces(self.traces_dir):
            rel = str(path.relative_to(self.traces_dir))
            if self.only and not any(o in rel for o in self.only):
                continue
            yield session_from_trace(load_trace(path), rel, str(path))


def session_from_trace(trace: Trace, name: str, source: str) -> Session:
    """A replayable session with mechanically derived needs (module docstring)."""
    texts_before: dict[int, list[str]] = {}
    for at, text in trace.texts:
        texts_before.setdefault(at, []).append(text)
    steps = []
    for step in trace.steps:
        steps.append(Step(step.i, step.tool, step.args, step.output, step.is_error,
                          agent_text="\n".join(texts_before.get(step.i, [])),
                          response=step.response))
    final = "\n".join(texts_before.get(len(trace.steps), []))
    provider = None if trace.task_prompt else first_call_prompt_tokens(trace)
    session = Session(
        name, "traces", trace.system_prompt or "", steps, final_text=final,
        sources=(source, *trace.companions), client=CLIENTS.get(trace.format, trace.format),
        task_prompt=trace.task_prompt, task_prompt_provider_tokens=provider,
        task_prompt_source=trace.task_prompt_source or ("usage" if provider else ""),
        demonstration=trace.demonstration, compactions=list(trace.compactions),
        user_prompts=list(trace.user_prompts))
    counts = derive_trace_needs(steps, trace.task_prompt, final,
                                system_prompt=trace.system_prompt or "",
                                user_texts=session.later_prompts())
    session.dropped_needs, session.moved_needs = counts.dropped, counts.moved
    return session


def first_call_prompt_tokens(trace: Trace) -> int | None:
    """What a Claude Code log's first call sent beyond the cached head: the task prompt
    (with its attachments) and the uncached part of the system prompt, as the provider
    counted it (``input_tokens + cache_creation_input_tokens``; the
    ``cache_read_input_tokens`` are the client's own system and tool prefix, cached by
    earlier runs). Codex ``exec --json`` reports one total per turn, all calls and the
    head together: nothing of the prompt alone can be derived from it."""
    if trace.format != "claude-code" or not trace.usage:
        return None
    first = trace.usage[0]
    if "cache_creation_input_tokens" not in first and "input_tokens" not in first:
        return None
    return int(first.get("input_tokens") or 0) + int(first.get("cache_creation_input_tokens")
                                                     or 0)


@dataclass(frozen=True)
class NeedCounts:
    """What rules 3 and 4 removed (``dropped``) or moved (``moved``), by reason."""

    dropped: dict[str, int]
    moved: dict[str, int]


@dataclass(frozen=True)
class _Candidate:
    token: str
    first_use: int
    visible_use: int | None  # the first use in another response
    in_task: bool


def derive_trace_needs(steps: list[Step], task: str, final_text: str, *,
                       system_prompt: str = "",
                       user_texts: dict[int, list[str]] | None = None) -> NeedCounts:
    """Fill ``step.needs`` by the rule of the module docstring; ``task`` is the task
    prompt, ``system_prompt`` what the agent saw before it, ``user_texts`` the user's
    later messages by the step they came before."""
    user_texts = user_texts or {}
    uses = [s.agent_text + "\n" + json.dumps(s.args, ensure_ascii=False) for s in steps]
    uses.append(final_text)
    responses = [s.response for s in steps] + [-2]  # the final text answers everything
    dropped: Counter[str] = Counter()
    moved: Counter[str] = Counter()
    seen_parts = [system_prompt]
    for index, step in enumerate(steps):
        seen_parts += user_texts.get(index, [])
        seen_parts.append(uses[index])  # the call itself is written before its output
        seen = "\n".join(seen_parts)
        candidates = []
        for raw in dict.fromkeys(_TOKEN.findall(step.output)):
            token = raw.strip(".:/-")
            if len(token) < 6 or token in seen or not _useful(token):
                continue
            first = visible = None
            for j in range(index + 1, len(uses)):
                if token in uses[j]:
                    first = j if first is None else first
                    if not _same_response(responses, index, j):
                        visible = j
                        break
            if first is not None:
                candidates.append(_Candidate(token, first, visible, token in task))
        by_token = {c.token: c for c in candidates}
        for token, _ in _capped([(c.token, c.first_use) for c in candidates]):
            chosen = by_token[token]
            if chosen.in_task:
                dropped["in_task_prompt"] += 1
            elif chosen.visible_use is None:
                dropped["same_response"] += 1
            elif chosen.visible_use != chosen.first_use:
                moved["same_response"] += 1
        kept = [(c.token, c.visible_use) for c in candidates
                if not c.in_task and c.visible_use is not None]
        step.needs = [Need(t, use, need_kind(t)) for t, use in _capped(kept)]
        seen_parts.append(step.output)
    for source, need in _anchor_needs(steps, task, dropped, moved):
        steps[source].needs.append(need)
    return NeedCounts(dict(sorted(dropped.items())), dict(sorted(moved.items())))


def _same_response(responses: list[int], a: int, b: int) -> bool:
    return responses[a] >= 0 and responses[a] == responses[b]


def _capped(candidates: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """At most three, the longest first, none inside another (rule 1)."""
    chosen: list[tuple[str, int]] = []
    for token, use in sorted(candidates, key=lambda c: (-len(c[0]), c[0])):
        if any(token in t or t in token for t, _ in chosen):
            continue
        chosen.append((token, use))
        if len(chosen) == _MAX_NEEDS:
            break
    return chosen


def _anchor_needs(steps: list[Step], task: str, dropped: Counter[str],
                  moved: Counter[str]) -> list[tuple[int, Need]]:
    """Rule 2 (with rules 3 and 4): each anchor with the step of the output it is from."""
    texts = [_READ_PREFIX.sub("", s.output) if s.tool == "Read" else s.output for s in steps]
    responses = [s.response for s in steps]
    written = [s.agent_text + "\n" + json.dumps(s.args, ensure_ascii=False) for s in steps]
    found = []
    for use, step in enumerate(steps):
        own = "\n".join(written[:use])
        for line in edit_anchor_lines(step.tool, step.args):
            # The most recent earlier output holding the line, and the most recent one
            # the agent could have seen when it wrote the edit (another response).
            newest = visible = None
            for source in range(use - 1, -1, -1):
                if line in texts[source]:
                    newest = source if newest is None else newest
                    if not _same_response(responses, source, use):
                        visible = source
                        break
            if newest is None:
                continue
            if line in task:
                dropped["in_task_prompt"] += 1
            elif line in own or json.dumps(line, ensure_ascii=False)[1:-1] in own:
                # The agent wrote the line itself earlier (an earlier edit's new_string,
                # its own message): it needs no output to quote it.
                dropped["in_own_messages"] += 1
            elif visible is None:
                dropped["same_response"] += 1
            else:
                if visible != newest:
                    moved["same_response"] += 1
                found.append((visible, Need(line, use, "edit_anchor")))
    return found


def edit_anchor_lines(tool: str, args: dict[str, Any]) -> list[str]:
    """The lines an edit call copied from what it edits (rule 2), each once, in order."""
    if tool == "Edit":
        olds = [args.get("old_string")]
    elif tool == "MultiEdit":
        edits = args.get("edits")
        olds = [e.get("old_string") for e in edits if isinstance(e, dict)] \
            if isinstance(edits, list) else []
    else:
        olds = [_patch_context(text) for text in _strings(args) if "*** Begin Patch" in text]
    lines: dict[str, None] = {}
    for old in olds:
        for line in old.split("\n") if isinstance(old, str) else []:
            if len(line.strip()) >= _ANCHOR_MIN_CHARS:
                lines.setdefault(line, None)
    return list(lines)


def _strings(value: Any) -> list[str]:
    """Every string inside a call's arguments (a patch may sit in any of them)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _patch_context(text: str) -> str:
    """The context and removed lines of an ``apply_patch`` patch, without their prefix."""
    body = text[text.index("*** Begin Patch"):]
    if "*** End Patch" in body:
        body = body[:body.index("*** End Patch")]
    kept = [line[1:] for line in body.split("\n")[1:]
            if line[:1] in (" ", "-") and not line.startswith("***")]
    return "\n".join(kept)


def _useful(token: str) -> bool:
    """A path, an identifier with some shape, or a number of three digits or more."""
    if "/" in token or "." in token[1:]:
        return True
    if token.isdigit():
        return len(token) >= 3
    return any(c.isupper() for c in token[1:]) or "_" in token or any(c.isdigit()
                                                                      for c in token)


def dataset_hashes(sessions: list[Session]) -> dict[str, str]:
    """sha256 of every dataset file the sessions were built from."""
    files = sorted({s for session in sessions for s in session.sources})
    return {Path(f).name if len(files) < 2 else f: file_sha256(Path(f)) for f in files}
