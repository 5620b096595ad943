"""The house rules of STYLE.md, checked on the source tree."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGE = REPO / "osiris"
# Who may import whom: cli/server/dashboard/clients/harness -> engine -> core and store.
FORBIDDEN = {
    "core": ("osiris.store", "osiris.server", "osiris.cli", "osiris.harness",
             "osiris.dashboard", "osiris.engine", "osiris.health", "osiris.config"),
    "store": ("osiris.server", "osiris.cli", "osiris.harness", "osiris.dashboard",
              "osiris.engine"),
    "engine": ("osiris.server", "osiris.cli", "osiris.harness", "osiris.dashboard"),
    "server": ("osiris.cli", "osiris.harness", "osiris.dashboard"),
    "clients": ("osiris.server", "osiris.cli", "osiris.harness", "osiris.dashboard"),
    "dashboard": ("osiris.server", "osiris.cli", "osiris.harness"),
}


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text("utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def _layer(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0].removesuffix(".py")


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(REPO)))
def test_imports_flow_one_way(path: Path) -> None:
    forbidden = FORBIDDEN.get(_layer(path), ())
    bad = sorted(name for name in _imports(path)
                 if any(name == f or name.startswith(f + ".") for f in forbidden))
    assert not bad, f"{path.relative_to(REPO)} imports {bad}"


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
