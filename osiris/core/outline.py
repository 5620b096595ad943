"""Outlines: the declarations or headings of a payload, with their line numbers.

Used by ``recall(op="outline")`` and by previews. Languages: Python, JavaScript,
TypeScript, Go, Rust, Markdown headings and JSON keys. Claude Code ``Read`` output
(``"   385→code"``) and ``cat -n`` output are understood: the number each line carries
is the file's line number. All patterns run in RE2 (linear time).
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import re2

from osiris.errors import InvalidInputError

RE2_MAX_MEM = 64 << 20
JSON_OUTLINE_DEPTH = 3
LANGUAGES = ("python", "javascript", "typescript", "go", "rust", "markdown", "json")
_ALIASES = {"py": "python", "js": "javascript", "jsx": "javascript", "ts": "typescript",
            "tsx": "typescript", "golang": "go", "rs": "rust", "md": "markdown"}
_EXTENSIONS = {".py": "python", ".pyi": "python", ".js": "javascript", ".jsx": "javascript",
               ".mjs": "javascript", ".cjs": "javascript", ".ts": "typescript",
               ".tsx": "typescript", ".mts": "typescript", ".cts": "typescript", ".go": "go",
               ".rs": "rust", ".md": "markdown", ".markdown": "markdown", ".json": "json"}


@dataclass(frozen=True)
class Symbol:
    """One outline entry: a declaration or heading and the line it starts on."""

    line: int
    kind: str
    name: str
    depth: int


def line_options(*, ignore_case: bool = False) -> Any:
    """RE2 options for line matching (grep semantics, bounded memory, quiet)."""
    options = re2.Options()
    options.log_errors = False
    options.max_mem = RE2_MAX_MEM
    options.case_sensitive = not ignore_case
    # grep semantics: a match never spans lines, so `\s` or `[^x]` stop at a newline.
    options.never_nl = True
    return options


def _re(pattern: str) -> Any:
    """One of our own line patterns (compiled once, at import)."""
    return re2.compile(pattern, line_options())


# --- outline --------------------------------------------------------------------------

def _strip_line_numbers(text: str) -> tuple[list[str], list[int]]:
    """Lines and their numbers, reading the numbers of ``cat -n`` or Claude Code ``Read``.

    ``Read`` prints ``"   385→code"``; when most lines look like that, the prefix is
    not code, and the number it carries is the file's line number (a read can start
    mid-file). Other lines (a trailing system reminder) are dropped.
    """
    lines = text.split("\n")
    numbered: list[tuple[int, str]] = []
    for line in lines:
        head_, sep, rest = line.partition("→")
        if not sep:
            head_, sep, rest = line.partition("\t")
            if len(head_) < 6:  # cat -n pads numbers to six columns; TSV data does not
                continue
        digits = head_.lstrip(" ")
        if sep and digits.isascii() and digits.isdigit():
            numbered.append((int(digits), rest))
    if 2 * len(numbered) > sum(1 for line in lines if line.strip()):
        return [t for _, t in numbered], [i for i, _ in numbered]
    return lines, list(range(1, len(lines) + 1))


def _by_indent(lines: list[str], patterns: Sequence[tuple[str, Any]]) -> list[Symbol]:
    """Declarations nested by indentation (Python, Rust): group 1 is the indent."""
    symbols: list[Symbol] = []
    open_indents: list[int] = []
    for i, line in enumerate(lines, 1):
        for kind, regex in patterns:
            match = regex.match(line)
            if match:
                indent = len(match.group(1).expandtabs(4))
                while open_indents and open_indents[-1] >= indent:
                    open_indents.pop()
                name = " ".join(match.group(2).split())
                symbols.append(Symbol(i, kind, name, len(open_indents)))
                open_indents.append(indent)
                break
    return symbols


_PYTHON = (("async def", _re(r"^(\s*)async\s+def\s+(\w+)")),
           ("def", _re(r"^(\s*)def\s+(\w+)")), ("class", _re(r"^(\s*)class\s+(\w+)")))
_RS_PUB = r"^(\s*)(?:pub(?:\s*\([^)]*\))?\s+)?"
_RUST = (
    ("fn", _re(_RS_PUB + r"(?:default\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?"
               r"(?:extern\s+(?:\"[^\"]*\"\s+)?)?fn\s+(\w+)")),
    ("struct", _re(_RS_PUB + r"struct\s+(\w+)")), ("enum", _re(_RS_PUB + r"enum\s+(\w+)")),
    ("trait", _re(_RS_PUB + r"(?:unsafe\s+)?(?:auto\s+)?trait\s+(\w+)")),
    ("impl", _re(r"^(\s*)(?:unsafe\s+)?impl(?:\s*<[^{]*?>)?\s+([^{]+?)\s*(?:where\b.*)?\{?\s*$")),
    ("mod", _re(_RS_PUB + r"mod\s+(\w+)")), ("macro_rules", _re(r"^(\s*)macro_rules!\s*(\w+)")))
_GO_FUNC = _re(r"^func\s*(?:\(\s*(?:\w+\s+)?(\*?)\s*([\w.]+)(?:\[[^\]]*\])?\s*\)\s*)?(\w+)")
_GO_TYPE = _re(r"^(?:type\s+|\s+)(\w+)(?:\[[^\]]*\])?\s+(?:=\s*)?(struct|interface|\S)")


def _outline_go(lines: list[str]) -> list[Symbol]:
    symbols: list[Symbol] = []
    in_type_block = False
    for i, line in enumerate(lines, 1):
        if in_type_block and line.startswith(")"):
            in_type_block = False
        elif line.startswith("type ("):
            in_type_block = True
        elif line.startswith("func"):
            match = _GO_FUNC.match(line)
            if match:
                star, receiver, name = match.group(1), match.group(2), match.group(3)
                if receiver:
                    name = f"(*{receiver}).{name}" if star else f"{receiver}.{name}"
                symbols.append(Symbol(i, "func", name, 0))
        elif line.startswith("type ") or (in_type_block and line[:1].isspace()):
            match = _GO_TYPE.match(line)
            if match:
                kind = match.group(2) if match.group(2) in ("struct", "interface") else "type"
                symbols.append(Symbol(i, kind, match.group(1), 0))
    return symbols


_JS_PREFIX = r"^\s*(?:export\s+)?(?:default\s+)?(?:declare\s+)?"
_JS_DECLARATIONS = (
    ("class", _re(_JS_PREFIX + r"(?:abstract\s+)?class\s+(\w+)")),
    ("function", _re(_JS_PREFIX + r"(?:async\s+)?function\s*\*?\s*(\w+)")),
    ("interface", _re(_JS_PREFIX + r"interface\s+(\w+)")),
    ("type", _re(_JS_PREFIX + r"type\s+(\w+)\s*(?:<.*>)?\s*=")),
    ("enum", _re(_JS_PREFIX + r"(?:const\s+)?enum\s+(\w+)")),
    ("function", _re(_JS_PREFIX + r"(?:const|let|var)\s+(\w+)\s*(?::[^=]*)?=\s*(?:async\s+)?"
                     r"(?:function\b|\([^)]*\)\s*(?::[^=]*)?=>|\w+\s*=>|\(\s*$|<)")))
_JS_TEST = _re(r"^\s*(describe|it|test)(?:\.\w+)?\(\s*(?:'([^']*)'|\"([^\"]*)\"|`([^`]*)`)")
_JS_MODIFIERS = r"^\s*(?:(?:public|private|protected|static|readonly|async|override|abstract" \
                r"|get|set)\s+)*"
_JS_METHODS = (_re(_JS_MODIFIERS + r"\*?(#?\w+)\s*(?:<[^>]*>)?\s*\("),
               _re(_JS_MODIFIERS + r"(#?\w+)\s*(?::[^=]*)?=\s*(?:async\s+)?"
                   r"(?:\([^)]*\)|\w+)\s*(?::[^=]*)?=>"))
_JS_NOT_METHODS = frozenset(("if", "for", "while", "switch", "catch", "with", "return",
                             "function", "super", "new", "await", "typeof", "delete"))
_JS_STRINGS = _re(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`(?:[^`\\]|\\.)*`|//.*")


def _js_symbol(code: str, container: str) -> tuple[str, str] | None:
    """(kind, name) declared on a line, given the kind of scope the line sits in."""
    if container in ("module", "describe"):
        test = _JS_TEST.match(code)
        if test:
            return test.group(1), next(g for g in test.groups()[1:] if g is not None)
    if container == "module":
        for kind, regex in _JS_DECLARATIONS:
            match = regex.match(code)
            if match:
                return kind, match.group(1)
    if container == "class":
        for regex in _JS_METHODS:
            match = regex.match(code)
            if match and match.group(1) not in _JS_NOT_METHODS:
                return "method", match.group(1)
    return None


def _outline_js(lines: list[str]) -> list[Symbol]:
    """Top-level declarations, class methods and describe/it blocks, scoped by braces."""
    symbols: list[Symbol] = []
    scopes: list[list[Any]] = []  # [kind, brace depth at declaration, body opened]
    depth, in_comment = 0, False
    for i, raw in enumerate(lines, 1):
        started_in_comment, code = in_comment, raw
        if in_comment:
            end = code.find("*/")
            in_comment = end < 0
            code = "" if in_comment else code[end + 2:]
        code = _JS_STRINGS.sub("", code)
        while "/*" in code:
            before, _, after = code.partition("/*")
            _, found, rest = after.partition("*/")
            code = before + (rest if found else "")
            in_comment = not found
        opened = [s for s in scopes if s[2]]
        # Names live in strings (describe('...')), so match the raw line; the stripped
        # one only says whether the line holds code at all.
        symbol = None
        if code.strip() and not started_in_comment:
            symbol = _js_symbol(raw, opened[-1][0] if opened else "module")
        if symbol:
            while scopes and not scopes[-1][2]:  # a body-less declaration ended
                scopes.pop()
            symbols.append(Symbol(i, symbol[0], symbol[1], len(opened)))
            scopes.append([symbol[0], depth, False])
        depth += code.count("{") - code.count("}")
        for scope in scopes:
            scope[2] = scope[2] or depth > scope[1]
        while scopes and scopes[-1][2] and depth <= scopes[-1][1]:
            scopes.pop()
        if scopes and not scopes[-1][2] and code.rstrip().endswith(";"):
            scopes.pop()
    return symbols


_MD_HEADING = _re(r"^ {0,3}(#{1,6})(?:\s+(.*?))?\s*$")


def _outline_markdown(lines: list[str]) -> list[Symbol]:
    symbols: list[Symbol] = []
    fence = ""
    for i, line in enumerate(lines, 1):
        stripped = line.lstrip()
        if stripped.startswith(("```", "~~~")):
            mark = stripped[:3]
            fence = "" if fence == mark else fence or mark
            continue
        match = None if fence else _MD_HEADING.match(line)
        if match:
            title = match.group(2) or ""
            # A closing run of # is decoration only after a space: "# C#" keeps its #.
            bare = title.rstrip("#")
            if bare != title and (not bare or bare[-1] in " \t"):
                title = bare.rstrip()
            level = len(match.group(1))
            symbols.append(Symbol(i, "#" * level, title, level - 1))
    return symbols


_JSON_TOKENS = _re(r"\"(?:[^\"\\]|\\.)*\"(\s*:)?|[{}\[\]]")
_JSON_KINDS = {"{": "object", "[": "array", '"': "string"}


def _outline_json(text: str) -> list[Symbol]:
    """Key paths up to depth 3, each at the line where it first appears."""
    symbols: list[Symbol] = []
    newlines = [i for i, ch in enumerate(text) if ch == "\n"]
    seen: set[str] = set()
    containers: list[tuple[str, int]] = []  # (path, keys in path); top is the innermost
    key: tuple[str, int] | None = None  # the last key seen and its depth: it names a child
    for match in _JSON_TOKENS.finditer(text):
        token = match.group()
        if token in ("{", "["):
            parent, depth = containers[-1] if containers else ("", 0)
            path = key[0] if key else f"{parent}[]" if containers else ""
            containers.append((path, key[1] if key else depth))
            key = None
        elif token in ("}", "]"):
            if containers:
                containers.pop()
            key = None
        elif match.group(1) is not None:
            parent, depth = containers[-1] if containers else ("", 0)
            try:
                name = str(json.loads(token[:token.rindex('"') + 1]))
            except ValueError:
                continue
            path = f"{parent}.{name}" if parent else name
            key = (path, depth + 1)
            if depth < JSON_OUTLINE_DEPTH and path not in seen:
                seen.add(path)
                after = text[match.end():match.end() + 40].lstrip()[:1]
                symbols.append(Symbol(bisect_right(newlines, match.start()) + 1,
                                      _JSON_KINDS.get(after, "value"), path, depth))
        else:
            key = None
    return symbols


def normalize_language(language: str) -> str:
    name = _ALIASES.get(language.lower(), language.lower())
    if name not in LANGUAGES:
        raise InvalidInputError(f"language {language!r} has no outline: pass one of "
                                + ", ".join(LANGUAGES))
    return name


def outline_symbols(text: str, language: str) -> list[Symbol]:
    """Symbols of ``text`` (numbered ``Read``/``cat -n`` output is understood)."""
    language = normalize_language(language)
    lines, numbers = _strip_line_numbers(text)
    if language == "json":
        symbols = _outline_json("\n".join(lines))
    elif language in ("javascript", "typescript"):
        symbols = _outline_js(lines)
    elif language == "python":
        symbols = _by_indent(lines, _PYTHON)
    elif language == "rust":
        symbols = _by_indent(lines, _RUST)
    elif language == "go":
        symbols = _outline_go(lines)
    else:
        symbols = _outline_markdown(lines)
    return [Symbol(numbers[s.line - 1], s.kind, s.name, s.depth) for s in symbols]


_SIGNS = {
    "python": _re(r"^(?:from\s+[\w.]+\s+import\s|import\s+[\w.]+\s*$|(?:async\s+)?def\s+\w+\s*\("
                  r"|class\s+\w+.*:\s*$|\s+self\.\w+|if\s+__name__\s*==)"),
    "go": _re(r"^(?:package\s+\w+\s*$|func\s|import\s+\(|\s*\w+\s*:=\s)"),
    "rust": _re(r"^\s*(?:pub\s+)?(?:fn\s+\w+|use\s+\w+::|impl\b|struct\s+\w+|let\s+mut\s"
                r"|#\[derive)"),
    "javascript": _re(r"^\s*(?:import\s.*\sfrom\s+['\"]|export\s|(?:const|let|var)\s+\w+\s*="
                      r"|(?:async\s+)?function\s*\w*\s*\(|module\.exports|describe\()"),
    "typescript": _re(r"^\s*(?:export\s+)?(?:interface\s+\w+|type\s+\w+\s*=|import\s+type\s"
                      r"|(?:public|private|protected)\s+\w+|.*\w+\s*:\s*(?:string|number|boolean"
                      r"|void|Promise<))"),
    "markdown": _re(r"^(?:#{1,6}\s+\S|\s*[-*]\s+\S|```|\|.*\|\s*$)"),
}

_SIGN_NAMES = tuple(_SIGNS)


def _sign_set() -> Any:
    """Every language's signs in one RE2 set: one call per line finds them all (the
    same answers as matching each pattern in turn, at a sixth of the calls)."""
    signs = re2.Set.MatchSet(line_options())
    for regex in _SIGNS.values():
        signs.Add(regex.pattern)
    signs.Compile()
    return signs


_SIGN_SET = _sign_set()


def detect_language(text: str, path: str | None = None) -> str | None:
    """The outline language of a payload: by ``path`` extension, else by its content."""
    if path:
        by_extension = _EXTENSIONS.get(PurePosixPath(path).suffix.lower())
        if by_extension:
            return by_extension
    lines, _ = _strip_line_numbers(text)
    body = "\n".join(lines).strip()
    if body[:1] in ("{", "["):
        try:
            json.loads(body)
        except (ValueError, RecursionError):
            pass
        else:
            return "json"
    scores = Counter(_SIGN_NAMES[i] for line in lines[:500]
                     for i in _SIGN_SET.Match(line) or ())
    if scores["typescript"]:  # TypeScript is JavaScript with types: pool the evidence
        scores["typescript"] += scores.pop("javascript", 0)
    best = max(scores.items(), key=lambda item: item[1], default=None)
    return best[0] if best and best[1] >= 2 else None


