"""What a shell call runs: its command, and the program family it belongs to.

Agents run most things through one shell tool (Claude Code ``Bash``, Codex
``shell``, mini-swe-agent ``bash``), so "the tool" says little. The *family* of a
command is its program and subcommand after ``cd``, environment assignments and
wrappers are skipped: ``cd repo && NODE_OPTIONS=x npx jest tests/a.ts`` is
``npx jest``; ``bash -lc 'git commit -m x'`` is ``git commit``.

The *kind* of a command's output (:func:`output_kind`) says what an agent usually does
with it: a ``log`` (a test run, a build, a type check or lint, an install, git's log,
diff, show or status) is read for its verdict and its errors, which a preview keeps; any
other output (a file printed with ``cat``/``sed``/``nl``, a search, an API's JSON, a
program's own output) may be copied from line by line.
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


_RUNNERS = frozenset({"npm", "pnpm", "yarn", "bun", "deno", "npx", "bunx", "pnpx", "uv",
                      "uvx", "poetry", "pipenv", "hatch", "pdm", "rye"})
"""Programs that run another tool (``npx tsc``, ``uv run pytest``, ``bun run build``):
the kind is the run tool's, or the script's name."""
_LOG_PROGRAMS = frozenset({
    "pytest", "py.test", "tox", "nox", "jest", "vitest", "mocha", "ava", "playwright",
    "cypress", "make", "cmake", "ninja", "gradle", "gradlew", "mvn", "dotnet", "tsc",
    "webpack", "vite", "esbuild", "rollup", "turbo", "nx", "lerna", "ruff", "mypy",
    "pyright", "flake8", "pylint", "black", "isort", "eslint", "prettier", "biome",
    "golangci-lint", "shellcheck", "rubocop", "rspec", "phpunit", "pip", "pip3",
    "bundle", "composer", "apt-get", "apt", "brew", "ctest", "bazel", "swift", "xcodebuild",
})
_LOG_SUBCOMMANDS = {
    "git": frozenset({"log", "diff", "show", "status", "stash"}),
    "go": frozenset({"test", "build", "vet", "install", "generate", "mod"}),
    "cargo": frozenset({"test", "build", "check", "clippy", "fmt", "nextest", "install",
                        "bench", "fetch"}),
    "python": frozenset({"pytest", "unittest", "mypy", "pip", "build", "ruff", "tox",
                         "nox", "compileall", "pylint", "flake8", "black"}),
}
_LOG_SCRIPTS = re.compile(r"(?:^|[:._-])(test|tests|build|typecheck|type-check|tsc|lint|"
                          r"check|ci|compile|format|fmt|install|i|add|sync|e2e|coverage|"
                          r"verify|validate)(?:$|[:._-])")
"""Package-manager subcommands and ``run`` script names that are logs (``npm ci``,
``bun run typecheck``, ``pnpm test:unit``)."""


def output_kind(command: str) -> str:
    """``"log"`` when the command's output is a log (module docstring), else ``"other"``.
    The first simple command decides (after ``cd``, assignments and wrappers): in
    ``npm test 2>&1 | tail -40`` the output is still the test run's; ``bash -lc '…'``
    is what it runs."""
    wrapped = _WRAPPER.match(command[:10_000])
    for segment in _segments(wrapped.group(2) if wrapped else command[:10_000]):
        words = [w for w in segment if not _ASSIGNMENT.match(w)]
        while words and words[0] in _SKIP:
            words = words[2:] if words[0] in ("cd", "pushd", "timeout") else words[1:]
        if not words:
            continue
        return "log" if _is_log(words) else "other"
    return "other"


def _is_log(words: list[str]) -> bool:
    program = words[0].rsplit("/", 1)[-1].strip("'\"")
    rest = [w.strip("'\"") for w in words[1:] if not w.startswith("-")]
    if program.startswith("python"):  # python3 -m pytest; a script's output is its own
        after = words[words.index("-m") + 1:] if "-m" in words else []
        return bool(after) and after[0].strip("'\"") in _LOG_SUBCOMMANDS["python"]
    if program in _LOG_SUBCOMMANDS:
        return bool(rest) and rest[0] in _LOG_SUBCOMMANDS[program]
    if program in _RUNNERS and rest:
        # ``bun run build``, ``npx tsc``; ``bun --filter @scope/pkg build``: an option's
        # value comes first
        tools = rest[1:2] if rest[0] in ("run", "exec", "x", "dlx") else rest[:2]
        return any(t.rsplit("/", 1)[-1] in _LOG_PROGRAMS or _LOG_SCRIPTS.search(t)
                   for t in tools if not t.startswith("@"))
    return program in _LOG_PROGRAMS


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
