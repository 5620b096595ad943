"""Record filters behind ``recall``: ``aggregate`` (counts by capture or JSON field)
and ``jsonl`` (filter, project and page JSON lines). Pure, linear, token-bounded.

Keys and records in an answer show control characters as escapes (JSON's ``\\u`` form
in records, so a shown record still parses to the stored value)."""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from osiris.core.display import escape_controls, escape_controls_json
from osiris.core.query import (
    MAX_N,
    MIN_MAX_TOKENS,
    QueryResult,
    _check_int,
    _check_start,
    _continue_note,
    _first_match_per_line,
    _fit,
    _Lines,
    compile_pattern,
)
from osiris.core.tokens import TokenCounter
from osiris.errors import InvalidInputError

JSONL_OPS = ("eq", "ne", "gt", "ge", "lt", "le", "contains", "regex", "exists")


# --- JSON records: aggregate, jsonl -----------------------------------------------------

class _Absent:
    """Marks a field a record does not have (JSON null is None)."""


_ABSENT = _Absent()
_NOT_JSON = _Absent()


def _dotted(value: object, what: str) -> tuple[str, ...]:
    if not isinstance(value, str) or not value or "" in value.split("."):
        raise InvalidInputError(f"{what} must be a dotted field path such as 'error.type', "
                                f"got {value!r}")
    return tuple(value.split("."))


def _field_paths(fields: object) -> list[tuple[str, ...]]:
    if not isinstance(fields, list | tuple) or not fields:
        raise InvalidInputError("fields must be a non-empty list of dotted paths, "
                                "e.g. ['level', 'error.type']")
    return [_dotted(f, "each field") for f in fields]


def _lookup(record: object, path: tuple[str, ...]) -> Any:
    for part in path:
        if isinstance(record, dict) and part in record:
            record = record[part]
        elif isinstance(record, list) and part.isdigit() and int(part) < len(record):
            record = record[int(part)]
        else:
            return _ABSENT
    return record


def _records(lines: _Lines, start: int) -> Iterator[tuple[int, Any]]:
    """(number, value) of each record from ``start``; ``_NOT_JSON`` for unparsable lines.

    A payload that is one JSON array is a list of records numbered from 1.
    """
    for i in range(start, lines.total + 1):
        raw = lines.text(i)
        if raw.strip():
            try:
                yield i, json.loads(raw)
            except (ValueError, RecursionError):
                yield i, _NOT_JSON


def _json_array(lines: _Lines) -> list[Any] | None:
    if lines.buf.lstrip()[:1] != b"[":
        return None
    try:  # a JSON-lines payload whose lines are arrays stops at "Extra data" at once
        value = json.loads(lines.buf.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, list) else None


def _scan(lines: _Lines, start: int) -> tuple[Iterator[tuple[int, Any]], int]:
    """Records from ``start`` and the highest record number."""
    array = _json_array(lines)
    if array is None:
        return _records(lines, _check_start(start, lines.total)), lines.total
    start = _check_start(start, len(array))
    return ((i + 1, array[i]) for i in range(start - 1, len(array))), len(array)


def _compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def aggregate(data: bytes | str, *, counter: TokenCounter, max_tokens: int,
              pattern: str | None = None, fields: Sequence[str] | None = None, n: int = 20,
              ignore_case: bool = False) -> QueryResult:
    """Count lines by key, ``"{count}\\t{key}"``, most frequent first, top ``n``.

    With ``pattern`` the key is its group named ``key``, else its first group that took
    part in the match, else the whole match; with ``fields`` each line is a JSON record
    keyed by those fields (non-JSON lines are skipped and counted).
    """
    max_tokens = _check_int("max_tokens", max_tokens, MIN_MAX_TOKENS)
    n = _check_int("n", n, 1, MAX_N)
    if (pattern is None) == (fields is None):
        raise InvalidInputError("aggregate needs exactly one of pattern= (an RE2 expression "
                                r"whose first group is the key, e.g. '(\w+Error)') or "
                                "fields= (dotted JSON paths, e.g. ['level'])")
    lines = _Lines.of(data)
    counts: Counter[str] = Counter()
    not_json = 0
    if pattern is not None:
        regex = compile_pattern(pattern, ignore_case=ignore_case)
        named = regex.groupindex.get("key")
        # The first group that took part: with (\w+Error)|(INFO) both branches count.
        order = [named] if named else range(1, regex.groups + 1)
        by_bytes: Counter[bytes] = Counter()
        for _, match in _first_match_per_line(regex, lines, 1):
            key = None
            for i in order:
                key = match[i]  # indexing skips the binding's slower group() path
                if key is not None:
                    break
            by_bytes[match[0] if key is None else key] += 1
        for raw, count in by_bytes.items():
            counts[raw.decode("utf-8", "replace")] += count
    else:
        paths = _field_paths(fields)
        records, _ = _scan(lines, 1)
        for _, record in records:
            if record is _NOT_JSON:
                not_json += 1
                continue
            values = [_lookup(record, p) for p in paths]
            counts["\t".join("(missing)" if v is _ABSENT else v if isinstance(v, str)
                             else _compact(v) for v in values)] += 1
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    rows = [f"{count}\t{escape_controls(key) or '(empty)'}" for key, count in ranked[:n]]
    total = sum(counts.values())

    def footer(k: int, cut: bool) -> str:
        note = f"total matching lines: {total}"
        if not_json:
            note += f"; {not_json} non-JSON lines skipped"
        if k < len(ranked) or cut:
            note += f"; … top {k} of {len(ranked)} groups shown (raise n or max_tokens)"
        return note

    fit = _fit(rows, counter=counter, max_tokens=max_tokens, footer=footer)
    return QueryResult(text=fit.text, truncated=fit.kept < len(ranked) or fit.cut, next=None,
                       lines_total=lines.total, returned_lines=0, matches=total,
                       tokens=fit.tokens)


@dataclass(frozen=True)
class _Condition:
    path: tuple[str, ...]
    op: str
    value: Any
    regex: Any = None

    def holds(self, record: object) -> bool:
        found = _lookup(record, self.path)
        if self.op == "exists":
            return (found is not _ABSENT) == bool(self.value)
        if found is _ABSENT:  # a record without the field differs from any value
            return self.op == "ne"
        if self.op == "regex":
            return self.regex.search(found if isinstance(found, str)
                                     else _compact(found)) is not None
        return _COMPARE[self.op](found, self.value)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _same(a: object, b: object) -> bool:
    # JSON true is not 1, although Python says True == 1.
    return isinstance(a, bool) == isinstance(b, bool) and a == b


def _contains(found: object, value: object) -> bool:
    if isinstance(found, str):
        return isinstance(value, str) and value in found
    if isinstance(found, list):
        return any(_same(item, value) for item in found)
    return isinstance(found, dict) and isinstance(value, str) and value in found


def _order(found: Any, value: Any, op: str) -> bool:
    if not ((_is_number(found) and _is_number(value))
            or (isinstance(found, str) and isinstance(value, str))):
        return False  # a number and a string have no order
    return bool({"gt": found > value, "ge": found >= value, "lt": found < value,
                 "le": found <= value}[op])


_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "eq": _same, "ne": lambda a, b: not _same(a, b), "contains": _contains,
    **{op: functools.partial(_order, op=op) for op in ("gt", "ge", "lt", "le")}}


def _conditions(where: object) -> list[_Condition]:
    if where is None:
        return []
    if isinstance(where, dict):
        return [_Condition(_dotted(k, "a where key"), "eq", v) for k, v in where.items()]
    if not isinstance(where, list | tuple):
        raise InvalidInputError("where must be a dict {'field': value} or a list of "
                                "{'field': 'a.b', 'op': 'eq', 'value': ...}")
    conditions = []
    for item in where:
        if not isinstance(item, dict) or "field" not in item \
                or set(item) - {"field", "op", "value"}:
            raise InvalidInputError(f"each where condition must be {{'field': 'a.b', 'op': "
                                    f"'eq', 'value': ...}}, got {item!r}")
        op = item.get("op", "eq")
        if op not in JSONL_OPS:
            raise InvalidInputError(f"where op {op!r} is unknown: use one of "
                                    + ", ".join(JSONL_OPS))
        if op != "exists" and "value" not in item:
            raise InvalidInputError(f"where op {op!r} on {item['field']!r} needs a 'value'")
        value = item.get("value", True)
        regex = None
        if op == "regex":
            regex = compile_pattern(value)
        elif op in ("gt", "ge", "lt", "le") and not (_is_number(value)
                                                      or isinstance(value, str)):
            raise InvalidInputError(f"where op {op!r} compares numbers or strings, "
                                    f"got {value!r}")
        conditions.append(_Condition(_dotted(item["field"], "a where field"), op, value, regex))
    return conditions


def jsonl(data: bytes | str, *, counter: TokenCounter, max_tokens: int,
          where: object = None, fields: object = None, n: int = 50,
          start: int = 1) -> QueryResult:
    """JSON records that satisfy every ``where`` condition, ``"{line}:{compact json}"``.

    ``where`` is ``{"field": value}`` (all equal) or a list of ``{"field": "a.b", "op":
    "gt", "value": 3}`` with op one of :data:`JSONL_OPS`; ``fields`` projects each record
    onto those dotted paths (absent ones are left out).
    Lines that are not JSON are skipped and counted in the footer.
    """
    max_tokens = _check_int("max_tokens", max_tokens, MIN_MAX_TOKENS)
    n = _check_int("n", n, 1, MAX_N)
    conditions = _conditions(where)
    paths = None if fields is None else _field_paths(fields)
    lines = _Lines.of(data)
    records, last = _scan(lines, start)
    start = _check_start(start, last)
    found: list[tuple[int, Any]] = []
    not_json: list[int] = []
    for number, record in records:
        if record is _NOT_JSON:
            not_json.append(number)
        elif all(c.holds(record) for c in conditions):
            found.append((number, record))
            if len(found) > n:  # one more than shown tells whether the answer is complete
                break
    shown = found[:n]
    rows = []
    for number, record in shown:
        projected = record if paths is None else {
            ".".join(p): v for p in paths if (v := _lookup(record, p)) is not _ABSENT}
        rows.append(f"{number}:{escape_controls_json(_compact(projected))}")

    def resume(k: int, cut: bool) -> int | None:
        if cut:
            return shown[0][0] + 1 if shown[0][0] < last else None
        return found[k][0] if k < len(found) else None

    def footer(k: int, cut: bool) -> str:
        at = resume(k, cut)
        skipped = sum(1 for i in not_json if at is None or i < at)
        notes = [] if found else [f"no matching records in lines {start}–{last}"]
        if at is not None:
            notes.append(_continue_note(at, "max_tokens" if k < len(shown) or cut
                                        else f"n={n}"))
        if skipped:
            notes.append(f"{skipped} non-JSON lines skipped")
        return "; ".join(notes)

    fit = _fit(rows, counter=counter, max_tokens=max_tokens, footer=footer)
    at = resume(fit.kept, fit.cut)
    return QueryResult(
        text=fit.text, truncated=at is not None or fit.cut, lines_total=lines.total,
        # Absent filters stay absent: a JSON null is not a list of fields to the schema.
        next=None if at is None else {"op": "jsonl", "n": n, "start": at} | {
            k: v for k, v in (("where", where), ("fields", fields)) if v is not None},
        returned_lines=fit.kept, matches=fit.kept, tokens=fit.tokens)

