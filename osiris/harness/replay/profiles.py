"""Client profiles: what each client really does with a session, so the replay does it too.

A replay that models no client credits OSIRIS with savings no user gets: a ~100-token
prompt head, outputs that reach the model as OSIRIS's ref and preview, evictions no
shipped client allows, a raw baseline that never compacts. A :class:`ClientProfile`
names, for one client, every behaviour that changes the prompt:

* **head** — the client's own system prompt and tool definitions, measured from the
  real binary's first request (``osiris/harness/data/client_heads.json``, written by
  :mod:`osiris.harness.real_clients.capture`), re-sent with every prompt;
* **output shaping** — what reaches the model of a tool's output: Claude Code's
  2,000-line ``Read`` and its persisting of large outputs to a file with a short
  preview, Codex's head-and-tail cut of long shell output;
* **compaction** — the client replaces its history by a summary near the window;
* **eviction** — whether anything may leave the history at the agent's request (no
  shipped client allows it; a Python agent loop that owns its messages does);
* **routing** — what OSIRIS can really do in that client at this commit: in Claude
  Code and Codex its hooks observe every call and replace a large shell output, after it
  ran, by a preview and ref (from what the client gives the hook); windows of large reads and
  re-read pointers need the files, which a replay does not have, so only the real-client
  stage measures them; an agent loop routes every observation through the engine.

Every system of a replay (raw, client-native, the oracle, OSIRIS, the peers) runs
under the same profile. The figures are named here and in the data file; change them
there, with the measurement that backs them.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from osiris.harness.replay.workloads import Session, Step

PROFILES = ("claude-code", "codex", "agent-loop")
#: The profile each trace format is replayed under by default.
NATIVE_PROFILE = {"claude-code": "claude-code", "codex-cli": "codex",
                  "mini-swe-agent": "agent-loop", "swe-agent": "agent-loop",
                  "sweep": "agent-loop", "": "agent-loop"}
#: OSIRIS routing features (what a replay may let OSIRIS do in a client).
ROUTING_FEATURES = ("outputs", "evict", "observe-hooks", "shell")


@functools.lru_cache(maxsize=1)
def measured() -> dict[str, Any]:
    """The measured client data (``osiris/harness/data/client_heads.json``)."""
    try:
        text = resources.files("osiris.harness").joinpath("data/client_heads.json").read_text(
            "utf-8")
    except FileNotFoundError:  # not measured yet: every figure says so
        return {}
    data: dict[str, Any] = json.loads(text)
    return data


@dataclass(frozen=True)
class ClientProfile:
    """One client as it really behaves (see the module docstring)."""

    name: str
    label: str
    head_tokens: int
    """The client's own system prompt and tool definitions, cl100k, in every prompt."""
    head_how: str
    window_tokens: int
    compact_at_tokens: int | None
    """The client compacts its history once a prompt exceeds this (None: never)."""
    summary_tokens: int
    """Size of the summary that replaces the history when no logged summary is known."""
    evicts: bool
    """The agent may remove items from its own history (drop receipts)."""
    osiris_routing: frozenset[str]
    osiris_head_tokens: int | None
    """What OSIRIS installed adds to every prompt (None: its definitions as listed)."""
    shaper: Callable[[Step], str] = field(repr=False, compare=False,
                                          default=lambda step: step.output)
    notes: tuple[str, ...] = ()

    def shape(self, step: Step) -> str:
        """What reaches the model of ``step``'s output in this client."""
        return self.shaper(step)


# -- output shaping, per client ---------------------------------------------------------


def _summary(client: str, *path: str, default: Any = None) -> Any:
    """A figure of ``summary.<client>.<path>`` in the measured data."""
    node: Any = measured().get("summary", {}).get(client, {})
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return default
        node = node[key]
    return node


def trace_model(client: str) -> str:
    """The model the bundled logs of ``client`` used (its head is measured for it)."""
    model = measured().get("clients", {}).get(client, {}).get("trace_model")
    return str(model) if model else "default"


def head_tokens(client: str, configuration: str = "bare") -> int:
    """The client's own head, measured from its first request with the traces' model."""
    model = trace_model(client)
    return int(_summary(client, "head_tokens", model, configuration, default=0) or
               _summary(client, "head_tokens", "default", configuration, default=0))


def delta_tokens(client: str, configuration: str) -> int | None:
    """What ``configuration`` (osiris, context-mode) adds to the client's every prompt."""
    model = trace_model(client)
    value = _summary(client, "delta_tokens", model, configuration)
    if value is None:
        value = _summary(client, "delta_tokens", "default", configuration)
    return None if value is None else int(value)


def default_model_head(client: str, configuration: str = "osiris") -> tuple[str, int] | None:
    """What ``configuration`` adds on the client's default model when that model defers
    MCP tool definitions behind the client's tool search and the traces' model does not
    (Codex 0.169.0: its default lists them by name, the traces' gpt-5-codex gets them in
    full): the default model's name and the tokens added, measured as for the traces'."""
    model = trace_model(client)
    if model == "default":
        return None
    by_model = measured().get("clients", {}).get(client, {}).get("heads", {}).get(
        "by_model", {})
    default = by_model.get("default", {}).get(configuration, {})
    traces = by_model.get(model, {}).get(configuration, {})
    value = _summary(client, "delta_tokens", "default", configuration)
    if value is None or not default.get("mcp_tools_deferred") or traces.get(
            "mcp_tools_deferred", True):
        return None
    return (str(default.get("model") or "default"), int(value))


def _claude_code_shaper(count: Callable[[str], int]) -> Callable[[Step], str]:
    read = _summary("claude-code", "read", default={}) or {}
    cap = int(read.get("token_cap") or 25_000)
    persist = _summary("claude-code", "bash_persist", default={}) or {}
    persist_at = int(persist.get("persisted_from_chars") or 30_100)
    preview = int(persist.get("preview_chars") or 2_000)

    def shape(step: Step) -> str:
        text = step.output
        if step.tool == "Read":
            if count(text) <= cap:
                return text
            # Over the cap Claude Code shows the first lines that fit and a notice with
            # the offset/limit of the next page (measured: 2,217 of 6,000 lines).
            lines, total, kept = text.split("\n"), 0, []
            for line in lines:
                total += count(line + "\n")
                if total > cap:
                    break
                kept.append(line)
            return ("\n".join(kept) + f"\n\n[Showing lines 1-{len(kept)} of {len(lines)}: "
                    f"the file exceeds the {cap:,}-token limit of one Read. Read with "
                    f"offset={len(kept) + 1} and a limit to see more.]")
        if len(text) >= persist_at:
            path = f"~/.claude/projects/session/tool-results/{step.i:04d}.txt"
            head = text[:preview]
            head = head[:head.rfind("\n")] if "\n" in head else head
            return (f"<persisted-output>\nOutput too large ({len(text):,} characters). "
                    f"Full output saved to: {path}\n\nPreview (first 2KB):\n{head}\n...\n"
                    "</persisted-output>")
        return text

    return shape


def _codex_shaper() -> Callable[[Step], str]:
    cut = _summary("codex", "shell_cut", "exec_command", default={}) or {}
    whole = int(cut.get("whole_bytes_up_to") or 9_760)
    head = int(cut.get("head_bytes") or 5_000)
    tail = int(cut.get("tail_bytes") or 5_000)

    def shape(step: Step) -> str:
        data = step.output.encode("utf-8")
        limit, keep_head, keep_tail = whole, head, tail
        asked = step.args.get("max_output_tokens")
        if isinstance(asked, int) and not isinstance(asked, bool) and asked > 0:
            # A rollout's exec_command names its own cap (Codex keeps that many tokens,
            # counted as 4 bytes each, head and tail): the output as logged is already
            # what the model got, and the default cut would take more than Codex did.
            limit = max(whole, 4 * asked)
            keep_head = keep_tail = limit // 2
        if len(data) <= limit:
            return step.output
        lines = step.output.count("\n") + 1
        first = data[:keep_head].decode("utf-8", "ignore")
        last = data[-keep_tail:].decode("utf-8", "ignore")
        return (f"Warning: truncated output (original token count: {len(data) // 4})\n"
                f"Total output lines: {lines}\n\n{first}"
                f"…{len(step.output) - len(first) - len(last)} chars truncated…{last}")

    return shape


def _loop_shaper() -> Callable[[Step], str]:
    # The agent frameworks' own cuts are already in their logs (mini-swe-agent's
    # <output_head>/<output_tail>, SWE-agent's 100-line windows): outputs pass as logged.
    return lambda step: step.output


@functools.cache
def profile(name: str) -> ClientProfile:
    """The profile called ``name`` (one of :data:`PROFILES`)."""
    from osiris.core.tokens import default_counter

    count = default_counter().count
    version = measured().get("clients", {}).get(name, {}).get("version", "")
    how = (f"measured from the first request of {name} {version} with "
           f"{trace_model(name)}, osiris/harness/data/client_heads.json")
    if name == "claude-code":
        return ClientProfile(
            name, f"Claude Code {version}", head_tokens=head_tokens(name), head_how=how,
            window_tokens=200_000,
            # The bundled Claude Code logs auto-compacted at 159,011 to 185,321 provider
            # tokens (compact_metadata.pre_tokens).
            compact_at_tokens=160_000, summary_tokens=3_500, evicts=False,
            osiris_routing=frozenset({"observe-hooks", "shell"}),
            osiris_head_tokens=delta_tokens(name, "osiris"),
            shaper=_claude_code_shaper(count),
            notes=("Read shows at most 25,000 tokens, a Bash output of 30,100 characters or "
                   "more becomes a persisted-output preview (measured)",
                   "OSIRIS's hooks observe every call; a large Bash output of a command "
                   "Claude Code counts a success is replaced after it ran by its preview and "
                   "the ref of the whole (a failure cannot be replaced); read windows and "
                   "re-read pointers are measured in the real client only"))
    if name == "codex":
        return ClientProfile(
            name, f"Codex CLI {version}", head_tokens=head_tokens(name), head_how=how,
            # Codex 0.169.0's model catalogue leaves auto_compact_token_limit null, so it
            # compacts at 90% of the 272,000-token window; the public 0.140 to 0.142 rollouts
            # compacted just before (229k to 241k tokens reported by the provider).
            window_tokens=272_000, compact_at_tokens=244_800, summary_tokens=3_500,
            evicts=False, osiris_routing=frozenset({"observe-hooks", "shell"}),
            osiris_head_tokens=delta_tokens(name, "osiris"), shaper=_codex_shaper(),
            notes=("shell output over about 10,000 bytes keeps 5,000 bytes of head and of "
                   "tail (measured)",
                   "osiris install codex writes the MCP server entry and hooks: a large "
                   "shell output is replaced after it ran by its preview and ref, from the "
                   "record Codex keeps of it (whole up to 64 KiB, head and tail beyond)",
                   "it compacts past 244,800 tokens (90% of its window), as its rollouts "
                   "show; the bundled exec --json logs never get there"))
    if name == "agent-loop":
        return ClientProfile(
            name, "an agent loop that owns its history (mini-swe-agent style)",
            head_tokens=0, head_how="the framework's own system prompt, from the log",
            window_tokens=200_000, compact_at_tokens=None, summary_tokens=0, evicts=True,
            osiris_routing=frozenset({"outputs", "evict"}), osiris_head_tokens=None,
            shaper=_loop_shaper(),
            notes=("the loop calls the engine in process (osiris.Engine) for every "
                   "observation and drops what prune advice names, with drop receipts",))
    raise ValueError(f"unknown client profile {name!r}: use one of {', '.join(PROFILES)}")


def native_profile(session: Session) -> ClientProfile:
    """The profile of the client that produced ``session``."""
    return profile(NATIVE_PROFILE.get(session.client, "agent-loop"))
