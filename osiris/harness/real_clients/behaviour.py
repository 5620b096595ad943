"""How each real client cuts what its tools return, measured with scripted calls.

* Claude Code ``Read`` without offset/limit: a 6,000-line file of short lines (under the
  token cap), the same length of prose lines (over it), and a file with a 5,000-character
  line: lines returned, the line format, the cap, the notice the model gets.
* Claude Code ``Bash``: outputs of growing size (``head -n N`` of a file of fixed-length
  lines) bisected to the size where the output becomes ``<persisted-output>``, and the
  shape of what the model then gets.
* Codex ``exec_command``: the same bisection to where its output is cut, with three kinds
  of line (prose, digits, 3-byte UTF-8 characters) to tell characters, bytes and tokens
  apart; the head/tail split and the warning.

Every probe is one real session of the bare client (the configurations do not change
built-in tools). Bisection stops within :data:`RESOLUTION_CHARS`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from osiris.harness.real_clients.configs import BARE
from osiris.harness.real_clients.heads import added_texts, label_of, size_of
from osiris.harness.real_clients.model_script import FinalText, ToolCall, tool_results
from osiris.harness.real_clients.run import CLAUDE_CODE, Workspace

if TYPE_CHECKING:
    from osiris.harness.real_clients.measurer import Measurer

RESOLUTION_CHARS = 500
"""Bisection stops when the bracket is this narrow (the brief asks for 1,000)."""
READ_LINES = 6000
PROSE_READ_CHARS = 40
"""Line length of the over-cap Read file: 240,000 characters, under the 256 KB size
limit and far over the 25,000-token cap."""
WIDE_LINE_CHARS = 5000
_WORDS = ["the", "replay", "reads", "each", "output", "once", "and", "keeps", "what", "a",
          "real", "client", "would", "keep", "while", "the", "scripted", "model", "asks",
          "for", "lines", "it", "needs", "later"]
_LINE_NUMBER = re.compile(r"^\s*(\d+)([\t→])")


@dataclass(frozen=True)
class LineKind:
    """Lines of one fixed length, so ``head -n N`` gives exactly N × the sizes."""

    name: str
    make: Callable[[int], str]
    """Line ``i`` (1-based), newline included."""

    def text(self, lines: int) -> str:
        """The first ``lines`` lines."""
        return "".join(self.make(i) for i in range(1, lines + 1))

    @property
    def chars(self) -> int:
        """Characters per line (newline included)."""
        return len(self.make(1))

    @property
    def bytes(self) -> int:
        """UTF-8 bytes per line (newline included)."""
        return len(self.make(1).encode("utf-8"))


def _prose(i: int) -> str:
    words = " ".join(_WORDS[(i + k) % len(_WORDS)] for k in range(20))
    return f"{i:06d} {words}"[:99] + "\n"


PROSE = LineKind("prose", _prose)  # 100 ASCII characters
DIGITS = LineKind("digits", lambda i: f"{i * 7919 % 10**9:09d}\n")  # 10 characters
UTF8 = LineKind("utf8", lambda i: ("日本語の出力行" * 5)[:33] + "\n")  # 34 chars, 100 bytes
KINDS = {kind.name: kind for kind in (PROSE, DIGITS, UTF8)}
BIG_LINES = 5000
"""Lines in each file the shell probes cut from (500 KB of prose)."""


def _write_kind_files(workspace: Workspace) -> None:
    for kind in KINDS.values():
        (workspace.project / f"{kind.name}.txt").write_text(kind.text(BIG_LINES),
                                                            encoding="utf-8")


def bisect(probe: Callable[[int], bool], low: int, high: int, within: int) -> tuple[int, int]:
    """(largest n with ``probe(n)`` false, smallest with it true), ``low`` < ``high``
    being known false and true; stops when they are ``within`` apart."""
    while high - low > within:
        middle = (low + high) // 2
        if probe(middle):
            high = middle
        else:
            low = middle
    return low, high


def measure(measurer: Measurer, client: str) -> dict[str, Any]:
    """All behaviour figures of ``client``."""
    if client == CLAUDE_CODE:
        return {"read": claude_read(measurer), "bash": claude_bash(measurer)}
    return {"shell": codex_shell(measurer)}


# -- Claude Code ----------------------------------------------------------------------
def claude_read(measurer: Measurer) -> dict[str, Any]:
    """Reads without offset/limit: four files in one session, then the over-cap file
    again with ``count_tokens`` unavailable."""
    files = {"short_lines": "".join(f"{i}\n" for i in range(1, READ_LINES + 1)),
             "prose_lines": "".join(PROSE.make(i)[:PROSE_READ_CHARS - 1] + "\n"
                                    for i in range(1, READ_LINES + 1)),
             "large_file": PROSE.text(READ_LINES),
             "wide_line": "".join("w" * WIDE_LINE_CHARS + "\n" if i == 3 else f"line {i}\n"
                                  for i in range(1, 11))}

    def prepare(workspace: Workspace) -> None:
        for name, text in files.items():
            (workspace.project / f"{name}.txt").write_text(text, encoding="utf-8")

    project = measurer.workspace.project
    figures: dict[str, Any] = {}
    for label, names, count_tokens in (("read", list(files), True),
                                       ("read-no-count", ["prose_lines"], False)):
        calls = [ToolCall("Read", {"file_path": str(project / f"{name}.txt")})
                 for name in names]
        run = measurer.session(CLAUDE_CODE, BARE, [*calls, FinalText("Done.")],
                               prepare=prepare, label=label, count_tokens=count_tokens)
        prompts = run.prompts
        figures.setdefault("model", prompts[0].body.get("model"))
        for index, name in enumerate(names):
            added = added_texts(prompts[index], prompts[index + 1])
            result = next(a.text for a in added if a.tool_result)
            notices = [a.text for a in added if not a.tool_result]
            key = name if count_tokens else f"{name}_without_count_tokens"
            figures[key] = _read_figures(files[name], result, notices, measurer)
        figures.setdefault("count_tokens_requests", sum(
            1 for e in run.requests if e.path.endswith("/count_tokens")))
    return figures


def _read_figures(original: str, result: str, notices: list[str],
                  measurer: Measurer) -> dict[str, Any]:
    matches = [m for m in map(_LINE_NUMBER.match, result.split("\n")) if m]
    numbers = [int(m.group(1)) for m in matches]
    separator = matches[0].group(2) if matches else None
    padded = bool(matches) and matches[0].group(0).startswith(" ")
    longest = max((len(m.string) - m.end() for m in matches), default=0)
    notice: dict[str, Any] = {
        "parts": [{"label": label_of(text),
                   **size_of(measurer.neutralise(text), measurer.counter).as_json()}
                  for text in notices],
        "shape": "a system message after the result: the path, the lines shown of the "
                 "total, the file's tokens and the cap, the offset/limit of the next page"}
    stated = re.search(r"lines (\d+)-(\d+) of (\d+) total \((\d+) tokens, cap (\d+)\)",
                       "\n".join(notices))
    figures: dict[str, Any] = {
        "file_lines": original.count("\n"), "file_chars": len(original),
        "file_bytes": len(original.encode("utf-8")),
        "file_tokens": measurer.counter.count(original),
        "lines_returned": len(matches), "first_line": numbers[0] if numbers else None,
        "last_line": numbers[-1] if numbers else None,
        "line_format": None if separator is None else (
            ("{n:>6}" if padded else "{n}") + ("\\t" if separator == "\t" else "→") + "{line}"),
        "longest_line_returned_chars": longest,
        "result": size_of(measurer.neutralise(result), measurer.counter).as_json()
        | {"chars": len(result)},
        "notice": notice if notices else None}
    limit = re.search(r"maximum allowed size \((\d+)KB\)", result)
    if limit and not matches:
        figures["refused"] = {"size_limit_kb": int(limit.group(1)),
                              "shape": "an error result instead of content: the file's "
                                       "size, the limit, advice to page with offset/limit "
                                       "or search, or to call again with allow_large"}
    if stated:
        notice["stated"] = dict(zip(("first", "last", "total_lines", "tokens", "cap"),
                                               map(int, stated.groups()), strict=True))
    return figures


def claude_bash(measurer: Measurer) -> dict[str, Any]:
    """Bisect the size where a Bash output becomes ``<persisted-output>``."""
    kind = PROSE
    results: dict[int, str] = {}

    def persisted(lines: int) -> bool:
        result = _claude_bash_result(measurer, f"head -n {lines} {kind.name}.txt",
                                     f"bash-{lines}")
        results[lines] = result
        return result.lstrip().startswith("<persisted-output>")

    low, high = 10, BIG_LINES
    if persisted(low) or not persisted(high):
        raise RuntimeError("Claude Code's Bash persisted nothing in 1 KB..500 KB")
    low, high = bisect(persisted, low, high, max(1, RESOLUTION_CHARS // kind.chars))
    verbatim = results[low].rstrip("\n") == kind.text(low).rstrip("\n")
    preview = results[high]
    # The same sizes in digits: the verdicts repeat if the threshold is in characters.
    digits_low = max(1, low * kind.chars // DIGITS.chars)
    digits_high = -(-high * kind.chars // DIGITS.chars)
    same_in_digits = (not _persisted_digits(measurer, digits_low)
                      and _persisted_digits(measurer, digits_high))
    return {"kind": kind.name, "line_chars": kind.chars,
            "largest_kept_chars": low * kind.chars, "smallest_persisted_chars":
            high * kind.chars, "largest_kept_tokens": measurer.counter.count(kind.text(low)),
            "kept_verbatim": verbatim, "same_threshold_in_digit_lines": same_in_digits,
            "persisted": _persisted_shape(preview, kind.text(high), measurer)}


def _persisted_digits(measurer: Measurer, lines: int) -> bool:
    result = _claude_bash_result(measurer, f"head -n {lines} {DIGITS.name}.txt",
                                 f"bash-digits-{lines}")
    return result.lstrip().startswith("<persisted-output>")


def _claude_bash_result(measurer: Measurer, command: str, label: str) -> str:
    run = measurer.session(CLAUDE_CODE, BARE, [ToolCall("Bash", {"command": command}),
                                               FinalText("Done.")],
                           prepare=_write_kind_files, label=label)
    if len(run.prompts) < 2:
        raise RuntimeError(f"{label}: {run.describe()}")
    return tool_results(run.prompts[1])[-1]


def _persisted_shape(result: str, original: str, measurer: Measurer) -> dict[str, Any]:
    """Sizes and the shape of a ``<persisted-output>`` result (no vendor text kept)."""
    header, _, rest = result.partition("\n\n")
    preview = rest.split("\n", 1)[1] if "\n" in rest else ""
    preview = preview.removesuffix("</persisted-output>").rstrip("\n").removesuffix("...")
    path = re.search(r"(/\S+\.txt)", header)
    home = str(measurer.workspace.home)
    where = None
    if path:
        where = re.sub(r"[0-9a-f]{8}-[0-9a-f-]{27}", "<session-id>",
                       path.group(1).replace(home, "~"))
        where = re.sub(r"/[^/]+\.txt$", "/<id>.txt", where)
        where = where.replace(str(measurer.workspace.project).replace("/", "-"),
                              "<cwd with / as ->")
    return {"output_chars": len(original), "result_chars": len(result),
            "result": size_of(measurer.neutralise(result), measurer.counter).as_json(),
            "preview_chars": len(preview.rstrip("\n")),
            "preview_is_output_start": original.startswith(preview.rstrip("\n")),
            "saved_to": where,
            "shape": "<persisted-output> / a line giving the output's size and the file "
                     "it was saved to / a blank line / a line announcing the preview / "
                     "the output's first ~2 KB, cut at a line end / ... / "
                     "</persisted-output>"}


# -- Codex ----------------------------------------------------------------------------
CODE_MODE_SCRIPT = "const r = await tools.exec_command({{cmd: {cmd}}});\ntext(r.output);"
"""What the scripted model sends Codex's code-mode ``exec`` tool: run the command, show
its output (the default model gets no shell tool of its own)."""


def codex_shell(measurer: Measurer) -> dict[str, Any]:
    """Where Codex cuts shell output: with the traces' model (its ``exec_command``
    tool) and with the default model (``exec_command`` called from code mode)."""
    from osiris.harness.real_clients.measurer import TRACE_MODELS

    return {"exec_command": _codex_cuts(measurer, TRACE_MODELS["codex"], code_mode=False),
            "code_mode": _codex_cuts(measurer, None, code_mode=True)}


def _codex_cuts(measurer: Measurer, model: str | None, *, code_mode: bool) -> dict[str, Any]:
    """Bisect the cut for each kind of line."""
    figures: dict[str, Any] = {"model": model or "default",
                               "call": CODE_MODE_SCRIPT if code_mode else
                               '{"cmd": "head -n N FILE"}', "kinds": {}}
    for kind in KINDS.values():
        results: dict[int, str] = {}

        def truncated(lines: int, kind: LineKind = kind,
                      results: dict[int, str] = results) -> bool:
            result = _codex_result(measurer, f"head -n {lines} {kind.name}.txt", model,
                                   code_mode, f"shell-{kind.name}-{lines}")
            results[lines] = result
            return _codex_output(result) != kind.text(lines)

        low, high = 1, BIG_LINES
        if truncated(low) or not truncated(high):
            raise RuntimeError(f"Codex cut nothing, or everything, of {kind.name} lines")
        low, high = bisect(truncated, low, high, max(1, RESOLUTION_CHARS // kind.chars))
        kept = kind.text(low)
        figures["kinds"][kind.name] = {
            "line_chars": kind.chars, "line_bytes": kind.bytes,
            "largest_whole": {"lines": low, "chars": len(kept), "bytes": low * kind.bytes,
                              "tokens": measurer.counter.count(kept)},
            "smallest_cut": {"lines": high, "chars": high * kind.chars,
                             "bytes": high * kind.bytes},
            "cut": _codex_cut(results[BIG_LINES], kind.text(BIG_LINES), measurer)}
    return figures


def _codex_result(measurer: Measurer, command: str, model: str | None, code_mode: bool,
                  label: str) -> str:
    call = (ToolCall("exec", CODE_MODE_SCRIPT.format(cmd=json.dumps(command))) if code_mode
            else ToolCall("exec_command", {"cmd": command}))
    run = measurer.session("codex", BARE, [call, FinalText("Done.")], model=model,
                           prepare=_write_kind_files, label=label)
    if len(run.prompts) < 2:
        raise RuntimeError(f"{label}: {run.describe()}")
    if code_mode:  # the exec result: a status part, then each text() the script made
        outputs = [item.get("output") for item in run.prompts[1].body.get("input", [])
                   if isinstance(item, dict) and item.get("type") == "custom_tool_call_output"]
        output = outputs[-1] if outputs else None
        parts = [p.get("text", "") for p in output if isinstance(p, dict)] if isinstance(
            output, list) else [str(output)]
        return measurer.neutralise(parts[-1] if len(parts) > 1 else "")
    return measurer.neutralise(tool_results(run.prompts[1])[-1])


def _codex_output(result: str) -> str:
    """The command's output in a result (after the ``Output:`` line of the header)."""
    return result.split("\nOutput:\n", 1)[1] if "\nOutput:\n" in result else result


def _codex_cut(result: str, original: str, measurer: Measurer) -> dict[str, Any]:
    """Where a cut output keeps its head and tail, and what the model is told."""
    output = _codex_output(result)
    header, _, body = output.partition("\n\n")
    marker = re.search(r"…(\d+) (chars|tokens) truncated…", body)
    head, tail = (body[:marker.start()], body[marker.end():]) if marker else (body, "")
    stated = re.search(r"original token count: (\d+)", header)
    return {"original": {"chars": len(original), "bytes": len(original.encode("utf-8")),
                         "tokens": measurer.counter.count(original)},
            "stated_original_tokens": int(stated.group(1)) if stated else None,
            "bytes_over_4": -(-len(original.encode("utf-8")) // 4),
            "head": {"chars": len(head), "bytes": len(head.encode("utf-8")),
                     "is_output_start": original.startswith(head)},
            "tail": {"chars": len(tail), "bytes": len(tail.encode("utf-8")),
                     "is_output_end": original.endswith(tail)},
            "marker": {"unit": marker.group(2), "count": int(marker.group(1))} if marker
            else None,
            "result": size_of(result, measurer.counter).as_json() | {"chars": len(result)},
            "shape": "the usual header (chunk id, wall time, exit code, original token "
                     "count), then 'Output:', a warning line with the original token count, "
                     "a line with the total output lines, a blank line, the output's head, "
                     "'…N chars truncated…' and its tail"}
