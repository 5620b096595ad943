"""Hashes and canonical forms shared by refs, seals, fingerprints and the journal."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from osiris.errors import InvalidInputError

REF_PREFIX = "mem://sha256:"
_REF_RE = re.compile(r"^mem://sha256:([0-9a-f]{64})$")
SHORT_REF_HEX = 16
"""Hex digits of a ref as OSIRIS shows it to a model (:func:`short_ref`): 64 bits, so two
refs of one home share a short form with odds of about n²/2⁶⁵ (1 in 37 million for a
million refs), and the recall that meets such a pair asks for the whole ref."""
_SHORT_REF_RE = re.compile(rf"^mem://sha256:([0-9a-f]{{{SHORT_REF_HEX},64}})$")
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


def short_ref(ref: str) -> str:
    """``ref`` as a model is shown it: its first :data:`SHORT_REF_HEX` hex digits. The
    whole ref is 64 digits, about 42 tokens, re-sent in every later request with each
    preview that names it; the short one is about 14, and recall takes it
    (:func:`ref_digest_prefix`)."""
    return REF_PREFIX + digest_of_ref(ref)[:SHORT_REF_HEX]


def ref_digest_prefix(ref: object) -> str:
    """The hex digits of a whole ref or of its short form (at least
    :data:`SHORT_REF_HEX` of them); InvalidInputError otherwise."""
    match = _SHORT_REF_RE.match(ref.strip()) if isinstance(ref, str) else None
    if match is None:
        raise InvalidInputError(
            f"{ref!r} is not a ref: expected 'mem://sha256:' followed by {SHORT_REF_HEX} to "
            "64 lowercase hex digits, as an OSIRIS answer or preview gave it")
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
