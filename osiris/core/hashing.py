"""Hashes and canonical forms shared by refs, seals, fingerprints and the journal."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from osiris.errors import InvalidInputError

REF_PREFIX = "mem://sha256:"
_REF_RE = re.compile(r"^mem://sha256:([0-9a-f]{64})$")
GENESIS_HASH = "0" * 64
"""The ``prev_hash`` of the first journal event."""


def sha256_hex(data: bytes | str) -> str:
    """Hex SHA-256 of bytes, or of a string encoded as UTF-8."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no insignificant whitespace: equal values, equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=_reject)


def _reject(value: object) -> Any:
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


def ref_for_digest(digest: str) -> str:
    """``mem://sha256:<hex>`` for a hex digest."""
    return REF_PREFIX + digest


def digest_of_ref(ref: str) -> str:
    """The hex digest inside a ref; InvalidInputError when the ref is malformed."""
    match = _REF_RE.match(ref.strip()) if isinstance(ref, str) else None
    if match is None:
        raise InvalidInputError(
            f"{ref!r} is not a ref: expected 'mem://sha256:' followed by 64 lowercase hex digits"
        )
    return match.group(1)


JOURNAL_HASH_TAG = "osiris-journal/2"
"""Leads the material of every chain-v2 hash (no v1 material can start with it)."""


def _field(value: str | None) -> str:
    # A netstring: the UTF-8 byte length, ':', the text, ','. No separator inside a field
    # can be mistaken for the end of one, and NULL ('~') differs from '' ('0:,').
    if value is None:
        return "~"
    return f"{len(value.encode('utf-8'))}:{value},"


def journal_event_hash(seq: int, ts_us: int, task_id: str | None, actor: str, kind: str,
                       body: str, prev_hash: str) -> str:
    """The hash that chains journal events (chain version 2, every event written now).

    The material is :data:`JOURNAL_HASH_TAG` followed by each field as a netstring
    (``<UTF-8 byte length>:<text>,``, NULL as ``~``): an injective encoding, so no two
    different events share it, whatever their fields contain. The same expression is
    evaluated in SQL by the journal verifier (``osiris.store.journal``), so keep the two
    in step. Byte lengths rather than JSON: DuckDB and Python escape control characters
    differently in JSON (``\\u001B`` against ``\\u001b``), lengths they count alike.
    """
    fields = (str(seq), str(ts_us), task_id, actor, kind, prev_hash, body)
    return sha256_hex(JOURNAL_HASH_TAG + "".join(_field(f) for f in fields))


def journal_event_hash_v1(seq: int, ts_us: int, task_id: str | None, actor: str, kind: str,
                          body: str, prev_hash: str) -> str:
    """Chain version 1, which events written before migration ``0009_journal_hash_v2``
    carry: fields joined with ``|`` (ambiguous: ``a|b`` + ``c`` joins like ``a`` +
    ``b|c``, NULL like ``''``). Kept only so that those homes still verify."""
    material = "|".join((str(seq), str(ts_us), task_id or "", actor, kind, prev_hash, body))
    return sha256_hex(material)
