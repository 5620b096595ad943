"""What Claude Code hands its hooks for a recorded call: ``tool_response`` in the shape
Claude Code gives each tool (Bash: stdout/stderr; Read: ``file.content`` without the
line-number gutter; Grep/Glob: filenames or content; Edit/Write: the file's path and
change; MCP tools: content blocks), rebuilt from the output a trace recorded.

Used by the benchmark's hook timings (:mod:`osiris.harness.bench.speed`) and by the tests'
payloads, so both hand OSIRIS what Claude Code would.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

_GUTTER = re.compile(r"^ *\d+→", re.MULTILINE)


def _read(args: Mapping[str, Any], out: str) -> Any:
    content = _GUTTER.sub("", out)
    lines = content.count("\n") + 1
    return {"type": "text", "file": {"filePath": args.get("file_path"), "content": content,
                                     "numLines": lines, "startLine": 1, "totalLines": lines}}


def _search(args: Mapping[str, Any], out: str) -> Any:
    if args.get("output_mode") == "content":
        return {"mode": "content", "numFiles": 0, "filenames": [], "content": out,
                "numLines": out.count("\n") + 1}
    names = [ln for ln in out.splitlines()
             if ln.strip() and not re.match(r"^(Found \d+ files?|No files found)", ln)]
    return {"mode": "files_with_matches", "filenames": names, "numFiles": len(names)}


_RESPONSES: dict[str, Callable[[Mapping[str, Any], str], Any]] = {
    "Bash": lambda _a, out: {"stdout": out, "stderr": "", "interrupted": False,
                             "isImage": False},
    "Read": _read,
    "Grep": _search,
    "Glob": _search,
    "Edit": lambda a, _o: {"filePath": a.get("file_path"), "oldString": a.get("old_string"),
                           "newString": a.get("new_string"), "originalFile": None,
                           "structuredPatch": [], "userModified": False,
                           "replaceAll": False},
    "Write": lambda a, _o: {"type": "create", "filePath": a.get("file_path"),
                            "content": a.get("content"), "structuredPatch": []},
}


def tool_response(tool: str, tool_input: Mapping[str, Any], output: str) -> Any:
    """``tool_response`` as Claude Code gives it for a call of ``tool`` that printed
    ``output``."""
    if tool.startswith("mcp__"):
        return [{"type": "text", "text": output}]
    build = _RESPONSES.get(tool)
    return build(tool_input, output) if build else {"result": output}
