"""Every journal event and every answer of a real session is its record, field for field.

The session (:mod:`tests.contracts.session`) goes through the real entry points: an MCP
client on the server, ``osiris hook`` and ``osiris run`` as processes. The MCP client
(the SDK's) already checks each answer against the published ``outputSchema``; here each
answer and each event body is also checked against the closed form of its schema
(:func:`osiris.contracts.schemas.strict`): a field the engine sends that the records do
not list fails, as does a missing or mistyped one.
"""

from __future__ import annotations

import json
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from osiris.contracts import events, schemas
from osiris.server.definitions import OUTPUT_SCHEMAS
from tests.contracts.session import Recorded, record_session


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    root = tmp_path_factory.mktemp("contracts")
    return record_session(root / "home", root / "project")


def _problems(schema: dict[str, Any], value: Any) -> list[str]:
    validator = jsonschema.validators.validator_for(schema)(schemas.strict(schema))
    best = jsonschema.exceptions.best_match(validator.iter_errors(value))
    return [] if best is None else [f"{list(best.absolute_path)}: {best.message[:300]}"]


def _variants(schema: dict[str, Any], value: Any) -> list[str]:
    """The names of the union's members that ``value`` is (closed form)."""
    names = []
    for option in schema.get("anyOf", []):
        name = option["$ref"].rsplit("/", 1)[-1]
        single = {**schema, "anyOf": [option]}
        if not _problems(single, value):
            names.append(name)
    return names


def _error_codes() -> set[str]:
    """The ``code`` of every :class:`~osiris.errors.OsirisError` subclass."""
    import osiris.owner_wire  # noqa: F401  (its errors are subclasses too)
    from osiris.errors import OsirisError

    found, todo = set(), [OsirisError]
    while todo:
        cls = todo.pop()
        found.add(cls.code)
        todo += cls.__subclasses__()
    return found


def test_every_event_of_the_session_is_its_kinds_record(session: Recorded) -> None:
    by_kind = schemas.event_schemas()
    wrong = []
    for kind, body in session.events:
        assert kind in events.EVENTS, f"{kind} is journaled but not in the catalogue"
        assert body.get("v") == events.VERSIONS[kind], (kind, body.get("v"))
        wrong += [f"{kind}: {p}" for p in _problems(by_kind[kind], body)]
    assert not wrong, "\n".join(wrong)
    # Every kind of the catalogue was seen: none is described but never written.
    assert set(events.EVENTS) == {kind for kind, _ in session.events}


def test_every_answer_of_the_session_is_its_tools_record(session: Recorded) -> None:
    errors = [a.tool for a in session.answers if a.is_error]
    assert sorted(errors) == sorted(set(OUTPUT_SCHEMAS) - {"hook", "call"})
    # An error answer is a known code and a message a user can read, nothing else.
    codes = _error_codes()
    bad = [(a.tool, a.structured) for a in session.answers if a.is_error
           and not (set(a.structured) == {"error", "message"}
                    and a.structured["error"] in codes
                    and isinstance(a.structured["message"], str)
                    and len(a.structured["message"].strip()) > 10)]
    assert not bad, bad
    wrong = []
    seen: dict[str, set[str]] = {}
    for answer in session.answers:
        schema = OUTPUT_SCHEMAS[answer.tool]
        wrong += [f"{answer.tool} {answer.args}: {p}"
                  for p in _problems(schema, answer.structured)]
        seen.setdefault(answer.tool, set()).update(_variants(schema, answer.structured))
    assert not wrong, "\n".join(wrong)
    # Every variant of every answer was seen.
    for tool, schema in OUTPUT_SCHEMAS.items():
        if tool == "call":
            continue
        variants = {o["$ref"].rsplit("/", 1)[-1] for o in schema.get("anyOf", [])}
        missing = variants - seen.get(tool, set())
        assert not missing, f"{tool}: no answer of the session was {sorted(missing)}"


def test_the_engines_other_answers_are_their_records(session: Recorded) -> None:
    assert set(session.views) == set(schemas.VIEWS)
    wrong = [f"{name}: {p}" for name, record in schemas.VIEWS.items()
             for p in _problems(schemas.schema_of(record), session.views[name])]
    assert not wrong, "\n".join(wrong)


def test_a_hooks_observe_through_the_python_api_is_its_record(session: Recorded) -> None:
    """What a client hook's observe adds (advice, an output's or a read's replacement)
    is part of ``osiris_observe``'s record too."""
    schema = OUTPUT_SCHEMAS["observe"]
    wrong = [p for answer in session.hooked for p in _problems(schema, answer)]
    assert not wrong, "\n".join(wrong)
    fields = {f for answer in session.hooked for f in answer}
    assert {"hook", "replaced", "replaced_read"} <= fields, fields


def test_the_published_schemas_are_the_records() -> None:
    done = subprocess.run([sys.executable, "-m", "osiris.contracts.schemas", "--check"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(schemas.SCHEMAS_FILE.read_text("utf-8")) == OUTPUT_SCHEMAS
    assert set(OUTPUT_SCHEMAS) == {"plan", "precheck", "observe", "recall", "checkpoint",
                                   "handoff", "hook", "call"}
    for schema in OUTPUT_SCHEMAS.values():
        assert schema["type"] == "object"  # MCP: an outputSchema describes an object
        # Declared draft-07: checking it costs a client ms, not 0.5 s (schemas.DIALECT).
        assert schema["$schema"] == schemas.DIALECT
        validator = jsonschema.validators.validator_for(schema)
        assert validator is jsonschema.Draft7Validator
        validator.check_schema(schema)
        for record in schema["$defs"].values():  # not a draft-07 keyword: one by one
            validator.check_schema(record)


def _fields(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for name, record in schema.get("$defs", {}).items():
        out += [(name, field, spec) for field, spec in record.get("properties", {}).items()]
    out += [("(root)", field, spec) for field, spec in schema.get("properties", {}).items()]
    return out


def test_every_field_of_every_record_says_what_it_means() -> None:
    undocumented = set()
    for schema in [*OUTPUT_SCHEMAS.values(), *schemas.event_schemas().values(),
                   *map(schemas.schema_of, schemas.VIEWS.values())]:
        undocumented |= {f"{record}.{field}" for record, field, spec in _fields(schema)
                         if not spec.get("description")}
    assert not undocumented, sorted(undocumented)


def test_the_kind_literal_is_the_catalogue() -> None:
    assert set(typing.get_args(events.EventKind)) == set(events.EVENTS) == set(events.VERSIONS)


def test_a_kind_outside_the_catalogue_is_refused(tmp_path: Path) -> None:
    from osiris.config import Settings
    from osiris.engine.context import journal
    from osiris.store.state import Store

    store = Store(Settings(home=tmp_path / "home"))
    try:
        with pytest.raises(ValueError, match="not in the event catalogue"), \
                store.transaction("test") as tx:
            journal(tx, "task.stat", {}, task_id=None)
        with store.read() as con:
            assert con.execute("SELECT count(*) FROM events").fetchone() == (0,)
    finally:
        store.close()
