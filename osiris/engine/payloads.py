"""Payloads: externalization, files, drop receipts, the tool_results cache, prune advice.

A payload is scrubbed of secrets before anything else, counted, then placed by the
adaptive engagement mode. Every payload is stored (so duplicates and re-reads can be
answered with a ref, and the audit covers everything); an externalized one is
answered with a ref and a preview instead of its text.

The ledger is the accounting: ``context_tokens`` says what entered (+) or left (−)
the agent's context, ``saved_claimed`` what externalization makes droppable, and
``saved_proven`` what a drop receipt confirmed.
"""

from __future__ import annotations

import contextlib
import json
import mimetypes
import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, cast

from osiris.core import routing
from osiris.core.display import escape_controls
from osiris.core.engagement import Engagement, Thresholds, choose_engagement
from osiris.core.hashing import canonical_json, digest_of_ref, sha256_hex
from osiris.core.payload_work import PayloadWork, path_in_args, payload_work
from osiris.core.preview import Preview, make_preview
from osiris.core.prune import ContextItem, PruneAdvice, context_item, plan_prune, prune_trigger
from osiris.core.redaction import ScrubResult, scrub, scrub_once
from osiris.core.task_state import FileRecord, TaskState, ToolResult
from osiris.engine import memory
from osiris.engine.context import EngineContext
from osiris.errors import InvalidInputError, NotFoundError
from osiris.store import statements
from osiris.store.db import fetch_row
from osiris.store.files import read_text_file
from osiris.store.state import Tx

PAYLOAD_KINDS = ("result", "error", "file")
MAX_RECENT_RESULTS = 64
CHECKPOINT_PREFIX = "c_"
LedgerRow = dict[str, Any]


@dataclass(frozen=True)
class StoredPayload:
    """A scrubbed payload in the ref store."""

    ref: str
    text: str
    size_bytes: int
    tokens: int
    redacted: int
    media_type: str


def media_type_for(path: str | None) -> str:
    """A media type from a file name (text/plain when unknown)."""
    if not path:
        return "text/plain"
    guessed, _ = mimetypes.guess_type(path)
    return guessed or "text/plain"


PREPARE_MIN_CHARS = 16_384
"""Payloads from this size on are scrubbed, hashed, stored, counted and previewed before
the transaction of their ``observe`` starts (:func:`prepared`)."""


@dataclass(frozen=True)
class _Prepared:
    """The CPU work of one payload, done before its transaction."""

    scrubbed: ScrubResult
    ref: str
    size_bytes: int
    tokens: int
    preview_key: tuple[Any, ...] | None
    preview: Preview | None


_PREPARED = threading.local()


@contextlib.contextmanager
def prepared(ctx: EngineContext, kind: str, result: object, args: object,
             fixed_mode: str | None, handed: PayloadWork | None = None) -> Iterator[None]:
    """Do the CPU work of a large ``observe`` payload now (scrub, SHA-256, the blob write,
    the token count and the preview the engagement mode will want), so that the
    transaction that follows holds the store only for its reads and writes. Anything the
    work cannot decide (a bad argument, an oversized payload) is left to the call itself,
    which raises the same error inside its transaction. ``handed``: that work, done by
    the client for this very ``result`` (:mod:`osiris.core.payload_work`); only the blob
    is written here."""
    work = None
    if kind in ("result", "error") and isinstance(result, str) \
            and (handed is not None or len(result) >= PREPARE_MIN_CHARS):
        with contextlib.suppress(InvalidInputError):
            work = _prepare(ctx, kind, _payload_text(ctx, kind, result), args, fixed_mode,
                            handed)
    _PREPARED.work = (result, work) if work is not None else None
    try:
        yield
    finally:
        _PREPARED.work = None


def _prepare(ctx: EngineContext, kind: str, text: str, args: object,
             fixed_mode: str | None, handed: PayloadWork | None = None) -> _Prepared:
    work = handed
    if work is None or fixed_mode is not None:
        work = payload_work(scrub_once(text), kind=kind, path=path_in_args(parse_args(args)),
                            thresholds=thresholds_of(ctx), counter=ctx.counter,
                            fixed_mode=fixed_mode)
    data = work.scrubbed.text.encode("utf-8")
    ref, _ = ctx.store.put_blob(data)
    return _Prepared(work.scrubbed, ref, len(data), work.tokens, work.preview_key,
                     work.preview)


def _prepared_for(text: str) -> _Prepared | None:
    """The work :func:`prepared` did for ``text`` (compared by value), if any."""
    held = getattr(_PREPARED, "work", None)
    if held is None:
        return None
    original, work = held
    if len(original) == len(text) and (original is text or original == text):
        return work  # type: ignore[no-any-return]
    return None


def store_payload(ctx: EngineContext, tx: Tx, task_id: str, text: str, *, via: str,
                  path: str | None = None, scrubbed: ScrubResult | None = None,
                  ) -> StoredPayload:
    """Scrub (unless already scrubbed), count, store once, record metadata, and make the
    ref the task's."""
    work = _prepared_for(text)
    if work is not None:
        scrubbed, ref, size, tokens = work.scrubbed, work.ref, work.size_bytes, work.tokens
    else:
        scrubbed = scrubbed or scrub_once(text)
        data = scrubbed.text.encode("utf-8")
        ref, _ = ctx.store.put_blob(data)
        size, tokens = len(data), ctx.counter.count(scrubbed.text)
    media_type = media_type_for(path)
    tx.record_ref(ref, size_bytes=size, tokens=tokens, encoding=ctx.counter.encoding_name,
                  media_type=media_type, redaction_version=scrubbed.rules_version,
                  redactions=scrubbed.redacted)
    tx.link_ref(task_id, ref, via)
    return StoredPayload(ref, scrubbed.text, size, tokens, scrubbed.redacted, media_type)


def _payload_text(ctx: EngineContext, kind: str, result: object) -> str:
    if result is None:
        raise InvalidInputError(f"observe(kind='{kind}') needs result: the tool's output")
    text = result if isinstance(result, str) else canonical_json(result)
    size = len(text.encode("utf-8"))
    if size > ctx.settings.max_payload_bytes:
        raise InvalidInputError(
            f"payload is {size:,} bytes, over OSIRIS_MAX_PAYLOAD_BYTES "
            f"({ctx.settings.max_payload_bytes:,}); split it or raise the limit")
    return text


def parse_args(args: object) -> dict[str, Any]:
    if args is None:
        return {}
    if isinstance(args, str):  # hooks that can only substitute text send the object as JSON
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError:
            raise InvalidInputError("args must be an object of the tool's arguments (or "
                                    "the JSON text of one); this text is not JSON") from None
    if not isinstance(args, dict):
        raise InvalidInputError("args must be an object of the tool's arguments")
    return args


def args_fingerprint(tool: str, args: dict[str, Any]) -> tuple[str, str]:
    """Scrubbed canonical args text (for the journal) and its hash."""
    text = scrub(canonical_json(args)).text
    return text, sha256_hex(f"{tool}\u2016{text}")


def thresholds_of(ctx: EngineContext) -> Thresholds:
    """Engagement thresholds from the settings."""
    s = ctx.settings
    return Thresholds(s.engage_light_tokens, s.engage_standard_tokens, s.engage_full_tokens)


def _recall_hint(strategy: str) -> str:
    hints = {"errors": "op=grep pattern=… context=3 | op=range start= end= | op=aggregate",
             "outline": "op=outline | op=range start= end= | op=grep pattern=…",
             "head_tail": "op=range start= end= | op=grep pattern=… | op=tail n="}
    return hints.get(strategy, "op=grep | op=range | op=outline")


def observe_payload(ctx: EngineContext, tx: Tx, state: TaskState, *, kind: str,
                    tool: str | None, args: object, result: object, path: str | None,
                    fixed_mode: str | None = None, routed: str | None = None,
                    ) -> tuple[TaskState, dict[str, Any], list[LedgerRow]]:
    """``observe`` of a result, an error or a file (read by OSIRIS itself).

    ``routed``: the output reaches the model only as ``facts["shown"]`` (a loop that
    owns its history puts that text there instead; the output itself when absent), and
    the recall hint it names the ref with (``{ref}`` stands for it). The ledger then
    books what was shown, not the output."""
    call_args = parse_args(args)
    file_info = None
    if kind == "file":
        if not path:
            raise InvalidInputError("observe(kind='file') needs path: a file inside "
                                    "OSIRIS_ROOTS")
        file_info = read_text_file(path, ctx.settings.roots, ctx.settings.max_file_bytes)
        text = file_info.text
        tool = "file"
        call_args = {"path": str(file_info.path)}
    else:  # a payload prepared outside the transaction has passed these checks there
        text = result if isinstance(result, str) and _prepared_for(result) is not None \
            else _payload_text(ctx, kind, result)
        tool = tool or "unknown"
    args_text, args_hash = args_fingerprint(tool, call_args)
    work = _prepared_for(text)
    scrubbed = work.scrubbed if work is not None else scrub_once(text)
    scrubbed_digest = digest_of_ref(work.ref) if work is not None else \
        sha256_hex(scrubbed.text.encode("utf-8"))
    cache_key = sha256_hex(f"{args_hash}\u2016{scrubbed_digest}")

    # What LoopGuard sees of this call (popped by observe before it answers).
    call = {"tool": tool, "args": call_args, "output": scrubbed.text,
            "output_digest": scrubbed_digest}
    if file_info is not None:
        for record in state.files:
            if record.path == str(file_info.path) and record.sha256 == scrubbed_digest:
                new, facts, rows = _unchanged_file(tx, state, record, file_info.mtime_ns)
                return new, {**facts, "_call": call}, rows

    previous = tx.con.execute(
        statements.TOOL_RESULT, [state.task_id, cache_key]).fetchone()
    if previous is not None:
        tx.con.execute(statements.TOOL_RESULT_HIT, [state.task_id, cache_key])
        ref, created_us, tokens = previous
        facts = {"duplicate": True, "ref": ref, "tokens": int(tokens),
                 "first_seen_us": int(created_us), "_call": call,
                 "hint": "identical to a result you already have (same tool, args and "
                         "output): drop this copy and recall the ref when needed"}
        in_context = 0 if kind == "file" else int(tokens)
        claimed, proven = in_context, 0
        if routed is not None and int(tokens) >= ctx.settings.engage_light_tokens:
            # A pointer stands in for the copy (a small one is shown as it is): the
            # saving is made, not claimed.
            facts["shown"] = routing.routed_pointer(routing.routed_hint(routed, ref))
            in_context = ctx.counter.count(facts["shown"])
            claimed = proven = max(int(tokens) - in_context, 0)
        elif routed is not None:
            claimed = 0  # shown as it is: in the history until the loop drops it
        rows = [{"kind": "payload.duplicate", "ref": ref, "tokens": int(tokens),
                 "context_tokens": in_context, "saved_claimed": claimed,
                 "saved_proven": proven,
                 "detail": {"kind": kind, "tool": tool, "cache_key": cache_key}}]
        return state, facts, rows

    stored = store_payload(ctx, tx, state.task_id, text, via=f"observe.{kind}",
                           path=str(file_info.path) if file_info else None, scrubbed=scrubbed)
    engagement = choose_engagement(stored.tokens, thresholds_of(ctx), fixed_mode)
    tx.con.execute(
        statements.TOOL_RESULT_ROW.sql,
        [state.task_id, cache_key, tool, args_hash, stored.ref, stored.size_bytes,
         stored.tokens, ctx.settings.cache_ttl_s, tx.now_us])
    entry = ToolResult(cache_key, tool, args_hash, stored.ref, stored.size_bytes, stored.tokens,
                       ctx.settings.cache_ttl_s, tx.now_us)
    new = replace(state, tool_results=(*state.tool_results, entry)[-MAX_RECENT_RESULTS:])
    if file_info is not None:
        record = FileRecord(str(file_info.path), scrubbed_digest, file_info.mtime_ns,
                            file_info.size, tx.now_us, stored.ref)
        new = replace(new, files=(*(f for f in new.files if f.path != record.path), record))
        memory.remember(tx, new, "file", record.path, {"sha256": record.sha256,
                                                      "ref": record.ref})
    path_hint = str(file_info.path) if file_info else path_in_args(call_args)
    facts, rows = _placement(ctx, kind, tool, stored, engagement, file_info is not None,
                             path=path_hint, cache_key=cache_key, args_text=args_text,
                             routed=routed)
    return new, {**facts, "_call": call}, rows


def _placement(ctx: EngineContext, kind: str, tool: str, stored: StoredPayload,
               engagement: Engagement, is_file: bool, *, path: str | None, cache_key: str,
               args_text: str, routed: str | None = None,
               ) -> tuple[dict[str, Any], list[LedgerRow]]:
    facts: dict[str, Any] = {"ref": stored.ref, "mode": engagement.mode,
                             "reason": engagement.reason, "tokens": stored.tokens}
    if stored.redacted:
        facts["redacted"] = stored.redacted
    detail = {"kind": kind, "tool": tool, "mode": engagement.mode, "cache_key": cache_key,
              "args": args_text[:500], "path": path}
    # The agent saw a result/error through its client, so it is in context until dropped;
    # a file OSIRIS read itself reaches the agent only through this answer.
    in_context = 0 if is_file else stored.tokens
    if not engagement.externalized:
        if is_file:  # shown to the model: controls escaped (osiris.core.display)
            facts["content"] = escape_controls(stored.text)
        return facts, [{"kind": "payload.inline", "ref": stored.ref, "tokens": stored.tokens,
                        "context_tokens": in_context, "detail": detail}]
    work = _prepared_for(stored.text)
    if work is not None and work.preview is not None \
            and work.preview_key == (engagement.preview_tokens, kind, path):
        preview = work.preview
    else:
        preview = make_preview(stored.text, budget_tokens=engagement.preview_tokens,
                               counter=ctx.counter, kind=kind, path=path)
    facts.update(preview=preview.text, preview_tokens=preview.tokens,
                 lines=preview.lines_total, strategy=preview.strategy,
                 recall=_recall_hint(preview.strategy))
    claimed = max(stored.tokens - preview.tokens, 0)
    proven = 0
    if routed is not None:  # only the preview entered the history: the saving is made
        facts["shown"] = routing.routed_preview(
            preview.text, lines=preview.lines_total, tokens=stored.tokens,
            hint=routing.routed_hint(routed, stored.ref))
        in_context = ctx.counter.count(facts["shown"])
        claimed = proven = max(stored.tokens - in_context, 0)
    return facts, [{"kind": "payload.externalize", "ref": stored.ref, "tokens": stored.tokens,
                    "context_tokens": in_context, "saved_claimed": claimed,
                    "saved_proven": proven,
                    "detail": {**detail, "preview_tokens": preview.tokens,
                               "strategy": preview.strategy}}]


def _unchanged_file(tx: Tx, state: TaskState, record: FileRecord, mtime_ns: int,
                    ) -> tuple[TaskState, dict[str, Any], list[LedgerRow]]:
    updated = replace(record, last_access_us=tx.now_us, mtime_ns=mtime_ns)
    new = replace(state, files=tuple(updated if f.path == record.path else f
                                     for f in state.files))
    facts = {"unchanged": True, "ref": record.ref, "path": record.path,
             "hint": "unchanged since you read it: recall the ref instead of reading again"}
    return new, facts, [{"kind": "payload.reread", "ref": record.ref, "tokens": 0,
                         "detail": {"kind": "file", "tool": "file", "path": record.path}}]


def drop_receipt(ctx: EngineContext, tx: Tx, state: TaskState, result: object,
                 routed: str | None = None) -> tuple[dict[str, Any], list[LedgerRow]]:
    """``observe(kind="dropped", result=<ref or checkpoint id>)``: the saving is proven.

    ``routed``: a loop that owns its history left :func:`~osiris.core.routing.routed_stub`
    in place of the output: the stub stays in the context, so what the drop frees, and
    proves, is the output's share less the stub."""
    if not isinstance(result, str) or not result.strip():
        raise InvalidInputError("observe(kind='dropped') needs result: the ref you evicted "
                                "(or a checkpoint id, for everything it listed)")
    target = result.strip()
    if target.startswith(CHECKPOINT_PREFIX):
        row = tx.con.execute("SELECT body FROM checkpoints WHERE checkpoint_id = ? AND"
                             " task_id = ?", [target, state.task_id]).fetchone()
        if row is None:
            raise NotFoundError(f"checkpoint {target!r} is not a checkpoint of this task")
        refs = [item["ref"] for item in json.loads(row[0]).get("leaving", [])]
    else:
        digest_of_ref(target)
        refs = [target]
    rows: list[LedgerRow] = []
    proven_total = freed_total = 0
    for ref in refs:
        held = tx.con.execute(statements.TASK_HOLDS_REF, [state.task_id, ref]).fetchone()
        if held is None:
            raise NotFoundError(f"{ref} is not a ref of this task; only refs OSIRIS gave this "
                                "task can be dropped")
        context, claimed, proven = fetch_row(
            tx.con, "SELECT coalesce(sum(context_tokens), 0), coalesce(sum(saved_claimed), 0),"
            " coalesce(sum(saved_proven), 0) FROM ledger WHERE task_id = ? AND ref = ?",
            [state.task_id, ref])
        outstanding = max(int(claimed) - int(proven), 0)
        freed = max(int(context), 0)
        made = 0  # a routed drop's own saving: claimed and proven by this receipt
        if routed is not None and freed:
            stub = routing.routed_stub(routing.routed_hint(routed, ref))
            freed = made = max(freed - ctx.counter.count(stub), 0)
            outstanding += made  # the loop's history is that much shorter from now on
        if outstanding == 0 and freed == 0:
            continue
        rows.append({"kind": "drop_receipt", "ref": ref, "tokens": freed,
                     "context_tokens": -freed, "saved_claimed": made,
                     "saved_proven": outstanding,
                     "detail": {"kind": "dropped", "via": target}})
        proven_total += outstanding
        freed_total += freed
    facts = {"dropped": len(rows), "proven_saved_tokens": proven_total,
             "context_freed_tokens": freed_total}
    if not rows:
        facts["already_dropped"] = True
    return facts, rows


def context_items(tx: Tx, task_id: str) -> list[ContextItem]:
    """Payloads (and head/contract texts) OSIRIS believes are still in the context."""
    rows = tx.con.execute(statements.CONTEXT_ITEMS, [task_id]).fetchall()
    if rows and isinstance(rows[0], ContextItem):  # the store owner's memory keeps them
        return cast("list[ContextItem]", rows)
    return [context_item(ref, int(tokens), int(observed), str(kind), tool)
            for ref, tokens, observed, kind, tool in rows]


def prune_advice(ctx: EngineContext, tx: Tx, state: TaskState, used_tokens: int,
                 idle_s: float, prefix_tokens: int) -> PruneAdvice:
    """Auto-prune check run inside observe (the context's items only when triggered)."""
    settings = ctx.settings
    triggered, trigger = prune_trigger(settings.prune_mode, used_tokens=used_tokens,
                                       threshold=settings.prune_threshold_tokens,
                                       ttl_s=settings.cache_ttl_s, idle_s=idle_s)
    if not triggered:
        return PruneAdvice(settings.prune_mode, False, trigger)
    return plan_prune(context_items(tx, state.task_id), mode=ctx.settings.prune_mode,
                      used_tokens=used_tokens, threshold=ctx.settings.prune_threshold_tokens,
                      ttl_s=ctx.settings.cache_ttl_s, idle_s=idle_s,
                      prefix_tokens=prefix_tokens)
