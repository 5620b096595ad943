"""Workloads: sessions of tool calls whose outputs carry information needs.

A :class:`Workload` yields :class:`Session` objects. Two are built in (BENCHMARK.md
§1): the payload **sweep** (five sessions at 200, 800, 2,000, 5,000 and 20,000
tokens per payload, cut from real tool output in ``datasets/traces``) and the real
**traces** (each session replayed in order). A researcher defines another workload by
implementing the Protocol; nothing in ``core`` changes.

Needs are exact strings the agent must get back later:

* sweep: in each payload, the longest identifier-like token that occurs once in the
  payload, taken from the middle third and from the last third (two needs), used at
  the session's last turn;
* traces (mechanical, the same for every system): a token of an output (a path, an
  identifier, a number of three digits or more; at least 6 characters) is a need
  when the agent's later calls or messages use it and nothing the agent saw before
  the output (task, earlier outputs, its own earlier text) contained it. At most
  three per output, the longest first; it is used at the first later step naming it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from osiris.core.tokens import TokenCounter
from osiris.harness.runmeta import file_sha256
from osiris.harness.traces import Trace, find_traces, load_trace

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


@dataclass(frozen=True)
class Need:
    """A string the agent must get back from an earlier output."""

    text: str
    use_step: int
    """The step before which it is needed (``len(steps)`` = the final turn)."""


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


@dataclass
class Session:
    """A replayable session."""

    name: str
    workload: str
    system_prompt: str
    steps: list[Step]
    final_text: str = ""
    size: int | None = None
    """The sweep's payload size (tokens), None for traces."""
    sources: tuple[str, ...] = ()
    """Dataset files the session was built from (their hashes go into every row)."""

    @property
    def needs(self) -> list[tuple[int, Need]]:
        """Every need with the index of the step that produced it."""
        return [(s.i, n) for s in self.steps for n in s.needs]


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
                                       f"{len(SWEEP_KINDS)}).")
                step.needs = [Need(t, len(SWEEP_KINDS)) for t in sweep_needs(payload)]
                steps.append(step)
            yield Session(f"sweep-{size}", self.name,
                          SYSTEM_PROMPT.format(task="summarise what the outputs show"),
                          steps, final_text="Summary of the findings.", size=size,
                          sources=sources)


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
    """A replayable session with mechanically derived needs."""
    texts_before: dict[int, list[str]] = {}
    for at, text in trace.texts:
        texts_before.setdefault(at, []).append(text)
    steps = []
    for step in trace.steps:
        steps.append(Step(step.i, step.tool, step.args, step.output, step.is_error,
                          agent_text="\n".join(texts_before.get(step.i, []))))
    final = "\n".join(texts_before.get(len(trace.steps), []))
    task = trace.system_prompt or ""
    derive_trace_needs(steps, task, final)
    prompt = trace.system_prompt or SYSTEM_PROMPT.format(task=name)
    return Session(name, "traces", prompt, steps, final_text=final, sources=(source,))


def derive_trace_needs(steps: list[Step], task: str, final_text: str) -> None:
    """Fill ``step.needs`` by the rule of the module docstring."""
    import json

    uses = [s.agent_text + "\n" + json.dumps(s.args, ensure_ascii=False) for s in steps]
    uses.append(final_text)
    seen = task
    seen_parts = [task]
    for index, step in enumerate(steps):
        seen_parts.append(uses[index])  # the call itself is written before its output
        seen = "\n".join(seen_parts)
        candidates = []
        for raw in dict.fromkeys(_TOKEN.findall(step.output)):
            token = raw.strip(".:/-")
            if len(token) < 6 or token in seen or not _useful(token):
                continue
            use = next((j for j in range(index + 1, len(uses)) if token in uses[j]), None)
            if use is not None:
                candidates.append((len(token), token, use))
        candidates.sort(key=lambda c: (-c[0], c[1]))
        chosen: list[Need] = []
        for _, token, use in candidates:
            if any(token in n.text or n.text in token for n in chosen):
                continue
            chosen.append(Need(token, use))
            if len(chosen) == _MAX_NEEDS:
                break
        step.needs = chosen
        seen_parts.append(step.output)


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
