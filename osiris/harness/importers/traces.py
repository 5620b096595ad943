"""Importers of real agent transcripts: the ordered (tool, args, output) steps.

Formats (datasets/traces/NORMALIZATION.md): Claude Code / Agent SDK stream-json
(and the session files Claude Code keeps under ``~/.claude/projects``), Codex CLI
``exec --json`` (and its rollout files), mini-swe-agent ``*.traj.json`` and
SWE-agent ``*.traj``. Every importer is tolerant: malformed lines, unknown event
types, results without a call and truncated documents are skipped and counted in
:attr:`Trace.skipped`, never raised.

Beside the steps each importer records which model response issued each call
(:attr:`TraceStep.response`), the task the agent was given (:attr:`Trace.task_prompt`)
and, for Claude Code, where the client compacted its history (:attr:`Trace.compactions`).

* **Responses.** Claude Code: the assistant message id (stream-json repeats it on
  every event of one response); where ids are masked or missing, assistant events
  with no user event between them are one response. Codex ``exec --json``: calls whose
  executions overlap (one starts before the other completes) are one response, any
  other call is a response of its own; rollout files: the model items between two
  tool outputs (or user messages) are one response. mini-swe-agent and SWE-agent: one
  call per response.
* **Task prompts.** mini-swe-agent: ``messages[1]``. SWE-agent: the user messages of
  ``history`` between the system prompt and the first assistant message, without the
  demonstration (``is_demo``; kept apart in :attr:`Trace.demonstration`). Claude Code
  session files: every user text message before the first assistant message (the
  prompt and the ``@``-file attachments Claude Code adds as meta messages). Codex
  rollouts: the first ``user_message`` event (else the first user message that is not
  environment context or user instructions). Stream-json and ``exec --json`` logs do
  not carry the prompt: a ``prompt.txt`` beside the log is read instead
  (:mod:`osiris.harness.importers.task_prompts`).
* **Masked ids.** Some logs mask every tool id as ``[REDACTED_TOKEN]``. Calls are kept
  in order (never keyed by id); a result pairs with its call by id when exactly one
  call carries that id and it has no output yet, else with the oldest call that has
  no output yet.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from osiris.harness.importers.claude_code import import_claude_code
from osiris.harness.importers.codex import import_codex
from osiris.harness.importers.records import (
    Compaction,
    Trace,
    TraceStep,
    UserPrompt,
    block_text,
)
from osiris.harness.importers.task_prompts import companion_task_prompt, is_companion

__all__ = ["FORMATS", "KNOWN_VERSIONS", "Compaction", "Trace", "TraceStep", "UserPrompt",
           "detect_format", "find_traces", "head_lines", "load_trace", "problem"]

FORMATS = ("claude-code", "codex-cli", "mini-swe-agent", "swe-agent")


_JSONL_MARKERS = (
    ("codex-cli", ('"thread.started"', '"item.', '"turn.started"', '"session_meta"',
                   '"response_item"')),
    ("claude-code", ('"system"', '"assistant"', '"user"', '"summary"', '"sessionId"')),
)
_RECORD_TYPES = {
    "codex-cli": frozenset({"thread.started", "turn.started", "turn.completed", "item.started",
                            "item.updated", "item.completed", "session_meta", "response_item",
                            "event_msg", "turn_context", "compacted", "world_state",
                            "token_usage_record"}),
    "claude-code": frozenset({"system", "assistant", "user", "result", "summary",
                              "file-history-snapshot", "queue-operation", "progress",
                              "custom-title", "agent-name", "last-prompt"}),
}
"""The record types of each JSONL format (its first records are enough to tell)."""
KNOWN_VERSIONS = {"claude-code": ("Claude Code", "1.0", "2.1"),
                  "codex-cli": ("Codex CLI", "0.114", "0.169")}
"""The client versions whose files the importers were built and tested on."""
_HEAD_LINES = 8


def head_lines(text: str, count: int = _HEAD_LINES) -> list[str]:
    """The first ``count`` non-empty lines of ``text``, whole (a Codex rollout's first
    record alone holds ~22,000 characters of instructions)."""
    lines: list[str] = []
    start = 0
    while len(lines) < count and start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        if text[start:end].strip():
            lines.append(text[start:end])
        start = end + 1
    return lines


def detect_format(path: Path, head: str) -> str | None:
    """Guess a transcript's format from its first lines (whole lines: see
    :func:`head_lines`)."""
    stripped = head.lstrip()
    if stripped.startswith("{"):
        # JSONL: the type of the first records says which client wrote it (a one-line
        # file too). A session file may open with bookkeeping lines (Claude Code's
        # file-history-snapshot, queue-operation), so look at the first few.
        for line in head_lines(stripped):
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                for fmt, types in _RECORD_TYPES.items():
                    if record.get("type") in types:
                        return fmt
    if stripped.startswith("{") and "\n" in stripped.rstrip("\n"):
        for line in stripped.split("\n")[:_HEAD_LINES]:
            for fmt, markers in _JSONL_MARKERS:
                if any(m in line for m in markers):
                    return fmt
    if '"trajectory_format"' in head or path.name.endswith(".traj.json"):
        return "mini-swe-agent"
    if '"trajectory"' in head or path.suffix == ".traj":
        return "swe-agent"
    if stripped.startswith("{") and '"messages"' in head:
        return "mini-swe-agent"
    return None


def load_trace(path: Path, fmt: str | None = None) -> Trace:
    """Import one transcript file (format detected when not given)."""
    raw = path.read_bytes()
    text = raw.decode("utf-8", errors="replace")
    fmt = fmt or detect_format(path, "\n".join(head_lines(text)) + "\n")
    importers = {"claude-code": import_claude_code, "codex-cli": import_codex,
                 "mini-swe-agent": _mini, "swe-agent": _swe}
    if fmt not in importers:
        trace = Trace(source=str(path), format="unknown")
        trace.skipped["unknown_format"] += 1
        trace.meta["seen"] = _what_it_opens_with(text)
        return trace
    trace = importers[fmt](path, text)
    if trace.task_prompt:
        trace.task_prompt_source = "log"
    else:
        cwd = trace.meta.get("cwd")
        found = companion_task_prompt(path, trace.format, cwd if isinstance(cwd, str) else None)
        if found is not None:
            trace.task_prompt, files = found
            trace.task_prompt_source = "prompt.txt"
            trace.companions = [str(f) for f in files]
    return trace


def _what_it_opens_with(text: str) -> str:
    """What the first line of a file no importer recognised holds, for the user."""
    lines = head_lines(text, 1)
    if not lines:
        return "the file is empty"
    first = lines[0].strip()
    try:
        record = json.loads(first)
    except ValueError:
        return f"line 1 is not JSON ({first[:60]!r})"
    if isinstance(record, dict):
        keys = ", ".join(sorted(record)[:8])
        kind = f" of type {record['type']!r}" if "type" in record else ""
        return f"line 1 is a JSON object{kind} (keys: {keys})"
    return f"line 1 is JSON but not an object ({type(record).__name__})"


def problem(trace: Trace) -> str | None:
    """Why ``trace`` gives nothing to replay, said so that its owner can act (the format
    expected, the record that failed, the version seen), or None when it has steps."""
    if trace.format == "unknown":
        return (f"not a transcript of a known format: {trace.meta.get('seen', '?')}; "
                "expected a Claude Code session file (~/.claude/projects/*/*.jsonl, records "
                "of type user/assistant) or stream-json log, a Codex rollout "
                "(~/.codex/sessions/**/rollout-*.jsonl, records of type session_meta/"
                "response_item) or exec --json log, a mini-swe-agent .traj.json or a "
                "SWE-agent .traj")
    if trace.steps:
        return None
    label, low, high = KNOWN_VERSIONS.get(trace.format, (trace.format, "", ""))
    version = trace.meta.get("client_version")
    parts = [f"no tool calls in this {label} transcript"]
    if version:
        parts.append(f"recorded by {label} {version}")
        if low and not _version_within(str(version), low, high):
            parts.append(f"outside the versions this importer knows ({low} to {high}): "
                         "its records may have changed")
    if trace.skipped:
        parts.append("records skipped: " + ", ".join(
            f"{reason} ×{count} (first at line {trace.first_skipped_line.get(reason, '?')})"
            for reason, count in sorted(trace.skipped.items())))
    elif not version:
        parts.append("every record was read; the session made no tool call")
    return "; ".join(parts)


def _version_within(version: str, low: str, high: str) -> bool:
    """Whether ``version`` (``2.1.81``) is within ``low``–``high`` by major.minor."""
    def key(text: str) -> tuple[int, ...]:
        return tuple(int(p) for p in re.findall(r"\d+", text)[:2])
    try:
        return key(low) <= key(version) <= key(high)
    except ValueError:
        return False


_BASH_BLOCK = re.compile(r"```bash\s*\n(.*?)```", re.DOTALL)
_RETURNCODE = re.compile(r"<returncode>(-?\d+)</returncode>")


def _load_document(path: Path, text: str, trace: Trace) -> dict[str, Any] | None:
    try:
        doc = json.loads(text)
    except ValueError:
        trace.skipped["truncated_or_malformed_document"] += 1
        return None
    if not isinstance(doc, dict):
        trace.skipped["truncated_or_malformed_document"] += 1
        return None
    return doc


def _mini(path: Path, text: str) -> Trace:
    trace = Trace(source=str(path), format="mini-swe-agent")
    doc = _load_document(path, text, trace)
    if doc is None:
        return trace
    info = doc["info"] if isinstance(doc.get("info"), dict) else {}
    trace.meta.update(end_state=info.get("exit_status"), client_version=info.get("mini_version"),
                      instance_id=doc.get("instance_id"))
    messages: list[Any] = doc["messages"] if isinstance(doc.get("messages"), list) else []
    if messages and isinstance(messages[0], dict) and messages[0].get("role") == "system":
        trace.system_prompt = str(messages[0].get("content", ""))
    if len(messages) > 1 and isinstance(messages[1], dict) and messages[1].get("role") == "user":
        trace.task_prompt = block_text(messages[1].get("content"))
    pending: tuple[str, dict[str, Any]] | None = None
    for message in messages[2:]:
        if not isinstance(message, dict):
            trace.skipped["malformed_message"] += 1
            continue
        role, content = message.get("role"), block_text(message.get("content"))
        if role == "assistant":
            blocks = _BASH_BLOCK.findall(content)
            prose = _BASH_BLOCK.sub("", content).strip()
            if prose:
                trace.texts.append((len(trace.steps), prose))
            if len(blocks) == 1:
                pending = ("bash", {"command": blocks[0].strip()})
            else:
                # The harness answers a malformed action with a format-error message; that
                # message enters the prompt like any output, so it is a step of its own.
                pending = ("format_error", {"actions": [b.strip() for b in blocks]})
        elif role in ("user", "tool"):
            if pending is None:
                continue
            code = _RETURNCODE.search(content)
            is_error = (code is not None and code.group(1) != "0") or "timed out" in content[:300]
            # One action per model response: the response index is the step's.
            trace.steps.append(TraceStep(len(trace.steps), pending[0], pending[1], content,
                                         is_error, response=len(trace.steps)))
            pending = None
    return trace


def _swe(path: Path, text: str) -> Trace:
    trace = Trace(source=str(path), format="swe-agent")
    doc = _load_document(path, text, trace)
    if doc is None:
        return trace
    info = doc["info"] if isinstance(doc.get("info"), dict) else {}
    trace.meta.update(end_state=info.get("exit_status"))
    history: list[Any] = doc["history"] if isinstance(doc.get("history"), list) else []
    if history and isinstance(history[0], dict) and history[0].get("role") == "system":
        trace.system_prompt = str(history[0].get("content", ""))
    _swe_task(trace, history)
    for entry in doc.get("trajectory") or []:
        if not isinstance(entry, dict) or "action" not in entry:
            trace.skipped["malformed_step"] += 1
            continue
        action = str(entry.get("action", "")).strip()
        thought = str(entry.get("thought") or "").strip()
        if thought:
            trace.texts.append((len(trace.steps), thought))
        tool = action.split(None, 1)[0] if action else "unknown"
        observation = str(entry.get("observation") or "")
        is_error = observation.lstrip().startswith(("Traceback", "Error", "Usage:"))
        trace.steps.append(TraceStep(len(trace.steps), tool, {"command": action}, observation,
                                     is_error, response=len(trace.steps)))
    return trace


def _swe_task(trace: Trace, history: list[Any]) -> None:
    """The user messages before the first action: the demonstration apart from the task."""
    task: list[str] = []
    demo: list[str] = []
    for message in history:
        if not isinstance(message, dict) or message.get("role") == "system":
            continue
        if message.get("role") != "user":
            break
        (demo if message.get("is_demo") else task).append(block_text(message.get("content")))
    trace.task_prompt = "\n\n".join(task)
    trace.demonstration = "\n\n".join(demo)


NOT_TRANSCRIPT_DIRS = frozenset({"licenses", "workspaces"})
"""Folders beside transcripts that hold none: licence texts and workspace tarballs
(``datasets/corpus/``)."""
_ARCHIVES = (".gz", ".tgz", ".zip", ".tar", ".xz", ".zst")


def find_traces(root: Path) -> list[Path]:
    """Transcript files under ``root`` (sorted; provenance files, the ``prompt.txt``
    beside a log and the documents it includes, licence texts and workspace archives
    are not transcripts)."""
    found = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.suffix in (".md", ".py") or path.name.startswith("."):
            continue
        relative = path.relative_to(root)
        if is_companion(relative) or path.name.lower().endswith(_ARCHIVES) \
                or NOT_TRANSCRIPT_DIRS & set(relative.parts[:-1]) or path.name == "MANIFEST.txt":
            continue
        found.append(path)
    return found


def real_text(repo_traces: Any, size_bytes: int) -> str:
    """At least ``size_bytes`` of real tool output, taken from the traces in order."""
    chunks: list[str] = []
    total = 0
    while total < size_bytes:
        for path in find_traces(repo_traces):
            for step in load_trace(path).steps:
                chunks.append(step.output)
                total += len(step.output.encode("utf-8"))
                if total >= size_bytes:
                    return "\n".join(chunks)
    return "\n".join(chunks)
