"""What a shell call runs: its command, and the program family it belongs to.

Agents run most things through one shell tool (Claude Code ``Bash``, Codex
``shell``, mini-swe-agent ``bash``), so "the tool" says little. The *family* of a
command is its program and subcommand after ``cd``, environment assignments and
wrappers are skipped: ``cd repo && NODE_OPTIONS=x npx jest tests/a.ts`` is
``npx jest``; ``bash -lc 'git commit -m x'`` is ``git commit``.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

SHELL_TOOLS = frozenset({"Bash", "bash", "shell", "sh", "run_shell_command", "exec",
                         "local_shell", "terminal"})
_SEPARATORS = re.compile(r"&&|\|\||[;|\n]")
_PUNCTUATION = "();<>|&\n"
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SKIP = frozenset({"cd", "export", "source", ".", "set", "pushd", "popd", "env", "time",
                   "sudo", "nohup", "timeout"})
_WRAPPER = re.compile(r"^\s*(?:/bin/)?(?:ba|z)?sh\s+-l?c\s+(['\"])(.*)\1\s*$", re.DOTALL)


def shell_command(tool: str, args: dict[str, Any]) -> str | None:
    """The command line of a shell call (None for other tools)."""
    if tool not in SHELL_TOOLS:
        return None
    command = args.get("command") if "command" in args else args.get("cmd")
    if isinstance(command, list):
        command = " ".join(str(c) for c in command)
    if not isinstance(command, str):
        return None
    wrapped = _WRAPPER.match(command[:10_000])
    return wrapped.group(2) if wrapped else command


def _segments(command: str) -> list[list[str]]:
    """The simple commands of a command line, as words: split by :mod:`shlex` (quotes
    kept, so a quoted ``&&`` or ``;`` separates nothing), at ``&&``, ``||``, ``;``, ``|``,
    ``&``, parentheses and newlines, with redirections (``2>&1``, ``> out.txt``) left
    out. A line shlex cannot split (an unclosed quote, as in a heredoc's ``don't``) is
    split at the separators alone."""
    lexer = shlex.shlex(command, posix=False, punctuation_chars=_PUNCTUATION)
    lexer.whitespace, lexer.whitespace_split, lexer.commenters = " \t\r", True, ""
    try:
        tokens = list(lexer)
    except ValueError:
        return [segment.split() for segment in _SEPARATORS.split(command)]
    segments: list[list[str]] = [[]]
    target = False  # the next word is a redirection's file
    for token in tokens:
        if target:
            target = False
        elif not token.strip(_PUNCTUATION):  # an operator
            if "<" in token or ">" in token:
                target = True
                if segments[-1] and segments[-1][-1].isdigit():
                    segments[-1].pop()  # the descriptor of 2>&1
            elif segments[-1]:
                segments.append([])
        else:
            segments[-1].append(token)
    return segments


def command_family(command: str) -> str:
    """Program and subcommand of a command line (see the module docstring)."""
    for segment in _segments(command[:10_000]):
        words = [w for w in segment if not _ASSIGNMENT.match(w)]
        while words and words[0] in _SKIP:
            words = words[2:] if words[0] in ("cd", "pushd", "timeout") else words[1:]
        if not words:
            continue
        program = words[0].rsplit("/", 1)[-1]
        rest = words[1] if len(words) > 1 else ""
        if rest and not rest.startswith(("-", "<", ">", "'", '"', "$", "|")):
            return f"{program} {rest}"
        return program
    return ""


def tool_family(tool: str, args: dict[str, Any]) -> str:
    """``Bash:npx jest`` for a shell call, the tool name otherwise."""
    command = shell_command(tool, args)
    if command is None:
        return tool
    family = command_family(command)
    return f"{tool}:{family}" if family else tool


def command_tool_name(tool: str, args: dict[str, Any]) -> str | None:
    """``git.commit`` for a shell call running ``git commit …`` (None otherwise)."""
    command = shell_command(tool, args)
    if command is None:
        return None
    family = command_family(command)
    return family.replace(" ", ".") if family else None


_FILE_TOKEN = re.compile(r"[\w.~/-]*[\w-]\.[A-Za-z][\w]{0,7}\b")


def file_targets(args: dict[str, Any], limit: int = 20) -> tuple[str, ...]:
    """File names a call's arguments mention (base names: ``src/app.py`` → ``app.py``)."""
    found: list[str] = []
    for value in args.values():
        texts = value if isinstance(value, list) else [value]
        for text in texts:
            if not isinstance(text, str):
                continue
            for token in _FILE_TOKEN.findall(text[:20_000]):
                name = token.rstrip(".").rsplit("/", 1)[-1]
                if name and name not in found:
                    found.append(name)
                if len(found) >= limit:
                    return tuple(found)
    return tuple(found)


_PATH_KEYS = ("file_path", "path", "notebook_path", "filename")


def named_paths(args: dict[str, Any]) -> tuple[str, ...]:
    """Paths a call names explicitly (editor arguments, apply_patch changes)."""
    found = [args[k] for k in _PATH_KEYS if isinstance(args.get(k), str) and args[k]]
    changes = args.get("changes")
    if isinstance(changes, list):
        found += [c["path"] for c in changes if isinstance(c, dict)
                  and isinstance(c.get("path"), str)]
    return tuple(dict.fromkeys(found))
