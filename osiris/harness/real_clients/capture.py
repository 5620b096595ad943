"""Measure the real clients' prompt heads and behaviour: ``osiris/harness/data/client_heads.json``.

``python -m osiris.harness.real_clients.capture --out osiris/harness/data/client_heads.json``
runs Claude Code and Codex (``.ci/install-node-tools``) offline against the scripted
model (:mod:`osiris.harness.real_clients.model_server`) and records, in cl100k tokens and bytes:

* ``heads`` — the first request of a session whose prompt is ``hi`` (the model answers
  at once), for each model (the client's default and the model of the bundled traces)
  and configuration (:mod:`osiris.harness.real_clients.configs`): system, tool definitions,
  each part the client adds to the messages, tool names, MCP tools deferred or not,
  and each configuration's delta over the bare client;
* ``hook_texts`` — a 3-step session (read a small file, ``echo hi``, end): what reached
  the model after each call, and the extra each configuration's hooks add;
* ``behaviour`` — how the client cuts tool output (:mod:`osiris.harness.real_clients.behaviour`).

Only counts, sizes, names, labels and short shapes written here are stored; the
request bodies (the vendors' system prompts) stay in the run's scratch directory.
The file is data for the replay's client profiles (:func:`load`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import logging
import platform
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from osiris.core.tokens import ENCODING_NAME, default_counter
from osiris.harness.real_clients import behaviour
from osiris.harness.real_clients.configs import BARE, CONFIGURATIONS
from osiris.harness.real_clients.heads import added_since, delta, measure_head
from osiris.harness.real_clients.measurer import PROMPT, TRACE_MODELS, Measurer
from osiris.harness.real_clients.model_script import Action, FinalText, ToolCall
from osiris.harness.real_clients.run import (
    CLAUDE_CODE,
    CLIENTS,
    CODEX,
    NPM_PACKAGES,
    VERSIONS,
    Tools,
    Workspace,
)

logger = logging.getLogger(__name__)

DATA_FILE = Path(__file__).resolve().parents[1] / "data" / "client_heads.json"
SCHEMA_VERSION = 1
DEFAULT_ROOT = Path("/tmp/osiris-clients")  # noqa: S108 - fixed on purpose: it reaches the prompts
HOOK_MODELS = {CLAUDE_CODE: None, CODEX: TRACE_MODELS[CODEX]}
"""Model of the 3-step session: the client's default, except Codex, whose default model
gets no shell tool of its own (only ``exec``, JavaScript that calls nested tools)."""
SMALL_FILE = "notes.txt"
SMALL_TEXT = "alpha\nbeta\ngamma\n"


def load(path: Path = DATA_FILE) -> dict[str, Any]:
    """The committed measurements."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def measure_heads(measurer: Measurer, client: str) -> dict[str, Any]:
    """Heads for each model and configuration, with deltas over the bare client, and a
    second bare run to show the figures repeat."""
    by_model: dict[str, Any] = {}
    repeat_ok = True
    for model in (None, TRACE_MODELS[client]):
        heads = {c: measurer.head(client, c, model) for c in CONFIGURATIONS}
        again = measurer.head(client, BARE, model)
        repeat_ok = repeat_ok and again.as_json() == heads[BARE].as_json()
        entry: dict[str, Any] = {}
        for configuration, head in heads.items():
            entry[configuration] = head.as_json()
            if configuration != BARE:
                entry[configuration]["delta_over_bare"] = delta(head, heads[BARE],
                                                                measurer.counter)
        by_model["default" if model is None else model] = entry
    return {"by_model": by_model, "repeat_identical": repeat_ok}


def hook_steps(client: str, project: Path) -> list[Action]:
    """Read a small file, run ``echo hi``, end (Codex reads with its shell)."""
    if client == CLAUDE_CODE:
        return [ToolCall("Read", {"file_path": str(project / SMALL_FILE)}),
                ToolCall("Bash", {"command": "echo hi"}), FinalText("Done.")]
    return [ToolCall("exec_command", {"cmd": f"cat {SMALL_FILE}"}),
            ToolCall("exec_command", {"cmd": "echo hi"}), FinalText("Done.")]


def measure_hook_texts(measurer: Measurer, client: str) -> dict[str, Any]:
    """Per configuration, the tokens that reached the model after each of the two
    calls, and the extra over the bare client."""
    model = HOOK_MODELS[client]
    steps = hook_steps(client, measurer.workspace.project)
    result: dict[str, Any] = {"model": model or "default",
                              "steps": ["read a 3-line file", "shell: echo hi"]}
    bare_steps: list[dict[str, Any]] = []
    for configuration in CONFIGURATIONS:
        run = measurer.session(client, configuration, steps, model=model,
                               prepare=_write_small_file, label="hooks")
        prompts = run.prompts
        if len(prompts) < 3:
            raise RuntimeError(f"{client} {configuration}: {len(prompts)} prompts, wanted 3")
        first = measure_head(prompts[0], PROMPT, measurer.counter, measurer.neutralise)
        per_step = []
        for previous, current in itertools.pairwise(prompts[:3]):
            parts = added_since(previous, current, measurer.counter, measurer.neutralise)
            per_step.append({"tokens": sum(p.size.tokens for p in parts),
                             "bytes": sum(p.size.bytes for p in parts),
                             "parts": [p.as_json() for p in parts]})
        entry: dict[str, Any] = {"first_request_head": first.total.as_json(), "after": per_step}
        if configuration == BARE:
            bare_steps = per_step
        else:
            entry["extra_over_bare"] = [
                {"tokens": s["tokens"] - b["tokens"], "bytes": s["bytes"] - b["bytes"]}
                for s, b in zip(per_step, bare_steps, strict=True)]
        result[configuration] = entry
    return result


def _write_small_file(workspace: Workspace) -> None:
    (workspace.project / SMALL_FILE).write_text(SMALL_TEXT, encoding="utf-8")


def measure(tools: Tools, root: Path, clients: Sequence[str] = CLIENTS, *,
            parts: Sequence[str] = ("heads", "hook_texts", "behaviour")) -> dict[str, Any]:
    """Everything, for ``clients``."""
    counter = default_counter()
    measurer = Measurer(tools, root, counter)
    data: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "measured_on": dt.datetime.now(dt.UTC).date().isoformat(),
        "machine": f"{platform.machine()} {platform.system()} {platform.release()}",
        "encoding": ENCODING_NAME, "prompt": PROMPT, "clients": {}}
    for client in clients:
        entry: dict[str, Any] = {"version": VERSIONS[client], "npm": NPM_PACKAGES[client],
                                 "trace_model": TRACE_MODELS[client]}
        if "heads" in parts:
            entry["heads"] = measure_heads(measurer, client)
        if "hook_texts" in parts:
            entry["hook_texts"] = measure_hook_texts(measurer, client)
        if "behaviour" in parts:
            entry["behaviour"] = behaviour.measure(measurer, client)
        data["clients"][client] = entry
    data["summary"] = summarise(data["clients"])
    data["neutralised"] = dict(sorted(measurer.neutralise.replaced.items()))
    data["runs"] = measurer.runs
    data["how"] = HOW
    return data


def summarise(clients: dict[str, Any]) -> dict[str, Any]:
    """The figures a client profile needs, picked out of the detail (what is missing
    from the detail is missing here)."""
    summary: dict[str, Any] = {}
    for client, entry in clients.items():
        out: dict[str, Any] = {}
        for model, heads in entry.get("heads", {}).get("by_model", {}).items():
            out.setdefault("head_tokens", {})[model] = {
                c: h["total"]["tokens"] for c, h in heads.items()}
            out.setdefault("delta_tokens", {})[model] = {
                c: h["delta_over_bare"]["total"]["tokens"] for c, h in heads.items()
                if "delta_over_bare" in h}
        hooks = entry.get("hook_texts", {})
        extras = {c: [s["tokens"] for s in e["extra_over_bare"]] for c, e in hooks.items()
                  if isinstance(e, dict) and "extra_over_bare" in e}
        if extras:
            out["hook_extra_tokens_after_read_and_shell"] = extras
        measured = entry.get("behaviour", {})
        if "read" in measured:
            read = measured["read"]
            over = read["prose_lines"]
            out["read"] = {"token_cap": (over.get("notice") or {}).get("stated", {}).get("cap"),
                           "size_limit_kb": read["large_file"].get("refused", {})
                           .get("size_limit_kb"),
                           "line_cap": None if read["short_lines"]["lines_returned"]
                           >= behaviour.READ_LINES else read["short_lines"]["lines_returned"],
                           "line_format": read["short_lines"]["line_format"],
                           "long_lines_cut": read["wide_line"]["longest_line_returned_chars"]
                           < behaviour.WIDE_LINE_CHARS,
                           "over_cap_result_tokens": over["result"]["tokens"]}
        if "bash" in measured:
            bash = measured["bash"]
            out["bash_persist"] = {"kept_chars_up_to": bash["largest_kept_chars"],
                                   "persisted_from_chars": bash["smallest_persisted_chars"],
                                   "preview_chars": bash["persisted"]["preview_chars"],
                                   "persisted_result_tokens":
                                       bash["persisted"]["result"]["tokens"]}
        for via, cuts in measured.get("shell", {}).items():
            prose = cuts["kinds"]["prose"]
            out.setdefault("shell_cut", {})[via] = {
                "model": cuts["model"],
                "whole_bytes_up_to": min(k["largest_whole"]["bytes"]
                                         for k in cuts["kinds"].values()),
                "cut_from_bytes": max(k["smallest_cut"]["bytes"]
                                      for k in cuts["kinds"].values()),
                "head_bytes": prose["cut"]["head"]["bytes"],
                "tail_bytes": prose["cut"]["tail"]["bytes"],
                "marker_unit": prose["cut"]["marker"]["unit"]}
        summary[client] = out
    return summary


HOW = {
    "tokens": f"{ENCODING_NAME} via osiris.core.tokens.default_counter(); bytes are UTF-8",
    "head": "first request of `claude -p hi --output-format json` / `codex exec --json hi` "
            "against the scripted model; system = Anthropic `system` blocks or Responses "
            "`instructions`; tools = compact JSON of the `tools` array (plus Codex's "
            "`additional_tools` input items); messages = every text block of the messages "
            "except the user's prompt; total = system + tools + messages (each counted "
            "alone)",
    "delta_over_bare": "configuration minus bare per component; lines_added counts the "
                       "lines (tool definitions pretty-printed) only in the configuration",
    "deferred": "deferred_tool_names: names listed one per line after the client's "
                "'deferred tools' sentence; mcp_tools_deferred: mcp__ names in the text "
                "and no MCP tool definition sent",
    "nondeterminism": "what differs between two runs of the same session, and its "
                      "stand-in before counting: the working directory, HOME, CODEX_HOME "
                      "and TMPDIR (fixed paths under one scratch root, then /scratch; the "
                      "checkout /repo); dates (Claude Code's date line, Codex's "
                      "<current_date>: 2026-01-01); Codex's chunk id and wall time on every "
                      "shell result; Claude Code's session id and random file id in a "
                      "persisted-output path; OSIRIS's task id in its hook text (a fixed id "
                      "of the same shape). Session, device and installation ids otherwise "
                      "appear only in request metadata, which is not counted. "
                      "`neutralised` counts the replacements; heads.repeat_identical is a "
                      "second bare run compared field by field",
    "usage": "the scripted model reports input tokens as cl100k counts of the prompt "
             "text, and answers count_tokens the same way (Claude Code's Read cap asks it)",
    "context-mode": "see osiris.harness.real_clients.configs; the client gets "
                    "npm_config_offline=true so context-mode's self-repair (npm install of "
                    "better-sqlite3) fails at once offline instead of waiting on the network",
}


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m osiris.harness.real_clients.capture --out FILE``."""
    parser = argparse.ArgumentParser(prog="python -m osiris.harness.real_clients.capture",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DATA_FILE)
    parser.add_argument("--repo", type=Path, default=Path.cwd(),
                        help="the checkout whose .tools/ holds the clients")
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT,
                        help="scratch directory for the runs (fixed: its path reaches "
                             "the prompts)")
    parser.add_argument("--client", action="append", choices=CLIENTS)
    parser.add_argument("--part", action="append",
                        choices=["heads", "hook_texts", "behaviour"])
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
    tools = Tools.of_repo(args.repo)
    clients = args.client or list(CLIENTS)
    missing = tools.missing(clients)
    if missing:
        sys.stderr.write(f"not installed: {', '.join(missing)} (run .ci/install-node-tools)\n")
        return 2
    data = measure(tools, args.root, clients,
                   parts=args.part or ("heads", "hook_texts", "behaviour"))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n",
                        encoding="utf-8")
    sys.stderr.write(f"wrote {args.out}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
