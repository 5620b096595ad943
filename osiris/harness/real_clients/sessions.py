"""``osiris bench clients``: the real traces replayed inside the real clients.

Each tielec trace with a workspace (``datasets/workspaces/``) runs in the client that
produced it (Claude Code traces in Claude Code 2.1.328, Codex traces in Codex 0.169.0),
once per configuration (:mod:`.configs`: the bare client, OSIRIS installed by ``osiris
install``, context-mode installed its own way), the model played by
:class:`~osiris.harness.real_clients.trace_script.TraceScript`; then the public interactive
sessions of ``datasets/corpus/`` that have a workspace, prompt by prompt (:mod:`.corpus`).
Both clients compact on their own before the model's window, as a user's do
(:data:`AUTO_COMPACT_WINDOW`); the scripted model's refusal over the window is a
backstop that a row reports (``needed_refusal``). Everything is measured from
the request bodies the client sent (:func:`measure`):

* tokens of every prompt (system, tool definitions, messages; cl100k after
  :class:`~osiris.harness.real_clients.heads.Neutraliser` fixed dates, scratch paths, random
  ids, ``mktemp`` names and ``ls -l`` times; ripgrep sorted by path in every client,
  :attr:`~osiris.harness.real_clients.run.Workspace.ripgrep_config`), cumulative over the
  session, and of the tool results alone;
* billed cost under each cost model, by the prompt-cache simulator fed with the
  client's own segments and its own ``cache_control`` breakpoints (Codex sets none: the
  OpenAI models match any prefix); turns are :data:`TURN_SPACING_S` apart, as in the
  replay, so the figures do not depend on the machine's speed;
* the first prompt's head (system + tool definitions + added parts) and whether MCP
  tools were deferred behind tool search;
* needs kept, retrieved, lost and absent; extra calls; calls that failed;
* the client's time between answering a tool call and sending the next prompt (its
  tool, its hooks): per configuration, the median over calls of the difference to the
  bare client's same call is the time the configuration adds to a tool call.

Rows go to ``clients_sessions`` and ``clients_turns`` Parquet tables; :func:`render`
writes the table that leads ``reports/BENCHMARK.md`` and the README.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import re
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from osiris.core.cache_sim import Prompt, Segment, simulate
from osiris.core.cost_models import CostModel, default_cost_models
from osiris.core.tokens import TokenCounter, default_counter
from osiris.harness.importers.records import Trace
from osiris.harness.importers.traces import load_trace
from osiris.harness.real_clients.configs import (
    BARE,
    SESSION_CONFIGURATIONS,
    InstallError,
    configurations_of,
    install,
)
from osiris.harness.real_clients.corpus import (
    CORPUS_CONFIGURATIONS,
    CorpusSession,
    corpus_sessions,
    truncated,
    turns_of,
)
from osiris.harness.real_clients.heads import Neutraliser, measure_head
from osiris.harness.real_clients.model_script import (
    ANTHROPIC,
    OPENAI,
    ModelRequest,
    is_agent_turn,
    prompt_text,
    results_by_id,
)
from osiris.harness.real_clients.model_server import LoggedRequest, ModelServer
from osiris.harness.real_clients.run import (
    CLAUDE_CODE,
    CODEX,
    VERSIONS,
    ClientRun,
    Tools,
    Workspace,
    run_client_turns,
)
from osiris.harness.real_clients.trace_plan import PathMap, plan
from osiris.harness.real_clients.trace_script import TraceScript, is_compaction, summaries_of
from osiris.harness.real_clients.workspaces import (
    TREE,
    commit_tree,
    traces_with_workspaces,
    unpack,
)
from osiris.harness.replay.workloads import Session, session_from_trace
from osiris.store.db import ask_owner_to_release, connect_duckdb

ROOT = Path("/tmp/osiris-bench-clients")  # noqa: S108 - fixed on purpose (see below)
"""Scratch root of every session, the same on every machine and run: the paths reach the
prompts, and OSIRIS's refs are content hashes of outputs that name them, so a random
root would change token counts the neutraliser cannot fix. One run at a time holds it
(:func:`run_all` takes a lock)."""
SESSION_TIMEOUT_S = 1800.0
TURN_SPACING_S = 20.0
CLIENT_OF_FORMAT = {"claude-code": CLAUDE_CODE, "codex-cli": CODEX}
MODEL_OF_CLIENT = {CLAUDE_CODE: "claude-sonnet-4-5-20250929", CODEX: "gpt-5-codex"}
COST_MODEL_OF_CLIENT = {CLAUDE_CODE: "anthropic-5m", CODEX: "openai-auto"}
OSIRIS_NOTE = "hook additional context: OSIRIS"
"""How Claude Code frames the text an OSIRIS hook added to a tool result."""
CONTEXT_WINDOW = {CLAUDE_CODE: 200_000, CODEX: 272_000}
"""The model's input window (claude-sonnet-4-5: 200k; gpt-5-codex: 272k input), in the
project's count: the scripted model refuses a longer prompt as the provider does. Both
clients compact on their own before it (:data:`AUTO_COMPACT_WINDOW`); the refusal is the
backstop, and a session that needed it says so (``needed_refusal``)."""
AUTO_COMPACT_WINDOW = {CLAUDE_CODE: 200_000}
"""``CLAUDE_CODE_AUTO_COMPACT_WINDOW`` of every Claude Code run. Claude Code 2.1.328
compacts proactively only when it knows the model's window from a non-"auto" source; a
user of Anthropic's own endpoint gets it from the account's bootstrap, which a custom
``ANTHROPIC_BASE_URL`` lacks, so without this it compacts only after a refusal. With it,
it compacts at window − 20,000 − 13,000 = 167,000 tokens, by the usage the scripted
server reports (``../shared/FACTS.md``). Values under 100,000 are read as 100,000 (its
minimum; it then compacts near 67,000).

Codex needs nothing: 0.169.0's bundled model catalog gives ``gpt-5-codex`` a 272,000-token
window and no ``auto_compact_token_limit``, so it compacts at its default share of the
window, as a Codex user's does with the default ``config.toml`` (checked: with
``-c model_context_window=40000`` it compacted near 34,000 tokens against the scripted
provider, asking with its local "CONTEXT CHECKPOINT COMPACTION" prompt)."""
QUICK_SESSION = "codex-cli__tielec-ai-workflow-agent/issue-119/01_requirements/review"
_LS_TIME = re.compile(r"\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d "
                      r"(?:\d\d:\d\d| \d{4})\b")
_NPM_LOG = re.compile(r"\d{4}-\d\d-\d\dT\d\d_\d\d_\d\d_\d+Z")
_TOKENS_LEFT = re.compile(r"<total_tokens>\d+ tokens left</total_tokens>")
"""Claude Code 2.1 tells the model its remaining token budget in tool results; the
number follows the usage the scripted model reports, so it is fixed (its size varies
by a token at most)."""


@dataclass
class Measured:
    """One session in one configuration."""

    session: str
    client: str
    configuration: str
    status: str
    """``ok``, ``exit N``, ``timed out``, or ``not installed: …``."""
    seconds: float = 0.0
    turns: list[dict[str, Any]] = field(default_factory=list)
    row: dict[str, Any] = field(default_factory=dict)


def neutraliser(workspace: Workspace, repo: Path) -> Neutraliser:
    """What changes between runs of one session, fixed (module docstring). Claude Code
    also names a folder after the working directory with ``/`` turned into ``-``."""
    literals = {}
    for path, stand_in in ((str(workspace.root), "/scratch"), (str(repo.resolve()), "/repo")):
        literals[path] = stand_in
        literals[path.replace("/", "-")] = stand_in.replace("/", "-")
    return Neutraliser(literals)


_MODIFIED = re.compile(r"(\[This command modified \d+ files? you've previously read: )"
                       r"([^\]]*?)(\. Call Read before editing\.\])")
"""Claude Code lists the files a command changed in whatever order it noticed them."""


def _fixed(neutralise: Neutraliser, text: str) -> str:
    text = neutralise(text)
    text = _MODIFIED.sub(lambda m: m[1] + ", ".join(sorted(m[2].split(", "))) + m[3], text)
    text = _LS_TIME.sub("Jan  1 00:00", text)
    text = _TOKENS_LEFT.sub("<total_tokens>15000000 tokens left</total_tokens>", text)
    return _NPM_LOG.sub("2026-01-01T00_00_00_000Z", text)


def segments(body: Mapping[str, Any], api: str) -> list[tuple[str, bool]]:
    """The prompt's pieces in order, each with whether a cache breakpoint follows it:
    system blocks, the tool definitions, then every message block (Anthropic) or input
    item (OpenAI)."""
    out: list[tuple[str, bool]] = []
    system = body.get("system" if api == ANTHROPIC else "instructions")  # chat: a message
    for block in system if isinstance(system, list) else [system] if system else []:
        text = block.get("text", "") if isinstance(block, dict) else str(block)
        out.append((text, isinstance(block, dict) and "cache_control" in block))
    tools = body.get("tools")
    if isinstance(tools, list) and tools:
        marked = any(isinstance(t, dict) and "cache_control" in t for t in tools)
        out.append((json.dumps(tools, separators=(",", ":"), ensure_ascii=False), marked))
    for message in body.get("input" if api == OPENAI else "messages") or []:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if api == ANTHROPIC and isinstance(content, list):
            for block in content:
                text = prompt_text({"messages": [block]}) if isinstance(block, dict) else ""
                out.append((text, isinstance(block, dict) and "cache_control" in block))
        else:
            out.append((prompt_text({"messages": [message]}), "cache_control" in message))
    return out


class _Counts:
    """Token counts of neutralised texts, each distinct text counted once."""

    def __init__(self, counter: TokenCounter, neutralise: Neutraliser) -> None:
        self.counter, self.neutralise = counter, neutralise
        self._memo: dict[str, tuple[str, int]] = {}

    def __call__(self, text: str) -> tuple[str, int]:
        """(content key, tokens) of ``text`` after neutralising."""
        found = self._memo.get(text)
        if found is None:
            fixed = _fixed(self.neutralise, text)
            found = (hashlib.sha256(fixed.encode("utf-8")).hexdigest(),
                     self.counter.count(fixed))
            self._memo[text] = found
        return found


def measure(run: ClientRun, script: TraceScript, prompt: str, counts: _Counts,
            models: Sequence[CostModel]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per-turn rows and the session's figures from what the client sent."""
    turns: list[dict[str, Any]] = []
    prompts: list[Prompt] = []
    answered: dict[str, float] = {}  # call id -> when the tool call was answered
    logged = [e for e in run.requests if e.api is not None and isinstance(e.body, dict)
              and not e.path.endswith("/count_tokens") and e.status == 200]
    for e in logged:
        if e.action and e.action.get("call_id"):
            answered[str(e.action["call_id"])] = e.answered_s
    received: set[str] = set()
    notes = 0
    for index, entry in enumerate(logged):
        request = ModelRequest(entry.index, str(entry.api), entry.path, entry.body)
        pieces = [(counts(text), mark) for text, mark in segments(entry.body, request.api)]
        tokens = sum(c[1] for c, _ in pieces)
        results = results_by_id(request)
        kind = ("compaction" if is_compaction(request) else
                "agent" if is_agent_turn(request) else "side")
        fresh = [cid for cid in results if cid in answered and cid not in received]
        received.update(fresh)
        notes += sum(1 for cid in fresh if OSIRIS_NOTE in results[cid][0])
        gap = (round((entry.received_s - max(answered[c] for c in fresh)) * 1000, 1)
               if kind == "agent" and fresh else None)
        action = entry.action or {}
        written = action.get("text") if "text" in action else action.get("input")
        turns.append({"turn": index, "kind": kind, "prompt_tokens": tokens,
                      "output_tokens": _written_tokens(counts.counter, written),
                      "tool_result_tokens": sum(counts(t)[1] for t, _ in results.values()),
                      "tool_results": len(results),
                      "cache_breakpoints": sum(1 for _, mark in pieces if mark),
                      "answered_with": action.get("tool") or ("text" if action else None),
                      "call_id": action.get("call_id"), "gap_ms": gap})
        prompts.append(Prompt(index * TURN_SPACING_S, tuple(
            Segment(key, n, mark) for (key, n), mark in pieces)))
    kinds = {e["call_id"]: e["kind"] for e in script.events if e.get("call_id")}
    for turn in turns:
        turn["call_kind"] = kinds.get(turn["call_id"]) if turn["call_id"] else None
    outcomes = [s.outcome for s in script.needs]
    trace_events = [e for e in script.events if e["kind"] == "trace"]
    row: dict[str, Any] = {
        "requests": len(turns), "agent_turns": sum(t["kind"] == "agent" for t in turns),
        "side_requests": sum(t["kind"] == "side" for t in turns),
        "compaction_requests": sum(t["kind"] == "compaction" for t in turns),
        "cumulative_input_tokens": sum(t["prompt_tokens"] for t in turns),
        "output_tokens": sum(t["output_tokens"] for t in turns),
        "final_prompt_tokens": turns[-1]["prompt_tokens"] if turns else 0,
        "peak_prompt_tokens": max((t["prompt_tokens"] for t in turns), default=0),
        "first_prompt_tokens": turns[0]["prompt_tokens"] if turns else 0,
        "tool_result_tokens": sum(t["tool_result_tokens"] for t in turns),
        "cache_breakpoints": sum(t["cache_breakpoints"] for t in turns),
        "needs_total": sum(o != "absent" for o in outcomes),
        "needs_kept": outcomes.count("kept"), "needs_retrieved": outcomes.count("retrieved"),
        "needs_lost": outcomes.count("lost"), "needs_absent": outcomes.count("absent"),
        "needs_pending": outcomes.count("pending"),
        "needs": json.dumps([s.as_row() for s in script.needs], sort_keys=True),
        "trace_calls": len(trace_events),
        "extra_calls": sum(e["kind"] == "retrieval" for e in script.events),
        "failed_calls": sum(bool(e.get("is_error")) for e in trace_events),
        "unanswered_calls": sum("is_error" not in e for e in trace_events),
        "skipped_calls": sum(e["kind"] == "skipped" for e in script.events),
        "gaps_ms": json.dumps([t["gap_ms"] for t in turns if t["gap_ms"] is not None]),
        "osiris_hook_notes": notes,
        **compactions_of(run.requests),
    }
    first = next((ModelRequest(e.index, str(e.api), e.path, e.body) for e in logged
                  if is_agent_turn(ModelRequest(e.index, str(e.api), e.path, e.body))), None)
    if first is not None:
        head = measure_head(first, prompt, counts.counter,
                            counts.neutralise)
        row.update(head_tokens=head.total.tokens, head_tool_definition_tokens=head.tools.tokens,
                   mcp_tools_defined=len(head.mcp_tools_defined),
                   mcp_tools_deferred=head.mcp_tools_deferred)
    for model in models:
        billed = simulate(prompts, model)
        # What the model wrote is billed too (compaction summaries included): the same
        # in every configuration but for retrievals, so it narrows a relative gain.
        row[f"billed_cost_{model.name}"] = round(
            sum(t.cost_usd for t in billed) + model.output_cost(row["output_tokens"]), 8)
        row[f"cache_read_tokens_{model.name}"] = sum(t.cache_read_tokens for t in billed)
    row["cost_model_version"] = models[0].version if models else ""
    return turns, row


REFUSED = "over the context window"
"""The model server's log note on a prompt it refused (:class:`ModelServer`)."""


def compactions_of(requests: Sequence[LoggedRequest]) -> dict[str, Any]:
    """How the client compacted: ``compactions`` it started on its own (proactive),
    ``reactive_compactions`` it started because the model refused the prompt before,
    ``refused_requests``, and ``needed_refusal`` (the session reached the window: a
    proactive client should not). A compaction request is billed like any other."""
    proactive = reactive = refused = 0
    after_refusal = False
    for entry in requests:
        if entry.api is None or entry.path.endswith("/count_tokens"):
            continue
        if entry.error == REFUSED:
            refused += 1
            after_refusal = True
            continue
        if isinstance(entry.body, dict) and is_compaction(
                ModelRequest(entry.index, entry.api, entry.path, entry.body)):
            if after_refusal:
                reactive += 1
            else:
                proactive += 1
        after_refusal = False
    return {"compactions": proactive, "reactive_compactions": reactive,
            "refused_requests": refused, "needed_refusal": refused > 0}


def compaction_env(client: str, window: int | None = None,
                   percent: int | None = None) -> dict[str, str]:
    """The environment that tells ``client`` its model's window, as a user's client
    knows it (:data:`AUTO_COMPACT_WINDOW`; ``window`` overrides it). ``percent``
    (``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE``) compacts at that share of the window instead:
    a test's way to compact early, the window having a 100,000-token minimum."""
    if client != CLAUDE_CODE:
        return {}
    env = {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": str(window or AUTO_COMPACT_WINDOW[client])}
    if percent is not None:
        env["CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"] = str(percent)
    return env


def _written_tokens(counter: TokenCounter, written: Any) -> int:
    """Tokens of what the scripted model answered (a call's input or a text), counted as
    its input is."""
    if written is None:
        return 0
    text = written if isinstance(written, str) else json.dumps(written, ensure_ascii=False)
    return counter.count(text)


def client_of(trace_rel: Path) -> str | None:
    """The live client of a trace (by its dataset folder), None for other agents."""
    return CLIENT_OF_FORMAT.get(trace_rel.parts[0].split("__", 1)[0])


def task_prompt(trace_path: Path, fallback: str) -> str:
    """What the user typed: ``prompt.txt`` beside the log, verbatim (Claude Code
    attaches its ``@`` mentions itself), else the imported task prompt."""
    beside = trace_path.parent / "prompt.txt"
    if beside.exists():
        return beside.read_bytes().decode("utf-8", errors="replace")
    return fallback


def run_session(trace_path: Path, traces_dir: Path, tarball: Path, configuration: str, *,
                tools: Tools, repo: Path, root: Path = ROOT,
                timeout_s: float = SESSION_TIMEOUT_S,
                models: Sequence[CostModel] = (), counter: TokenCounter | None = None,
                compact_window: int | None = None) -> Measured:
    """One trace in one configuration of its client, measured. ``compact_window``:
    Claude Code's auto-compact window (default :data:`AUTO_COMPACT_WINDOW`)."""
    rel = trace_path.relative_to(traces_dir)
    client = client_of(rel)
    if client is None:
        raise ValueError(f"{rel}: no real client for this trace")
    trace = load_trace(trace_path)
    session = session_from_trace(trace, str(rel), str(trace_path))
    return _play(_Played(str(rel.parent), client, trace, session, tarball,
                         trace_path.parent / "prompt_includes",
                         task_prompt(trace_path, session.task_prompt)),
                 configuration, tools=tools, repo=repo, root=root, timeout_s=timeout_s,
                 models=models, counter=counter,
                 compaction=compaction_env(client, compact_window))


def run_corpus_session(entry: CorpusSession, configuration: str, *, tools: Tools,
                       repo: Path, root: Path = ROOT, timeout_s: float = SESSION_TIMEOUT_S,
                       models: Sequence[CostModel] = (),
                       counter: TokenCounter | None = None,
                       compact_window: int | None = None, compact_percent: int | None = None,
                       segments: int | None = None, log_path: Path | None = None
                       ) -> Measured:
    """One interactive corpus session in one configuration of its client, prompt by
    prompt (:mod:`.corpus`); ``segments``: only the first ones, and ``compact_percent``
    (:func:`compaction_env`): a test's shortcuts. ``log_path``: the model server's
    request log (JSONL)."""
    if entry.tarball is None:
        return Measured(entry.name, entry.client, configuration, REPLAY_ONLY)
    trace = load_trace(entry.path)
    session = session_from_trace(trace, entry.name, str(entry.path))
    return _play(_Played(entry.name, entry.client, trace, session, entry.tarball, None,
                         session.task_prompt, interactive=True, segments=segments,
                         log_path=log_path, tree=entry.path.stem),
                 configuration, tools=tools, repo=repo, root=root, timeout_s=timeout_s,
                 models=models, counter=counter,
                 compaction=compaction_env(entry.client, compact_window, compact_percent))


def run_own_session(path: Path, trace: Trace, client: str, fill: Callable[[Path], None],
                    configuration: str, *, tools: Tools, repo: Path, root: Path = ROOT,
                    timeout_s: float = SESSION_TIMEOUT_S,
                    counter: TokenCounter | None = None) -> Measured:
    """A user's own session file in one configuration of its client, prompt by prompt, in
    a workspace ``fill`` copies in (``osiris bench clients --session``)."""
    session = session_from_trace(trace, path.name, str(path))
    return _play(_Played(path.name, client, trace, session, None, None, session.task_prompt,
                         interactive=True, fill=fill),
                 configuration, tools=tools, repo=repo, root=root, timeout_s=timeout_s,
                 models=(), counter=counter, compaction=compaction_env(client, None))


REPLAY_ONLY = "replay only: no workspace"
"""The status of a corpus session that has no workspace (``SOURCES.md``)."""


@dataclass(frozen=True)
class _Played:
    """What a session plays, whatever its source."""

    name: str
    client: str
    trace: Trace
    session: Session
    tarball: Path | None
    """The workspace's tarball (None: ``fill`` fills it)."""
    includes: Path | None
    prompt: str
    interactive: bool = False
    segments: int | None = None
    log_path: Path | None = None
    tree: str = TREE
    """The tarball's top folder (the corpus: the session file's stem)."""
    fill: Callable[[Path], None] | None = None
    """Fills the empty project folder (a user's own workspace), instead of ``tarball``."""


def _play(played: _Played, configuration: str, *, tools: Tools, repo: Path, root: Path,
          timeout_s: float, models: Sequence[CostModel], counter: TokenCounter | None,
          compaction: Mapping[str, str]) -> Measured:
    name, client, session = played.name, played.client, played.session
    workspace = Workspace(root / client).reset(client)
    if played.fill is not None:
        played.fill(workspace.project)
        commit_tree(workspace.project)
    elif played.tarball is not None:
        unpack(played.tarball, workspace.project, includes=played.includes, tree=played.tree)
    started = time.monotonic()
    try:
        installed = install(configuration, client, workspace, tools)
    except (InstallError, OSError) as exc:
        return Measured(name, client, configuration, f"not installed: {exc}"[:400])
    paths = PathMap(str(played.trace.meta.get("cwd") or "") or None, workspace.project,
                    workspace.tmp, workspace.home if played.interactive else None)
    calls = plan(session, client, paths)
    turns = turns_of(played.trace, session, paths) if played.interactive else []
    final = session.final_text or "Done."
    if played.segments is not None:
        calls, turns, cut = truncated(calls, turns, played.segments)
        final = cut or final
    prompt = paths.text(played.prompt) if played.interactive else played.prompt
    script = TraceScript(client, calls, session, paths, summaries=summaries_of(session),
                         final_text=final, turns=turns)
    model_args = ("--model", MODEL_OF_CLIENT[client]) if client == CLAUDE_CODE else (
        "-m", MODEL_OF_CLIENT[client])
    with ModelServer(script, context_window=CONTEXT_WINDOW[client],
                     log_path=played.log_path) as server:
        run = run_client_turns(client, server, workspace, [prompt, *(t.prompt for t in turns)],
                               tools=tools, timeout_s=timeout_s,
                               extra_args=(*installed.extra_args, *model_args),
                               extra_env=compaction)
    status = ("timed out" if run.timed_out else "ok" if run.returncode == 0
              else f"exit {run.returncode}")
    counts = _Counts(counter or default_counter(), neutraliser(workspace, repo))
    measured_turns, row = measure(run, script, prompt, counts,
                                  models or default_cost_models().models)
    row.update(session=name, client=client, client_version=VERSIONS[client],
               model=MODEL_OF_CLIENT[client], configuration=configuration, status=status,
               seconds=round(time.monotonic() - started, 1),
               installed_by=" && ".join(installed.commands),
               stderr_tail=_fixed(counts.neutralise, run.stderr[-2000:]),
               neutralised=json.dumps(dict(sorted(counts.neutralise.replaced.items()))),
               planned_calls=len(script.calls), prompts_sent=1 + len(turns),
               prompts_received=1 + script.prompts_received)
    row["osiris_routes"] = json.dumps(routes_of(workspace.osiris_home), sort_keys=True)
    for turn in measured_turns:
        turn.update(session=name, client=client, configuration=configuration)
    return Measured(name, client, configuration, status, row["seconds"], measured_turns, row)


def routes_of(home: Path) -> dict[str, int]:
    """What OSIRIS's routing did in a session, from its home's journal: how many events
    of each ``route.*`` kind, and ``read_changed_tokens_kept_out``, the file tokens the
    changed re-reads did not show ({}: no OSIRIS home, or it cannot be read)."""
    db = home / "osiris.duckdb"
    if not db.exists():
        return {}
    ask_owner_to_release(home)  # it flushes what it holds, then lets go of the file
    for _ in range(50):
        try:
            con = connect_duckdb(db, read_only=True)
            break
        except duckdb.Error:
            time.sleep(0.1)
    else:
        return {}
    try:
        kinds = {str(k): int(n) for k, n in con.execute(
            "SELECT kind, count(*) FROM events WHERE kind LIKE 'route.%' GROUP BY kind"
        ).fetchall()}
        kept_out = con.execute(
            "SELECT coalesce(sum(CAST(body->>'tokens' AS BIGINT) - CAST(body->>'shown_tokens'"
            " AS BIGINT)), 0) FROM events WHERE kind = 'route.read_changed'").fetchone()
    except duckdb.Error:
        return {}
    finally:
        con.close()
    return {**kinds, "read_changed_tokens_kept_out": int(kept_out[0]) if kept_out else 0}


def run_all(repo: Path, *, quick: bool = False,
            configurations: Sequence[str] = SESSION_CONFIGURATIONS,
            say: Callable[[str], None] = lambda _m: None, root: Path = ROOT
            ) -> list[Measured]:
    """Every trace with a workspace, in its own client, in every configuration; then
    (not ``quick``) the corpus's interactive sessions with a workspace (:mod:`.corpus`)."""
    traces_dir = repo / "datasets" / "traces"
    tools = Tools.of_repo(repo)
    found = traces_with_workspaces(traces_dir, repo / "datasets" / "workspaces")
    if quick:
        found = [(t, w) for t, w in found if QUICK_SESSION in str(t)]
    counter = default_counter()
    out: list[Measured] = []
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RuntimeError(f"{root} is in use by another `osiris bench clients`: wait "
                               "for it to finish") from None
        _run_found(found, traces_dir, tools, configurations, say, root, counter, out, repo)
        if not quick:
            _run_corpus(corpus_sessions(repo / "datasets" / "corpus"), tools, configurations,
                        say, root, counter, out, repo)
    return out


CORPUS_WORKERS = 2
"""Corpus sessions run this many at a time (the machines have 2 cores): each worker has
its own scratch root and the same sessions every run (:func:`corpus_lanes`), so token
figures do not depend on which worker was free. Their milliseconds are not reported: two
clients at once disturb each other's timing (the tielec sessions, one at a time, give
those)."""


def corpus_lanes(jobs: Sequence[tuple[CorpusSession, str]], lanes: int,
                 weight: Callable[[CorpusSession], int]) -> list[list[tuple[CorpusSession, str]]]:
    """The jobs each worker runs, in order: every configuration of a session on the same
    worker, one after the other, so a session never runs beside itself (its servers would
    meet on the same localhost ports: cipherbox-sharing's `curl localhost:3001` answered
    the other configuration's server); sessions go, heaviest first (``weight``: its tool
    calls), to the lane with the least weight so far. The same lanes every run."""
    sessions: dict[str, list[tuple[CorpusSession, str]]] = {}
    for entry, configuration in jobs:
        sessions.setdefault(entry.name, []).append((entry, configuration))
    heaviest = sorted(sessions.values(), key=lambda js: (-weight(js[0][0]), js[0][0].name))
    out: list[list[tuple[CorpusSession, str]]] = [[] for _ in range(lanes)]
    load = [0] * lanes
    for session_jobs in heaviest:
        lane = load.index(min(load))
        out[lane] += session_jobs
        load[lane] += weight(session_jobs[0][0]) * len(session_jobs)
    return out


def _run_corpus(found: list[CorpusSession], tools: Tools, configurations: Sequence[str],
                say: Callable[[str], None], root: Path, counter: TokenCounter,
                out: list[Measured], repo: Path) -> None:
    """The corpus sessions with a workspace, in :data:`CORPUS_CONFIGURATIONS`, two at a
    time (:data:`CORPUS_WORKERS`); one row for each replay-only session, so the note can
    name it."""
    jobs: list[tuple[CorpusSession, str]] = []
    for entry in found:
        if entry.tarball is None:
            out.append(Measured(entry.name, entry.client, BARE, REPLAY_ONLY))
            continue
        missing = tools.missing([entry.client])
        for configuration in configurations_of(entry.client, tuple(
                c for c in configurations if c in CORPUS_CONFIGURATIONS)):
            if missing:
                out.append(Measured(entry.name, entry.client, configuration,
                                    f"not installed: {tools.client(entry.client)} is missing "
                                    "(run .ci/install-node-tools)"))
                continue
            jobs.append((entry, configuration))

    calls = {entry.name: len(load_trace(entry.path).steps) for entry, _ in jobs}
    lanes = corpus_lanes(jobs, CORPUS_WORKERS, lambda entry: calls[entry.name])

    def worker(slot: int) -> list[Measured]:
        done = []
        for entry, configuration in lanes[slot]:
            say(f"clients: {entry.name} in {entry.client} ({configuration})")
            measured = run_corpus_session(entry, configuration, tools=tools, repo=repo,
                                          root=root / f"corpus-{slot}", counter=counter)
            measured.row["timed"] = False
            say(f"clients: {entry.name} ({configuration}) {measured.status} in "
                f"{measured.seconds:.0f} s, "
                f"{measured.row.get('cumulative_input_tokens', 0):,} tokens")
            done.append(measured)
        return done

    with ThreadPoolExecutor(max_workers=CORPUS_WORKERS) as pool:
        results = [m for part in pool.map(worker, range(CORPUS_WORKERS)) for m in part]
    order = {(e.name, c): i for i, (e, c) in enumerate(jobs)}
    out.extend(sorted(results, key=lambda m: order[(m.session, m.configuration)]))


def _run_found(found: list[tuple[Path, Path]], traces_dir: Path, tools: Tools,
               configurations: Sequence[str], say: Callable[[str], None], root: Path,
               counter: TokenCounter, out: list[Measured], repo: Path) -> None:
    for trace_path, tarball in found:
        client = client_of(trace_path.relative_to(traces_dir))
        if client is None:
            continue
        missing = tools.missing([client])
        for configuration in configurations_of(client, tuple(configurations)):
            name = str(trace_path.relative_to(traces_dir).parent)
            if missing:
                out.append(Measured(name, client, configuration,
                                    f"not installed: {tools.client(client)} is missing "
                                    "(run .ci/install-node-tools)"))
                continue
            say(f"clients: {name} in {client} ({configuration})")
            measured = run_session(trace_path, traces_dir, tarball, configuration,
                                   tools=tools, repo=repo, root=root, counter=counter)
            say(f"clients: {measured.status} in {measured.seconds:.0f} s, "
                f"{measured.row.get('cumulative_input_tokens', 0):,} tokens")
            out.append(measured)


def session_rows(measured: Iterable[Measured]) -> list[dict[str, Any]]:
    """One row per session × configuration, with gains against the bare client and the
    time added per tool call (median of paired differences to the bare client's)."""
    rows = [{"session": m.session, "client": m.client, "configuration": m.configuration,
             "status": m.status, "seconds": m.seconds, **m.row} for m in measured]
    bare = {r["session"]: r for r in rows if r["configuration"] == BARE and r["status"] == "ok"}
    for row in rows:
        base = bare.get(row["session"])
        ok = row["status"] == "ok" and base is not None
        for measure_name in ("cumulative_input_tokens", "tool_result_tokens",
                             *[k for k in row if k.startswith("billed_cost_")]):
            value, reference = row.get(measure_name), base.get(measure_name) if base else None
            row[f"net_gain_{measure_name}"] = (round(1 - value / reference, 6)
                                               if ok and value is not None and reference
                                               else None)
        gaps = json.loads(row.get("gaps_ms") or "[]")
        row["median_gap_ms"] = statistics.median(gaps) if gaps else None
        base_gaps = json.loads(base.get("gaps_ms") or "[]") if base else []
        paired = [a - b for a, b in zip(gaps, base_gaps, strict=False)]
        row["added_ms_per_call"] = (round(statistics.median(paired), 1)
                                    if ok and paired and row["configuration"] != BARE
                                    and row.get("timed") is not False else None)
    return rows
