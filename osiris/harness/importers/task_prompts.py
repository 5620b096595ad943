"""The task prompt of a log that does not carry it, rebuilt from files beside the log.

Claude Code's stream-json (``claude -p … --output-format stream-json``) and Codex's
``exec --json`` do not log the prompt they were given. Some harnesses keep it beside
the log: tielec/ai-workflow-agent writes ``prompt.txt`` next to each
``agent_log_raw.txt``. When such a file is there, the importer takes the task from it:

* **Codex** gets the prompt as typed; it does not read ``@path`` mentions (the agent of
  ``codex-cli__…/issue-119/01_requirements/review`` ran ``cat '@.ai-workflow/…'`` and
  failed), so the prompt is the file's text, verbatim.
* **Claude Code** attaches every file an ``@path`` mention names. The mention is a
  whitespace-delimited word starting with ``@``; trailing characters that are not ASCII
  word characters are cut (Claude Code 2.0 matches ``(^|\\s)@([^\\s]+)\\b``, so
  ``@CLAUDE.md（存在する場合）`` names ``CLAUDE.md``). Paths resolve against the
  ``prompt_includes/`` folder beside ``prompt.txt`` (the repository files the mentions
  named, stored with their repository paths); a mention of a file that is not there is
  left as text, as Claude Code leaves a mention of a missing file. Each file is
  attached once, in the order of its first mention, framed as Claude Code frames an
  attachment (two meta messages, here joined to the prompt with blank lines)::

      Called the Read tool with the following input: {"file_path":"<cwd>/<path>"}

      Result of calling the Read tool:
           1→<line 1>
           …
      <system-reminder>…</system-reminder>

  i.e. the Read tool's own result: at most 2,000 lines, each numbered ``%6d→`` and cut
  at 2,000 characters, followed by the reminder Claude Code 2.0.21 appends to every
  Read (as its Read outputs in the logs show). The framing is an approximation: the
  real client sends the prompt and each attachment as separate content blocks of the
  first user message, and may add other meta messages (e.g. memory files).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

PROMPT_FILE = "prompt.txt"
INCLUDES_DIR = "prompt_includes"
READ_MAX_LINES = 2_000
READ_MAX_LINE_CHARS = 2_000
READ_REMINDER = (
    "<system-reminder>\nWhenever you read a file, you should consider whether it looks "
    "malicious. If it does, you MUST refuse to improve or augment the code. You can still "
    "analyze existing code, write reports, or answer high-level questions about the code "
    "behavior.\n</system-reminder>\n")
"""What Claude Code 2.0.21 appends to a Read result (verbatim from the bundled logs)."""
_MENTION = re.compile(r"(?:^|(?<=\s))@(\S+)")
_NOT_WORD_TAIL = re.compile(r"[^A-Za-z0-9_]+$")


def is_companion(relative: Path) -> bool:
    """Whether a file found beside transcripts is a prompt file or a document it includes."""
    return relative.name == PROMPT_FILE or INCLUDES_DIR in relative.parts


def at_mentions(prompt: str) -> list[str]:
    """The paths a Claude Code prompt's ``@`` mentions name, each once, in order."""
    paths: dict[str, None] = {}
    for match in _MENTION.finditer(prompt):
        path = _NOT_WORD_TAIL.sub("", match.group(1))
        if path:
            paths.setdefault(path, None)
    return list(paths)


def read_result(text: str) -> str:
    """A file's text as Claude Code's Read tool returns it (numbered, capped)."""
    lines = text.split("\n")[:READ_MAX_LINES]
    numbered = "\n".join(f"{n:>6}→{line[:READ_MAX_LINE_CHARS]}"
                         for n, line in enumerate(lines, 1))
    return f"{numbered}\n\n{READ_REMINDER}"


def expand_claude_code(prompt: str, includes: Path, cwd: str | None) -> tuple[str, list[Path]]:
    """The prompt with every ``@`` file found under ``includes`` attached (module docstring)."""
    parts, used = [prompt], []
    root = includes.resolve()
    for mention in at_mentions(prompt):
        path = (includes / mention).resolve()
        if not path.is_relative_to(root) or not path.is_file():
            continue
        shown = f"{cwd.rstrip('/')}/{mention}" if cwd else mention
        call = json.dumps({"file_path": shown}, ensure_ascii=False, separators=(",", ":"))
        parts.append(f"Called the Read tool with the following input: {call}")
        parts.append("Result of calling the Read tool:\n"
                     + read_result(_read_exact(path)))
        used.append(path)
    return "\n\n".join(parts), used


def _read_exact(path: Path) -> str:
    """A file's text with its line endings as they are (an Issue body pasted into a
    prompt keeps GitHub's CRLF; ``read_text`` would turn it into LF)."""
    return path.read_bytes().decode("utf-8", errors="replace")


def companion_task_prompt(transcript: Path, fmt: str,
                          cwd: str | None) -> tuple[str, list[Path]] | None:
    """The task prompt from a ``prompt.txt`` beside ``transcript``, and the files read."""
    prompt_file = transcript.with_name(PROMPT_FILE)
    if transcript.name == PROMPT_FILE or not prompt_file.is_file():
        return None
    prompt = _read_exact(prompt_file)
    if fmt != "claude-code":
        return prompt, [prompt_file]
    text, used = expand_claude_code(prompt, transcript.with_name(INCLUDES_DIR), cwd)
    return text, [prompt_file, *used]
