"""Typed, scoped, content-addressed memory (SPEC §2): no opaque vector store.

An entry has a kind (fact, decision, lesson, preference, file, result), a scope
(task → project → agent → global) with the id it belongs to, a key and a JSON value.
Its id is the hash of all of that, so writing the same entry twice stores it once.
Lookups walk the scopes from the most specific to the most general.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from osiris.core.hashing import canonical_json, sha256_hex
from osiris.errors import InvalidInputError

KINDS = ("fact", "decision", "lesson", "preference", "file", "result")
SCOPES = ("task", "project", "agent", "global")
MAX_VALUE_CHARS = 8_000


@dataclass(frozen=True)
class MemoryEntry:
    """One memory entry."""

    scope: str
    scope_id: str
    kind: str
    key: str
    value: Any

    @property
    def entry_id(self) -> str:
        """Content address of the entry."""
        return sha256_hex(canonical_json([self.scope, self.scope_id, self.kind, self.key,
                                          canonical_json(self.value)]))


def parse_entry(raw: object, *, task_id: str, project_id: str | None,
                agent_id: str | None) -> MemoryEntry:
    """An entry to write, from ``{"kind", "key", "value", "scope"}``."""
    if not isinstance(raw, dict):
        raise InvalidInputError('a memory entry is an object like {"kind": "fact", "key": '
                                '"db", "value": "postgres 16", "scope": "project"}')
    kind = raw.get("kind")
    if kind not in KINDS:
        raise InvalidInputError(f"memory kind must be one of {', '.join(KINDS)}")
    scope = raw.get("scope", "task")
    if scope not in SCOPES:
        raise InvalidInputError(f"memory scope must be one of {', '.join(SCOPES)}")
    key = raw.get("key")
    if not isinstance(key, str) or not key.strip() or len(key) > 200:
        raise InvalidInputError("memory key must be a non-empty string (≤ 200 characters)")
    value = raw.get("value")
    if value is None or len(canonical_json(value)) > MAX_VALUE_CHARS:
        raise InvalidInputError(f"memory value is required and at most {MAX_VALUE_CHARS} "
                                "characters of JSON")
    scope_id = {"task": task_id, "project": project_id, "agent": agent_id,
                "global": ""}[scope]
    if scope_id is None:
        raise InvalidInputError(f"scope {scope!r} needs the task's {scope}_id: start the task "
                                f"with {scope}_id, or use scope 'task'")
    return MemoryEntry(scope, scope_id, kind, key.strip(), value)


def scope_chain(task_id: str, project_id: str | None,
                agent_id: str | None) -> list[tuple[str, str]]:
    """The (scope, id) pairs a task sees, most specific first."""
    chain = [("task", task_id)]
    if project_id is not None:
        chain.append(("project", project_id))
    if agent_id is not None:
        chain.append(("agent", agent_id))
    chain.append(("global", ""))
    return chain
