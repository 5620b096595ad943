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
