"""``recall``: expand a ref server-side, only as far as the agent asks."""

from __future__ import annotations

import mimetypes
from typing import Any

from osiris.core import query, records
from osiris.core.hashing import digest_of_ref
from osiris.engine.context import EngineContext
from osiris.errors import InvalidInputError
from osiris.store import statements
from osiris.store.state import Tx

RECALL_OPS = ("grep", "range", "head", "tail", "outline", "aggregate", "jsonl")
MAX_RECALL_TOKENS = 25_000


def _int(name: str, value: object, default: int | None, minimum: int = 0) -> int | None:
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise InvalidInputError(f"{name} must be an integer ≥ {minimum}")
    return value


def recall(ctx: EngineContext, tx: Tx, *, ref: object, op: str, pattern: object = None,
           start: object = None, end: object = None, n: object = None,
           context: object = None, fields: object = None, where: object = None,
           max_tokens: object = None, ignore_case: bool = False,
           language: str | None = None) -> dict[str, Any]:
    """Run one recall op on a verified blob."""
    if not isinstance(ref, str):
        raise InvalidInputError("ref is required: the mem://sha256:… ref an answer gave you")
    digest_of_ref(ref)
    if op not in RECALL_OPS:
        raise InvalidInputError(f"unknown recall op {op!r}: use one of " + ", ".join(RECALL_OPS))
    bound = _int("max_tokens", max_tokens, ctx.settings.recall_max_tokens,
                 query.MIN_MAX_TOKENS)
    assert bound is not None
    bound = min(bound, MAX_RECALL_TOKENS)
    data = ctx.store.refs.get(ref)  # verified; NotFoundError / IntegrityError otherwise
    row = tx.con.execute(statements.REF_MEDIA_TYPE, [ref]).fetchone()
    extension = mimetypes.guess_extension(row[0]) if row else None
    path_hint = f"payload{extension}" if extension and extension != ".txt" else None
    counter = ctx.counter
    if op == "grep":
        if not isinstance(pattern, str):
            raise InvalidInputError("recall(op='grep') needs pattern: a regular expression")
        result = query.grep(data, pattern, counter=counter, max_tokens=bound,
                            context=_int("context", context, 0) or 0,
                            n=_int("n", n, 50, 1) or 50, ignore_case=bool(ignore_case),
                            start=_int("start", start, 1, 1) or 1)
    elif op == "range":
        result = query.range_lines(data, start=_int("start", start, 1, 1) or 1,
                                   end=_int("end", end, None, 1), counter=counter,
                                   max_tokens=bound)
    elif op in ("head", "tail"):
        fn = query.head if op == "head" else query.tail
        result = fn(data, n=_int("n", n, 20, 1) or 20, counter=counter, max_tokens=bound)
    elif op == "outline":
        result = query.outline(data, counter=counter, max_tokens=bound, language=language,
                               path=path_hint, start=_int("start", start, 1, 1) or 1)
    elif op == "aggregate":
        result = records.aggregate(data, counter=counter, max_tokens=bound,
                                   pattern=pattern if isinstance(pattern, str) else None,
                                   fields=fields if isinstance(fields, list) else None,
                                   n=_int("n", n, 20, 1) or 20,
                                   ignore_case=bool(ignore_case))
    else:
        result = records.jsonl(data, counter=counter, max_tokens=bound, where=where,
                               fields=fields, n=_int("n", n, 50, 1) or 50,
                               start=_int("start", start, 1, 1) or 1)
    following = result.next
    if following is not None and max_tokens is not None:  # pages keep the size asked for
        following = {**following, "max_tokens": bound}
    answer: dict[str, Any] = {"ref": ref, "op": op, "text": result.text,
                              "truncated": result.truncated, "next": following,
                              "tokens": result.tokens, "lines_total": result.lines_total}
    if result.matches is not None:
        answer["matches"] = result.matches
    return answer
