"""A real trace played by the scripted model inside a real client, honestly.

:func:`plan` turns an imported session (:func:`osiris.harness.replay.workloads.session_from_trace`,
needs derived by its mechanical rule) into the calls the model will issue, in the
trace's order, with the trace's working directory mapped onto the unpacked workspace
(:class:`PathMap`) and each tool named as the live client names it (Claude Code keeps its
tool names; a Codex ``shell`` call becomes ``exec_command``). Calls that cannot be
replayed offline are skipped and recorded: ``WebFetch``/``WebSearch`` (the network), a
Claude Code ``Task`` (a sub-agent's own conversation), Codex ``apply_patch`` (the
``exec --json`` log keeps only the paths a patch changed, not the patch), and a command
that lists processes (``ps``, ``pgrep``: it would show the replaying machine's processes,
the session run beside it included, another text every run).

:class:`TraceScript` is the model. Before each call that uses needs (and before the
final answer) it looks at the prompt it has just received:

* a need whose string is in that prompt is **kept**;
* a need the live run never produced is **absent** and left out of every count: its
  source call's result did not show it, the result was not cut by the client, and for
  a file the file did not hold it when it was read — the workspace differs from the
  agent's (npm runs offline, tests fail differently), the same way in every
  configuration;
* any other need must be **retrieved** with the tools the configuration really offers,
  choosing the query by the ``visible`` rule (:func:`osiris.harness.replay.retrieval.query_for`:
  the longest substring of the need, at least 4 characters, visible in that prompt): a
  file (a ``Read``, an edit, a persisted Bash output) is searched with ``Grep`` (Codex:
  ``grep -n -F``), then paged with ``Read`` offset/limit (Codex: ``sed -n``) in
  :data:`~osiris.harness.replay.retrieval.WINDOW_LINES`-line windows from a little above the
  first line the search found (then the lines above it), as an agent reading the
  search's line numbers would; a command's output is searched by running the command
  again through ``grep -n -F``, then paged through ``sed -n`` the same way; a
  ``Grep``/``Glob`` result by issuing it again. The needs of one source due at the same
  call are searched together, as the replay does and as an agent that needs several lines
  of one output for one edit asks once: the search carries every such need's query
  (``Grep`` and ``osiris_recall`` an alternation, ``grep -F`` one ``-e`` each), and a need
  it brought back needs no call of its own. Each retrieval call is counted; after
  :data:`~osiris.harness.replay.retrieval.MAX_CALLS` calls the need is **lost**.

A need whose source result is an OSIRIS preview (its footer names the ref and says to
``osiris_recall`` it) is fetched with ``osiris_recall`` on that ref when the client
offers the tool (Codex lists OSIRIS's tools; Claude Code defers them behind its tool
search, so there the client's own tools are used): a grep for the query, a truncated
answer's ``next`` followed, then range pages, each call counted like any other. A
compaction request (Claude Code's "create a detailed summary" prompt) is answered with
the summary the trace's own model wrote at that point (in order), else a fixed line;
so is Codex's ("CONTEXT CHECKPOINT COMPACTION", no tools offered), which would
otherwise pass for a side query.
Side queries (no tools offered) get ``OK``. The script is stateful (a compaction
rewrites the history, so the step cannot be read off the request) and thread-safe.
"""

from __future__ import annotations

import json
import re
import shlex
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from osiris.harness.real_clients.model_script import (
    OPENAI,
    Action,
    FinalText,
    ModelRequest,
    ToolCall,
    is_agent_turn,
    last_user_text,
    prompt_text,
    results_by_id,
    tool_names,
)
from osiris.harness.real_clients.run import CLAUDE_CODE, MINI_SWE_AGENT
from osiris.harness.real_clients.trace_plan import PathMap, Planned, Turn
from osiris.harness.replay.retrieval import MAX_CALLS, WINDOW_LINES, query_for
from osiris.harness.replay.workloads import Need, Session

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
"""The command that ends a mini-swe-agent run (its local environment's convention)."""
COMPACT_MARKER = "Your task is to create a detailed summary of the conversation so far"
"""How Claude Code 2.1.328 asks for a compaction summary (its own prompt text)."""
CODEX_COMPACT_MARKER = "You are performing a CONTEXT CHECKPOINT COMPACTION"
"""How Codex 0.169.0 asks for one against a provider that is not OpenAI's own (its
local compaction prompt; the request offers no tools)."""


def is_compaction(request: ModelRequest) -> bool:
    """Whether the client asks the model for a compaction summary (either client)."""
    text = last_user_text(request)
    return COMPACT_MARKER in text or CODEX_COMPACT_MARKER in text
FALLBACK_SUMMARY = "Summary: the session read the task's files and is continuing it."
MINI_CUT = "[mini-swe-agent elided"
"""How :func:`observation_text` marks where ``mini.yaml`` cut an output."""
CUT_MARKERS = ("<persisted-output>", "chars truncated…", "tokens truncated…",
               "characters truncated]", "stored as mem://sha256:", MINI_CUT,
               "stored; `osiris recall mem://sha256:")
"""What a result that is not the whole output carries: the client's own cuts
(mini-swe-agent's ``mini.yaml`` keeps 5,000 characters of head and of tail:
:data:`MINI_CUT`), and the footer of an OSIRIS preview (``osiris run``, a replaced MCP
output, a loop's ``osiris.agent`` preview; Claude Code persists big Bash outputs, Codex
keeps head and tail, the traces' own Claude Code 2.0 cut Bash in place)."""
_SAVED_TO = re.compile(r"(?:saved to|Full output saved to):?\s*(/\S+)", re.IGNORECASE)
MAX_EXTRA_TURNS = 400
"""A hard bound on model turns beyond the plan (retrievals), so a run always ends."""


@dataclass
class NeedState:
    """One need, followed through the run."""

    source: int
    need: Need
    outcome: str = "pending"
    """``kept`` · ``retrieved`` · ``lost`` · ``absent`` · ``pending`` (never reached)."""
    calls: int = 0
    shown: bool = False
    cut: bool = False
    on_disk: bool = False
    file: str | None = None
    """Where it can be searched (the source's file, or the file a cut output was saved
    to); None: the source is a command or a search."""

    def as_row(self) -> dict[str, Any]:
        """The need for the data file (its text only as a size: it is the vendor's)."""
        return {"source_step": self.source, "use_step": self.need.use_step,
                "kind": self.need.kind, "chars": len(self.need.text),
                "outcome": self.outcome, "calls": self.calls, "shown": self.shown,
                "cut": self.cut}


@dataclass
class _Retrieval:
    state: NeedState
    query: str | None
    page: int = 0
    searched: bool = False
    start: int = 1
    """The line paging starts from: a little above the search's first hit (1 without)."""
    ref: str | None = None
    """The OSIRIS ref the source's result named (its preview's footer), when the client
    offers ``osiris_recall``: the need is fetched from it, as the footer says."""
    follow: dict[str, Any] | None = None
    """A truncated recall answer's ``next`` arguments (followed verbatim)."""
    also: list[str] = field(default_factory=list)
    """The queries of the other needs due now from the same source: searched together."""

    def queries(self) -> list[str]:
        return [q for q in [self.query, *self.also] if q]


_HIT = re.compile(r"^(?:[^\n:]*:)?(\d+)[:-]", re.MULTILINE)
LEAD_LINES = 20
"""Paging starts this many lines above the line the search found."""


_STORED_AS = re.compile(r"stored as (mem://sha256:[0-9a-f]{16,64})")
_SHELL_RECALL = re.compile(r"osiris recall (mem://sha256:[0-9a-f]{16,64})")
_GO_ON = re.compile(r"go on with `(osiris recall [^`]+)`")
_RECALL_TOOLS = {"mcp__osiris": "mcp__osiris.osiris_recall",  # Codex: a namespace
                 "mcp__osiris__osiris_recall": "mcp__osiris__osiris_recall"}


def recall_tool(names: list[str]) -> str | None:
    """The name to call ``osiris_recall`` by in a request offering these tools (None:
    not offered, e.g. Claude Code, which defers MCP tools behind its tool search)."""
    return next((_RECALL_TOOLS[n] for n in names if n in _RECALL_TOOLS), None)


def recall_next(answer_text: str) -> dict[str, Any] | None:
    """The ``next`` arguments of a truncated recall answer in a tool result."""
    start = answer_text.find("{")
    try:
        answer = json.loads(answer_text[start:]) if start >= 0 else None
    except ValueError:
        return None
    if isinstance(answer, dict) and answer.get("truncated") and isinstance(
            answer.get("next"), dict):
        return dict(answer["next"])
    return None


def first_hit(search_output: str) -> int | None:
    """The first line number a ``grep -n`` / ``Grep -n`` output names (None: no hit)."""
    match = _HIT.search(search_output)
    return int(match.group(1)) if match else None

@dataclass
class TraceScript:
    """The model of one session (module docstring)."""

    client: str
    calls: list[Planned]
    session: Session
    paths: PathMap
    summaries: list[str] = field(default_factory=list)
    final_text: str = "Done."
    whole_output: Callable[[str], str | None] | None = None
    """A call's whole output by its id, where the client keeps it (mini-swe-agent's
    trajectory file): a need a cut result does not show is then absent, not searched
    for, when the whole output never held it, as for a result shown whole."""
    turns: list[Turn] = field(default_factory=list)
    """The later typed prompts of an interactive session, in order: the calls of each
    segment are issued only once its prompt has arrived, and the segment before ends
    with the trace's answer (:meth:`_turn_ends`)."""
    needs: list[NeedState] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    """Every action taken: ``{"n", "kind", "step", "tool", "call_id", "is_error"}``."""

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._cursor = 0
        self._n = 0
        self._issued: dict[str, dict[str, Any]] = {}  # call id -> event
        self._texts: dict[str, str] = {}  # call id -> the result the model got
        self._by_source: dict[int, list[NeedState]] = {}
        self._due: dict[int, list[NeedState]] = {}
        for source, need in self.session.needs:
            state = NeedState(source, need)
            self.needs.append(state)
            self._by_source.setdefault(source, []).append(state)
            self._due.setdefault(need.use_step, []).append(state)
        self._retrieval: _Retrieval | None = None
        self._queue: list[NeedState] = []
        self._summaries = list(self.summaries)
        self._last: tuple[Any, Action] | None = None
        self._agent_turns = 0
        self.compaction_requests = 0
        self.side_requests = 0
        self._recall: str | None = None
        self._results: Mapping[str, tuple[str, bool]] = {}
        self._turn = 0  # the next later prompt not yet received
        self._waiting = False  # a turn ended: the next prompt has not come yet
        self.prompts_received = 0

    # -- the Script protocol -----------------------------------------------------------
    def reply(self, request: ModelRequest) -> Action:
        with self._lock:
            return self._reply(request)

    def _reply(self, request: ModelRequest) -> Action:
        if is_compaction(request):
            self.compaction_requests += 1
            # The request carries results the next agent turn may no longer show (Codex
            # compacts between a call and its follow-up): they answered their calls.
            self._learn(results_by_id(request))
            summary = self._summaries.pop(0) if self._summaries else FALLBACK_SUMMARY
            # Claude Code asks again, then fails the turn, when the reply has no block.
            return FinalText(f"<summary>\n{summary}\n</summary>")
        if not is_agent_turn(request):
            self.side_requests += 1
            return FinalText("OK")
        results = results_by_id(request)
        if self.client == MINI_SWE_AGENT:
            results = {cid: (observation_text(text), failed)
                       for cid, (text, failed) in results.items()}
        items = request.body.get("input" if request.api == OPENAI else "messages") or []
        signature = (len(items), json.dumps(items[-1:], sort_keys=True, default=str))
        if self._last is not None and self._last[0] == signature:
            return self._last[1]  # the same request again (a client retry)
        if self._waiting:
            turn = self.turns[self._turn]
            if not turn.received_in(last_user_text(request)):
                return FinalText(turn.answer)  # asked again before the user typed
            self._waiting = False
            self._turn += 1
            self.prompts_received += 1
        self._agent_turns += 1
        self._results = results
        self._recall = recall_tool(tool_names(request))
        self._learn(results)
        action = self._next(request, results)
        self._last = (signature, action)
        return action

    # -- what the results taught -------------------------------------------------------
    def _learn(self, results: Mapping[str, tuple[str, bool]]) -> None:
        for call_id, (text, is_error) in results.items():
            event = self._issued.get(call_id)
            if event is None or "is_error" in event:
                continue
            event["is_error"] = is_error or _shell_failed(text)
            event["result_chars"] = len(text)
            self._texts[call_id] = text
            if event["kind"] != "trace":
                continue
            for state in self._by_source.get(event["step"], []):
                state.shown = state.need.text in text
                state.cut = any(marker in text for marker in CUT_MARKERS)
                whole = self.whole_output(call_id) if self.whole_output else None
                if state.cut and whole is not None and state.need.text not in whole:
                    state.cut = False  # the cut hid nothing: the output never held it
                saved = _SAVED_TO.search(text) if state.cut else None
                state.file = saved.group(1) if saved else event.get("file")
                if state.file:
                    state.on_disk = state.need.text in _read(state.file)

    # -- the next action ---------------------------------------------------------------
    def _retrieval_of(self, state: NeedState, visible: str) -> _Retrieval:
        """The retrieval of ``state``'s need, its search carrying the queries of the other
        needs due now from the same source (each by the visible rule)."""
        retrieval = _Retrieval(state, query_for(state.need.text, visible, "visible"))
        for other in self._queue:
            if other.source == state.source and other.need.text not in visible:
                q = query_for(other.need.text, visible, "visible")
                if q and q != retrieval.query and q not in retrieval.also:
                    retrieval.also.append(q)
        return retrieval

    def _next(self, request: ModelRequest, results: Mapping[str, tuple[str, bool]]
              ) -> Action:
        visible = prompt_text(request.body)
        if self.client == MINI_SWE_AGENT:  # the outputs as read, not as JSON-escaped
            visible += "\n" + "\n".join(text for text, _ in results.values())
        if self._retrieval is not None:
            last = self._retrieval
            call_id = self._last_call_id()
            text = results.get(call_id, ("", False))[0] if call_id else ""
            for state in [last.state, *self._queue]:
                if state.outcome == "pending" and state.need.text in text:
                    state.outcome = "retrieved"
            if last.state.outcome == "pending":
                follow = self._retrieval_call(last, visible)
                if follow is not None:
                    return follow
                last.state.outcome = "lost"
            self._retrieval = None
        while True:
            self._queue = [s for s in self._queue if s.outcome == "pending"]
            if self._queue:
                state = self._queue.pop(0)
                if state.need.text in visible:
                    state.outcome = "kept"
                    continue
                retrieval = self._retrieval_of(state, visible)
                call = self._retrieval_call(retrieval, visible)
                if call is None:
                    state.outcome = "lost"
                    continue
                self._retrieval = retrieval
                return call
            if self._agent_turns > len(self.calls) + MAX_EXTRA_TURNS:
                return self._final()
            step = self.calls[self._cursor].step if self._cursor < len(self.calls) else (
                len(self.session.steps))
            if self._turn < len(self.turns) and self.turns[self._turn].step <= step:
                return self._turn_ends()
            due = [s for s in self._due.pop(step, []) if s.outcome == "pending"]
            if self._submits(self._cursor):  # the run ends with it: the final needs first
                due += [s for s in self._due.pop(len(self.session.steps), [])
                        if s.outcome == "pending"]
            if due:
                for state in due:
                    if state.need.text in visible:
                        state.outcome = "kept"
                    elif not (state.shown or state.cut or state.on_disk):
                        state.outcome = "absent"
                self._queue = [s for s in due if s.outcome == "pending"]
                continue
            if self._cursor >= len(self.calls):
                return self._final()
            planned = self.calls[self._cursor]
            self._cursor += 1
            if planned.skip is not None:
                self.events.append({"n": None, "kind": "skipped", "step": planned.step,
                                    "tool": planned.trace_tool, "call_id": None,
                                    "reason": planned.skip})
                continue
            file = planned.input.get("file_path") if isinstance(planned.input, Mapping) \
                else None
            return self._issue("trace", planned.step, planned.tool, planned.input,
                               file=str(file) if file else None)

    def _turn_ends(self) -> Action:
        """The segment before the next typed prompt is done: answer with the trace's text
        and wait for the prompt (the client sends it once the turn has ended)."""
        self._waiting = True
        return FinalText(self.turns[self._turn].answer)

    def _submits(self, cursor: int) -> bool:
        """Whether the planned call at ``cursor`` ends a mini-swe-agent run."""
        if self.client != MINI_SWE_AGENT or cursor >= len(self.calls):
            return False
        command = _command_of(self.calls[cursor])
        return command is not None and command.lstrip().startswith(SUBMIT)

    def _final(self) -> Action:
        """The end of the run: a final text, or for mini-swe-agent (which acts only
        through its shell) the command that submits."""
        if self.client == MINI_SWE_AGENT:
            return self._issue("final", len(self.session.steps), "bash", {"command": SUBMIT})
        return FinalText(self.final_text)

    def _retrieval_call(self, r: _Retrieval, visible: str) -> ToolCall | None:
        """The next call that may bring ``r``'s need back, None when there is none."""
        if r.state.calls >= MAX_CALLS:
            return None
        source = self.session.steps[r.state.source]
        planned = self.calls[r.state.source]
        if planned.skip is not None:
            return None
        if r.ref is None:
            r.ref = self._source_ref(r)
        if r.ref is not None:
            recall = self._recall_call(r)
            if recall is None:
                return None
            r.state.calls += 1
            return self._issue("retrieval", r.state.source, *recall)
        searching = not r.searched and r.query
        call = self._search(r, source.tool, planned) if searching else None
        if r.searched and r.page == 0:  # the search ran: page from where it found the query
            hit = first_hit(self._last_result())
            r.start = max(1, hit - LEAD_LINES) if hit else 1
        r.searched = True
        if call is None:
            call = self._page(r, planned)
        if call is None:
            return None
        r.state.calls += 1
        return self._issue("retrieval", r.state.source, call[0], call[1])

    def _source_ref(self, r: _Retrieval) -> str | None:
        """The OSIRIS ref the need can be recalled from, where the model can recall: the
        footer of the source's preview (``osiris_recall`` offered), or for mini-swe-agent
        the ``osiris recall`` command its preview or its drop stub shows now."""
        if self.client == MINI_SWE_AGENT:
            found = _SHELL_RECALL.search(self._results.get(self._source_call(r), ("", False))[0])
        elif self._recall is not None:
            found = _STORED_AS.search(self._texts.get(self._source_call(r), ""))
        else:
            return None
        return found.group(1) if found else None

    def _recall_call(self, r: _Retrieval) -> tuple[str, Any] | None:
        """The next recall of ``r``'s ref: ``osiris_recall``, or a shell's ``osiris
        recall`` (None: nothing more to recall)."""
        if self.client == MINI_SWE_AGENT:
            command = self._shell_recall(r)
            return None if command is None else ("bash", {"command": command})
        assert self._recall is not None
        args = self._recall_args(r)
        return None if args is None else (self._recall, args)

    def _source_call(self, r: _Retrieval) -> str:
        """The call id of the trace call that produced the need."""
        for event in self.events:
            if event.get("kind") == "trace" and event.get("step") == r.state.source:
                return str(event.get("call_id") or "")
        return ""

    def _recall_args(self, r: _Retrieval) -> dict[str, Any] | None:
        """The next ``osiris_recall`` on the source's ref: a grep for the query, then a
        truncated answer's ``next``, then range pages of WINDOW_LINES lines."""
        assert r.ref is not None
        if r.searched or r.page:
            r.follow = recall_next(self._last_result())
        if not r.searched and r.query:
            r.searched = True
            return {"ref": r.ref, "op": "grep",
                    "pattern": "|".join(re.escape(q) for q in r.queries())}
        r.searched = True
        if r.follow is not None:
            return {"ref": r.ref, **r.follow}
        first = 1 + r.page * WINDOW_LINES
        r.page += 1
        last = self._last_result()
        if r.page > 1 and ('"text": ""' in last or '"error"' in last):
            return None  # past the end of the stored output
        return {"ref": r.ref, "op": "range", "start": first, "end": first + WINDOW_LINES - 1}

    def _shell_recall(self, r: _Retrieval) -> str | None:
        """The next ``osiris recall`` command (a shell's way to ``osiris_recall``): a grep
        for the query, then the command a cut answer says goes on, then line ranges."""
        assert r.ref is not None
        last = self._last_result()
        if r.searched or r.page:
            going_on = _GO_ON.search(last)
            if going_on is not None:
                return going_on.group(1)
        if not r.searched and r.query:
            r.searched = True
            return (f"osiris recall {r.ref} --grep "
                    f"{shlex.quote('|'.join(re.escape(q) for q in r.queries()))}")
        r.searched = True
        if r.page and _shell_failed(last):
            return None  # past the end of the stored output
        first = 1 + r.page * WINDOW_LINES
        r.page += 1
        return f"osiris recall {r.ref} --lines {first}:{first + WINDOW_LINES - 1}"

    def _shell(self, command: str, description: str) -> tuple[str, dict[str, Any]]:
        """A shell call as this client's model issues it."""
        if self.client == CLAUDE_CODE:
            return "Bash", {"command": command, "description": description}
        if self.client == MINI_SWE_AGENT:
            return "bash", {"command": command}
        return "exec_command", {"cmd": command}

    def _search(self, r: _Retrieval, tool: str, planned: Planned
                ) -> tuple[str, dict[str, Any]] | None:
        assert r.query is not None
        patterns = " ".join(f"-e {shlex.quote(q)}" for q in r.queries())
        if r.state.file:
            if self.client == CLAUDE_CODE:
                return "Grep", {"pattern": "|".join(re.escape(q) for q in r.queries()),
                                "path": r.state.file, "output_mode": "content", "-n": True}
            return self._shell(f"grep -n -F {patterns} "
                               f"{shlex.quote(r.state.file)}", "Search the file")
        command = _command_of(planned)
        if command is None:
            return None
        return self._shell(f"({command}) 2>&1 | grep -n -F {patterns}",
                           "Search the earlier output")

    def _page(self, r: _Retrieval,  # noqa: PLR0911 - one return per way a page ends
              planned: Planned) -> tuple[str, Any] | None:
        first = r.start + r.page * WINDOW_LINES
        if r.state.file and r.start > 1 and first > _line_count(r.state.file):
            # past the end from the hit: the lines above it, from the top
            first = 1 + (r.page - _pages_to_end(r.start, _line_count(r.state.file))
                         ) * WINDOW_LINES
            if first >= r.start:
                return None
        last = first + WINDOW_LINES - 1
        r.page += 1
        if r.state.file:
            if first > _line_count(r.state.file):
                return None
            if self.client == CLAUDE_CODE:
                return "Read", {"file_path": r.state.file, "offset": first,
                                "limit": WINDOW_LINES}
            return self._shell(f"sed -n '{first},{last}p' {shlex.quote(r.state.file)}",
                               "Page through the file")
        command = _command_of(planned)
        if command is None:
            # A search (Grep, Glob): issue it again, once.
            return (planned.tool, planned.input) if r.page == 1 else None
        if r.page > 1 and _empty(self._last_result()):
            return None  # the previous page was already past the end
        return self._shell(f"({command}) 2>&1 | sed -n '{first},{last}p'",
                           "Page through the earlier output")

    # -- bookkeeping -------------------------------------------------------------------
    def _issue(self, kind: str, step: int, tool: str, payload: Any, *,
               file: str | None = None) -> ToolCall:
        self._n += 1
        call_id = (f"toolu_{self._n:06d}" if self.client == CLAUDE_CODE
                   else f"call_{self._n:06d}")
        event: dict[str, Any] = {"n": self._n, "kind": kind, "step": step, "tool": tool,
                                 "call_id": call_id}
        if file:
            event["file"] = file
        self.events.append(event)
        self._issued[call_id] = event
        return ToolCall(tool, payload, call_id)

    def _last_call_id(self) -> str | None:
        for event in reversed(self.events):
            if event.get("call_id"):
                return str(event["call_id"])
        return None

    def _last_result(self) -> str:
        for event in reversed(self.events):
            if event.get("call_id"):
                return str(self._texts.get(str(event["call_id"]), ""))
        return ""

    def finish(self) -> None:
        """Needs never reached (the client stopped early) stay ``pending``."""

    def settle(self, whole_outputs: Mapping[str, str]) -> None:
        """A lost need whose source call's whole output (by call id, where the client
        kept it: mini-swe-agent's trajectory) never held it is ``absent``: the live run
        did not produce it, so no configuration could keep it (the script could not
        tell behind a cut)."""
        source_ids = {e["step"]: str(e["call_id"]) for e in self.events
                      if e.get("kind") == "trace" and e.get("call_id")}
        for state in self.needs:
            whole = whole_outputs.get(source_ids.get(state.source, ""))
            if state.outcome == "lost" and whole is not None and state.need.text not in whole:
                state.outcome = "absent"


def observation_text(text: str) -> str:
    """What a mini-swe-agent model reads in an observation: ``mini.yaml`` renders each
    output as a JSON object (``output``, or ``output_head`` and ``output_tail``), so
    quotes, backslashes and ``<``/``>``/``&``/``'`` are escaped in the raw message; the
    return code is kept as the 1.x templates' tag."""
    try:
        doc = json.loads(text)
    except ValueError:
        return text
    if not isinstance(doc, dict) or "returncode" not in doc:
        return text
    parts = [str(doc.get("output") or "")]
    if "output_head" in doc:  # the template's cut: where it cut, in the reader's words
        parts = [str(doc["output_head"]), f"{MINI_CUT} {doc.get('elided_chars')} characters]",
                 str(doc.get("output_tail") or "")]
    parts += [str(doc[key]) for key in ("exception_info", "warning") if doc.get(key)]
    return f"<returncode>{doc['returncode']}</returncode>\n" + "\n".join(parts)


def _pages_to_end(start: int, lines: int) -> int:
    """How many windows from ``start`` reach the end of a ``lines``-line file."""
    return max(0, -(-(lines - start + 1) // WINDOW_LINES))


def _command_of(planned: Planned) -> str | None:
    payload = planned.input
    if not isinstance(payload, Mapping):
        return None
    command = payload.get("command", payload.get("cmd"))
    return str(command) if command else None


def _empty(text: str) -> bool:
    """Whether a shell result holds no output (Codex and mini-swe-agent frame it;
    Claude Code says so)."""
    body = text.rsplit("Output:\n", 1)[-1].rsplit("<output>", 1)[-1]
    body = body.replace("</output>", "").strip()
    return not body or "no output" in body.lower()


_EXIT_CODE = re.compile(r"Process exited with code (\d+)|<returncode>(-?\d+)</returncode>"
                        r'|^\{\s*"returncode": (-?\d+)')


def _shell_failed(text: str) -> bool:
    """Whether a shell result says its command failed (Codex; mini-swe-agent, whose
    ``mini.yaml`` renders a JSON object and whose 1.x templates a tag)."""
    found = _EXIT_CODE.search(text)
    return bool(found and next(g for g in found.groups() if g is not None) != "0")


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _line_count(path: str) -> int:
    return _read(path).count("\n") + 1


def summaries_of(session: Session) -> list[str]:
    """The compaction summaries the trace's model wrote, in order."""
    return [c.summary for c in session.compactions if c.summary]


def needs_json(script: TraceScript) -> str:
    """The needs' outcomes as one JSON string (for a Parquet cell)."""
    return json.dumps([s.as_row() for s in script.needs], sort_keys=True)
