"""The house rules of STYLE.md, checked on the source tree."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

PACKAGE = REPO / "osiris"
# Who may import whom is import-linter's job: the contracts in pyproject.toml
# ([tool.importlinter]), run by `nox -s lint`.


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_only_environ_reads_the_environment() -> None:
    offenders = []
    for path in _modules():
        if path.name == "environ.py" and path.parent == PACKAGE:
            continue
        tree = ast.parse(path.read_text("utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in {"environ", "getenv"} \
                    and isinstance(node.value, ast.Name) and node.value.id == "os":
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not offenders


def test_library_code_never_prints() -> None:
    offenders = []
    for path in _modules():
        tree = ast.parse(path.read_text("utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id == "print":
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not offenders, "stdout belongs to JSON-RPC; log to stderr instead"


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (a module's, a class's, a
    function's) or stand alone as a statement (an attribute's docstring)."""
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}


def test_the_engine_knows_no_client_by_name() -> None:
    # The engine decides from a client adapter's traits (osiris.clients.adapters), never
    # from which client asks: a client's name in core, the store or the engine is a branch
    # on it. (import-linter keeps those packages from importing osiris.clients.)
    offenders = []
    for package in ("core", "engine", "store", "contracts"):
        for path in sorted((PACKAGE / package).rglob("*.py")):
            tree = ast.parse(path.read_text("utf-8"))
            docs = _docstrings(tree)
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                        and id(node) not in docs \
                        and node.value.lower() in {"claude-code", "codex", "codex-cli"}:
                    offenders.append(f"{path.relative_to(REPO)}:{node.lineno} {node.value!r}")
    assert not offenders
