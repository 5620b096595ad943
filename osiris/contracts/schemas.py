"""The tools' ``outputSchema``, written from the answer records, and the JSON schemas the
contract tests check answers and events with.

``python -m osiris.contracts.schemas --write`` writes ``output_schemas.json`` beside this
module (the server reads that file: no pydantic work at start-up); ``--check`` fails when
it differs from what the records give (``nox -s lint`` and a test run it).

The published schemas describe every field (the records' docstrings) and do not forbid
fields they do not list: a client that validates ``structuredContent`` (the MCP SDKs do)
must not start failing every call because a newer OSIRIS added a field. The tests are
stricter (:func:`strict`): no field may be missing from the records.
"""

from __future__ import annotations

import argparse
import ast
import copy
import inspect
import json
import sys
import textwrap
import typing
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter
from typing_extensions import is_typeddict

from osiris.contracts import (
    checkpoint,
    events,
    handoff,
    observe,
    plan,
    precheck,
    recall,
    shared,
    views,
)

SCHEMAS_FILE = Path(__file__).with_name("output_schemas.json")
VIEWS: dict[str, object] = {
    "manifest_view": views.ManifestView, "status_view": views.StatusView,
    "resume_view": views.ResumeView, "compacted": views.Compacted,
    "route_output": views.RoutedOutput, "operating_context": plan.PlanAnswer,
}
"""The engine's other answers (Python API and resources), by ``Engine`` method."""

ANSWERS: dict[str, object] = {
    "plan": plan.PlanAnswer, "precheck": precheck.PrecheckAnswer,
    "observe": observe.ObserveAnswer, "recall": recall.RecallAnswer,
    "checkpoint": checkpoint.CheckpointAnswer, "handoff": handoff.HandoffAnswer,
    "hook": precheck.HookAnswer,
}
"""Each tool's answer (``osiris_call``'s is the union of the six). Its ``outputSchema``
also admits :class:`~osiris.contracts.shared.ToolError` (but the hook's): a client may
check an error result's ``structuredContent`` too (the MCP Inspector does; the Python
SDK does not)."""


def _records(root: object) -> dict[str, type]:
    """The records ``root`` reaches (unions, fields, lists, bases), by class name: the
    names pydantic gives their ``$defs``."""
    found: dict[str, type] = {}

    def visit(tp: object) -> None:
        if is_typeddict(tp):
            assert isinstance(tp, type)
            if found.get(tp.__name__) is tp:
                return
            found[tp.__name__] = tp
            for hint in typing.get_type_hints(tp).values():
                visit(hint)
            return
        for arg in typing.get_args(tp):
            visit(arg)

    visit(root)
    return found


def _own_docs(record: type) -> dict[str, str]:
    """The docstrings written under the fields of ``record``'s own class body."""
    try:
        source = textwrap.dedent(inspect.getsource(record))
    except (OSError, TypeError):
        return {}
    body = ast.parse(source).body[0]
    docs: dict[str, str] = {}
    if not isinstance(body, ast.ClassDef):
        return docs
    for node, after in zip(body.body, body.body[1:], strict=False):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) \
                and isinstance(after.value.value, str):
            docs[node.target.id] = inspect.cleandoc(after.value.value)
    return docs


def field_docs(record: type) -> dict[str, str]:
    """Field -> docstring, inherited fields included (pydantic reads a class's own)."""
    docs: dict[str, str] = {}
    for base in getattr(record, "__orig_bases__", ()):
        if is_typeddict(base):
            docs.update(field_docs(base))
    docs.update(_own_docs(record))
    docs.update(getattr(record, "__keyword_field_docs__", {}))
    return docs


def _describe(schema: dict[str, Any], root: object) -> None:
    """Fill each record's field descriptions from the records' docstrings."""
    records = _records(root)
    for name, definition in schema.get("$defs", {}).items():
        record = records.get(name)
        if record is None:
            continue
        docs = field_docs(record)
        for field, spec in definition.get("properties", {}).items():
            if field in docs:
                spec["description"] = docs[field]
        if record.__doc__ and "description" not in definition:
            definition["description"] = inspect.cleandoc(record.__doc__)


def _clean(node: Any) -> Any:
    """The schema without pydantic's generated titles (noise for a reader)."""
    if isinstance(node, dict):
        return {k: _clean(v) for k, v in node.items()
                if not (k == "title" and isinstance(v, str))}
    if isinstance(node, list):
        return [_clean(v) for v in node]
    return node


DIALECT = "http://json-schema.org/draft-07/schema#"
"""The schemas' JSON Schema dialect. They use nothing newer than draft-07, and declaring it
matters: a client checks a schema against its dialect's metaschema before it validates
with it, once per tool and session, and the ``jsonschema`` package (the Python MCP SDK's
validator) takes 0.15-0.65 s for one of these against the 2020-12 metaschema (the default
without ``$schema``). Under draft-07, where ``$defs`` is not a keyword but ``$ref`` may
point anywhere in the document, the check takes 1-4 ms (the records are checked against
the metaschema one by one in the tests instead). Ajv, the TypeScript SDK's validator,
defaults to draft-07 too."""


def schema_of(record: object) -> dict[str, Any]:
    """The JSON schema of a record (or a union of records), rooted at an object whose
    records live in ``$defs``."""
    schema = TypeAdapter(list[record]).json_schema()  # type: ignore[valid-type]
    # A list's items are the record itself: its $ref (a record) or its anyOf (a union).
    root = schema["items"]
    root = {"anyOf": [root]} if "$ref" in root else root
    out = {"$schema": DIALECT, "type": "object", **root, "$defs": schema.get("$defs", {})}
    _describe(out, record)
    return dict(_clean(out))


def output_schemas() -> dict[str, dict[str, Any]]:
    """Tool key -> its ``outputSchema``."""
    error: Any = shared.ToolError
    # The hook tool never answers with an error result: a problem is a warning for the user.
    out = {key: schema_of(record if key == "hook" else record | error)
           for key, record in ANSWERS.items()}
    union = error
    for key in ("plan", "precheck", "observe", "recall", "checkpoint", "handoff"):
        union = ANSWERS[key] | union
    out["call"] = schema_of(union)
    return out


def strict(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every object closed: a field the records do not list fails."""
    closed = copy.deepcopy(schema)

    def close(node: Any) -> None:
        if isinstance(node, dict):
            if "properties" in node:
                node["additionalProperties"] = False
            for value in node.values():
                close(value)
        elif isinstance(node, list):
            for value in node:
                close(value)

    close(closed)
    return closed


def event_schemas() -> dict[str, dict[str, Any]]:
    """Event kind -> the JSON schema of its body."""
    return {kind: schema_of(record) for kind, record in events.EVENTS.items()}


def _text(schemas: dict[str, Any]) -> str:
    return json.dumps(schemas, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``--write`` the published schemas, or ``--check`` that they are current."""
    parser = argparse.ArgumentParser(prog="python -m osiris.contracts.schemas")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", action="store_true", help="write output_schemas.json")
    action.add_argument("--check", action="store_true", help="fail when it is stale")
    args = parser.parse_args(argv)
    text = _text(output_schemas())
    if args.write:
        SCHEMAS_FILE.write_text(text, encoding="utf-8")
        sys.stderr.write(f"wrote {SCHEMAS_FILE} ({len(text):,} characters)\n")
        return 0
    current = SCHEMAS_FILE.read_text(encoding="utf-8") if SCHEMAS_FILE.exists() else ""
    if current != text:
        sys.stderr.write(f"{SCHEMAS_FILE} is stale: run python -m osiris.contracts.schemas"
                         " --write\n")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
