"""Routing inside the engine: the file reads, stores and texts behind a rewritten call.

:mod:`osiris.core.routing` decides which calls are candidates; this module looks at the
file (inside ``OSIRIS_ROOTS`` only, through :mod:`osiris.store.files`), stores what the
model will not see in full, and journals it (``route.read``, ``route.output``) so the
audit can show the ref was kept. Any reason not to route — a file outside the roots, a
missing, binary or over-limit file, a small one — is an answer of ``None``: the call
passes as the client sent it.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path, PurePosixPath
from typing import Any

from osiris.core import payoff, routing
from osiris.core.outline import detect_language, outline_symbols
from osiris.core.preview import make_preview
from osiris.core.redaction import ScrubbedText
from osiris.core.routing import RoutingConfig
from osiris.engine.context import EngineContext, journal
from osiris.engine.payloads import args_fingerprint, store_payload
from osiris.errors import OsirisError
from osiris.store import statements
from osiris.store.files import read_text_file, resolve_in_roots
from osiris.store.state import Tx

log = logging.getLogger(__name__)


def config_of(ctx: EngineContext, tx: Tx | None) -> RoutingConfig:
    """The ``[routing]`` settings in force (defaults when no root configures them)."""
    rules, _ = ctx.rules.load(tx)
    return rules.routing


def _absolute(path: str, cwd: str | None) -> str:
    candidate = Path(path).expanduser()
    if not candidate.is_absolute() and cwd:
        candidate = Path(cwd) / candidate
    return str(candidate)


def route_read(ctx: EngineContext, tx: Tx, task_id: str, tool: str,
               tool_input: dict[str, Any], cwd: str | None, config: RoutingConfig,
               ) -> dict[str, Any] | None:
    """For a large ``Read``: the windowed input and the context to add; None to pass."""
    candidate = routing.read_candidate(tool, tool_input, config)
    if candidate is None or not ctx.settings.roots:
        return None
    path = _absolute(candidate.path, cwd)
    try:
        resolved, _ = resolve_in_roots(path, ctx.settings.roots)
        size = os.stat(resolved).st_size
    except (OsirisError, OSError):
        return None  # outside the roots, missing: the client answers as it would
    if not routing.may_exceed(size, config) or size > ctx.settings.max_file_bytes:
        return None
    try:
        read = read_text_file(str(resolved), ctx.settings.roots, ctx.settings.max_file_bytes)
    except OsirisError:
        return None  # binary, not UTF-8, changed under us
    tokens = ctx.counter.count(read.text)
    if tokens <= config.read_threshold_tokens:
        return None
    stored = store_payload(ctx, tx, task_id, read.text, via="route.read", path=str(read.path))
    lines = read.text.count("\n") + (0 if read.text.endswith("\n") or not read.text else 1)
    outline, cut = _outline(ctx, read.text, str(read.path), config.outline_tokens)
    journal(tx, "route.read", {"path": str(read.path), "ref": stored.ref, "lines": lines,
                               "tokens": stored.tokens, "window": config.read_window_lines,
                               "size_bytes": read.size}, task_id=task_id)
    context = routing.read_context(tool_input["file_path"], lines=lines,
                                   tokens=stored.tokens, ref=stored.ref,
                                   window=config.read_window_lines, outline=outline,
                                   outline_cut=cut)
    return {"updatedInput": routing.windowed_input(tool_input, config),
            "additionalContext": context, "ref": stored.ref}


def _outline(ctx: EngineContext, text: str, path: str, budget: int) -> tuple[list[str], bool]:
    """``line: symbol`` entries of the file within ``budget`` tokens, and whether some
    were left out: when all do not fit, every k-th is kept, so the outline still spans
    the whole file."""
    language = detect_language(text, path)
    if language is None:
        return [], False
    try:
        symbols = outline_symbols(text, language)
    except OsirisError:
        return [], False
    entries = [f"{s.line}: {'  ' * s.depth}{s.kind} {s.name}".rstrip() for s in symbols]
    costs = [ctx.counter.count(entry) + 1 for entry in entries]
    if sum(costs) <= budget:
        return entries, False
    stride = -(-sum(costs) // budget)
    while stride < len(entries):
        kept = list(range(0, len(entries), stride))
        if sum(costs[i] for i in kept) <= budget:
            return [entries[i] for i in kept], True
        stride += 1
    return entries[:1], True


def requests_so_far(tx: Tx, task_id: str) -> int:
    """The calls the task has made (each a request of the client's model, about)."""
    row = tx.con.execute(statements.CALL_COUNT, [task_id]).fetchone()
    return int(row[0]) if row else 0


def pays(ctx: EngineContext, tx: Tx, task_id: str, *, kind: str, result_tokens: int,
         shown_tokens: int, session: dict[str, Any] | None, config: RoutingConfig,
         what: str) -> bool:
    """Whether routing an output pays (:mod:`osiris.core.payoff`), journaled with every
    number (``route.payoff``) so a notebook can replay the decision; always true with
    ``payoff`` off (size thresholds alone decide)."""
    if not config.payoff:
        return True
    session = session or {}
    prompt = session.get("prompt_tokens")
    compaction_at = session.get("compaction_at_tokens") or config.compaction_at_tokens
    decision = payoff.decide(kind=kind, result_tokens=result_tokens,
                             shown_tokens=min(shown_tokens, result_tokens),
                             prompt_tokens=prompt if isinstance(prompt, int) else 0,
                             requests_so_far=requests_so_far(tx, task_id),
                             compaction_at_tokens=int(compaction_at))
    journal(tx, "route.payoff", {**decision.record(), "what": what[:300]}, task_id=task_id)
    return decision.route


PREVIEW_FRAME_TOKENS = 60
"""The recall line under a preview (ref, size, how to get the rest)."""


def store_output(ctx: EngineContext, tx: Tx, task_id: str, text: str, *, tool: str,
                 args: dict[str, Any], failed: bool, config: RoutingConfig,
                 threshold: int, kind: str | None = None,
                 session: dict[str, Any] | None = None,
                 preview_tokens: int | None = None) -> dict[str, Any] | None:
    """Store a command's (or an MCP tool's) whole output; the preview that stands in for
    it when it is over ``threshold`` tokens and, for a client hook's output (``kind``
    given), routing it pays (:func:`pays`), else None (the output is shown as is).
    ``preview_tokens``: the preview's size (default ``config.preview_tokens``)."""
    tokens = ctx.counter.count(text)
    if tokens <= threshold:
        return None
    budget = preview_tokens or config.preview_tokens
    shown = min(tokens, budget) + PREVIEW_FRAME_TOKENS
    if kind is not None and not pays(
            ctx, tx, task_id, kind=kind, result_tokens=tokens, shown_tokens=shown,
            session=session, config=config, what=f"{tool} {args_fingerprint(tool, args)[0]}"):
        return None
    stored = store_payload(ctx, tx, task_id, text, via=f"route.{tool}")
    preview = make_preview(stored.text, budget_tokens=budget,
                           counter=ctx.counter, kind="error" if failed else "result")
    args_text, _ = args_fingerprint(tool, args)
    journal(tx, "route.output", {"tool": tool, "args": args_text[:500], "ref": stored.ref,
                                 "tokens": stored.tokens, "lines": preview.lines_total,
                                 "preview_tokens": preview.tokens, "failed": failed},
            task_id=task_id)
    return {"ref": stored.ref, "tokens": stored.tokens, "lines": preview.lines_total,
            "preview": preview.text, "preview_tokens": preview.tokens}


def shape_read(ctx: EngineContext, tx: Tx, task_id: str, tool_input: dict[str, Any],
               content: str, cwd: str | None, config: RoutingConfig,
               session: dict[str, Any] | None) -> dict[str, Any] | None:
    """A mid-size whole-file ``Read`` the client answered with ``content``: its first
    ``read_shape_lines`` lines and the note (size, ref, outline with line numbers) that
    stand in for it, when routing it pays; None to show it as the client read it.

    A file shaped once in this task and read whole again since is shown whole: the
    agent asked for all of it, knowing it had a part."""
    path = tool_input.get("file_path")
    if not config.read_shape or not verbatim(content) \
            or routing.read_key(tool_input) != (None, None) \
            or not isinstance(path, str) or not path \
            or PurePosixPath(path).suffix.lower() in routing.UNTOUCHED_SUFFIXES:
        return None
    lines, keep = content.splitlines(), config.read_shape_lines
    tokens = ctx.counter.count(content)
    # Too small to pay, windowed before the read, or too little left to be worth a recall.
    if not config.read_shape_min_tokens <= tokens <= config.read_threshold_tokens \
            or len(lines) <= keep + keep // 2:
        return None
    found = _file_digest(ctx, path, cwd)
    where = found[0] if found else _absolute(path, cwd)
    if tx.con.execute(statements.READ_SHAPED, [task_id, where]).fetchone() is not None:
        return None
    head = "\n".join(lines[:keep])  # no newline after: Claude Code would number an empty line
    outline, cut = _outline(ctx, content, where, config.outline_tokens)
    shown = ctx.counter.count(head) + sum(ctx.counter.count(o) + 1 for o in outline) \
        + PREVIEW_FRAME_TOKENS
    if not pays(ctx, tx, task_id, kind="read", result_tokens=tokens, shown_tokens=shown,
                session=session, config=config, what=f"Read {where}"):
        return None
    stored = store_payload(ctx, tx, task_id, content, via="route.read", path=where)
    journal(tx, "route.read_shaped", {"path": where, "ref": stored.ref, "lines": len(lines),
                                      "tokens": stored.tokens, "shown_lines": keep,
                                      "shown_tokens": shown}, task_id=task_id)
    note = routing.shaped_read_context(path, lines=len(lines), tokens=stored.tokens,
                                       ref=stored.ref, shown=keep, outline=outline,
                                       outline_cut=cut)
    return {"content": head, "lines": keep, "context": note, "ref": stored.ref,
            "tokens": stored.tokens}


def _file_digest(ctx: EngineContext, path: str, cwd: str | None) -> tuple[str, str] | None:
    """(resolved path, sha256 of the bytes) of a file inside the roots, else None."""
    if not ctx.settings.roots:
        return None
    try:
        resolved, _ = resolve_in_roots(_absolute(path, cwd), ctx.settings.roots)
        if os.stat(resolved).st_size > ctx.settings.max_file_bytes:
            return None
        with open(resolved, "rb") as fh:
            return str(resolved), hashlib.sha256(fh.read()).hexdigest()
    except (OsirisError, OSError):
        return None


def record_served(ctx: EngineContext, tx: Tx, task_id: str, tool_input: dict[str, Any],
                  cwd: str | None, tool_use_id: str | None,
                  subagent: str | None = None, *, content: str | None = None,
                  ref: str | None = None) -> None:
    """A ``Read`` result reached the model: remember the file's bytes and the window,
    and whose context got it (``subagent``; None: the session's main agent). ``content``
    and ``ref``: the text the model now knows the window as, and the ref it is stored
    under (a later re-read of a changed file is shown against it)."""
    key = routing.read_key(tool_input)
    path = tool_input.get("file_path")
    if key is None or not isinstance(path, str):
        return
    found = _file_digest(ctx, path, cwd)
    if found is None:
        return
    known = None if content is None or ref is None or not verbatim(content) \
        else _text_sha(content)
    journal(tx, "route.served", {"path": found[0], "offset": key[0], "limit": key[1],
                                 "sha256": found[1], "tool_use_id": tool_use_id,
                                 "subagent": subagent, "ref": ref if known else None,
                                 "content_sha256": known}, task_id=task_id)


def _text_sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def verbatim(content: str) -> bool:
    """Whether ``content`` (a client's output, scrubbed where it entered the engine) is
    the text the client got: nothing was masked. Only such text may be shown back in
    the client's place (a masked line would break the agent's next edit of it)."""
    return isinstance(content, ScrubbedText) and content.scrub.redacted == 0


def read_changes(ctx: EngineContext, tx: Tx, task_id: str, tool_input: dict[str, Any],
                 content: str, ref: str | None, cwd: str | None, config: RoutingConfig,
                 subagent: str | None = None) -> dict[str, Any] | None:
    """A whole-file ``Read`` the client answered with ``content``, shown as the lines that
    changed since this context last read the file whole, when OSIRIS is sure what that
    context holds: the earlier text stored and verified, no compaction since, the window
    and the note much smaller than the file (:data:`RoutingConfig.reread_changes_max_percent`).
    None: shown as the client read it."""
    path = tool_input.get("file_path")
    if not config.reread_changes or ref is None or not verbatim(content) \
            or routing.read_key(tool_input) != (None, None) \
            or not isinstance(path, str) or not path \
            or PurePosixPath(path).suffix.lower() in routing.UNTOUCHED_SUFFIXES:
        return None
    found = _file_digest(ctx, path, cwd)
    last = None if found is None else _earlier_whole_read(ctx, tx, task_id, found[0],
                                                          subagent)
    if found is None or last is None:
        return None
    served_seq, earlier, tool_use_id = last
    span = routing.changed_span(earlier, content, config.reread_changes_context_lines)
    if span is None:
        return None
    lines = content.splitlines()
    tokens = ctx.counter.count(content)
    window = "\n".join(lines[span[0] - 1:span[1]])  # a trailing newline would read as a line
    if span[1] == len(lines) and content.endswith("\n"):
        window += "\n"  # the file's end, shown as Claude Code shows a whole read
    note = routing.read_changes_context(path, span=span, lines=len(lines),
                                        old_lines=len(earlier.splitlines()),
                                        tool_use_id=tool_use_id, ref=ref)
    shown = ctx.counter.count(window) + ctx.counter.count(note)
    if tokens < config.reread_changes_min_tokens \
            or shown * 100 > tokens * config.reread_changes_max_percent:
        return None
    journal(tx, "route.read_changed", {"path": found[0], "ref": ref, "served_seq": served_seq,
                                       "lines": len(lines), "tokens": tokens,
                                       "first_line": span[0], "last_line": span[1],
                                       "shown_tokens": shown}, task_id=task_id)
    return {"content": window, "lines": span[1] - span[0] + 1, "start": span[0],
            "context": note, "ref": ref, "tokens": tokens}


def _earlier_whole_read(ctx: EngineContext, tx: Tx, task_id: str, path: str,
                        subagent: str | None) -> tuple[int, str, str | None] | None:
    """The last whole read of ``path`` served to this context (its ``route.served`` seq,
    the text the model got, the client's call id), when it is stored verbatim and no
    compaction has happened since (which may have taken it out of the prompt)."""
    row = tx.con.execute(statements.WHOLE_READ, [task_id, path, subagent or ""]).fetchone()
    if row is None or row[1] is None or row[2] is None or tx.con.execute(
            statements.COMPACTED_SINCE, [task_id, row[0]]).fetchone() is not None:
        return None
    try:
        text = ctx.store.refs.get(row[1]).decode("utf-8")
    except (OsirisError, OSError, UnicodeDecodeError):
        return None
    return (row[0], text, row[3]) if _text_sha(text) == row[2] else None


def reread(ctx: EngineContext, tx: Tx, task_id: str, tool_input: dict[str, Any],
           cwd: str | None, config: RoutingConfig, subagent: str | None = None,
           ) -> str | None:
    """The pointer for a ``Read`` OSIRIS is sure is a second copy, else None: the same
    file and window served in this task to the same context (the main agent's, or
    ``subagent``'s), the file's bytes unchanged since, and no compaction since.

    A subagent starts with a context of its own, and what it reads never enters its
    parent's (only its final report does), nor another subagent's: a result served to
    one context is no reason to deny a read in another. A fork (Claude Code's
    ``subagent_type: "fork"``) does inherit its parent's conversation, but keying it
    apart only costs a second copy, never a pointer to nothing."""
    key = routing.read_key(tool_input)
    path = tool_input.get("file_path")
    if not config.rereads or key is None or not isinstance(path, str):
        return None
    found = _file_digest(ctx, path, cwd)
    if found is None:
        return None
    row = tx.con.execute(
        statements.SERVED_READ,
        [task_id, found[0], "" if key[0] is None else str(key[0]),
         "" if key[1] is None else str(key[1]), subagent or ""]).fetchone()
    if row is None or row[1] != found[1]:
        return None
    later = tx.con.execute(statements.COMPACTED_SINCE, [task_id, row[0]]).fetchone()
    if later is not None:
        return None
    window = "" if key == (None, None) else f" (offset {key[0] or 1}, limit {key[1]})"
    journal(tx, "route.reread", {"path": found[0], "served_seq": row[0]}, task_id=task_id)
    return routing.reread_pointer(str(path), tool_use_id=row[2], window=window)


LIVE_REF_MIN_TOKENS = 500
"""Refs smaller than this are not worth a line after a compaction."""


def live_refs(tx: Tx, task_id: str, files: dict[str, str], limit: int = 30,
              ) -> list[dict[str, Any]]:
    """The task's refs worth recalling, newest first: ref, tokens and what they held."""
    rows = tx.con.execute(
        "SELECT tr.ref, r.tokens, tr.via, coalesce((SELECT arg_min(e.body->>'path', e.seq)"
        " FROM events e WHERE e.task_id = tr.task_id AND e.kind = 'route.read'"
        " AND e.body->>'ref' = tr.ref), (SELECT arg_min(coalesce(l.detail->>'path',"
        " concat_ws(' ', l.detail->>'tool', substr(l.detail->>'args', 1, 80))), l.ts_us)"
        " FROM ledger l WHERE l.task_id = tr.task_id AND l.ref = tr.ref),"
        " (SELECT arg_min(concat_ws(' ', e.body->>'tool', substr(e.body->>'args', 1, 80)),"
        " e.seq) FROM events e WHERE e.task_id = tr.task_id AND e.kind = 'route.output'"
        " AND e.body->>'ref' = tr.ref)) AS what"
        " FROM task_refs tr JOIN refs r USING (ref) WHERE tr.task_id = ? AND r.tokens >= ?"
        " ORDER BY tr.created_us DESC LIMIT ?",
        [task_id, LIVE_REF_MIN_TOKENS, limit + 1]).fetchall()
    return [{"ref": ref, "tokens": int(tokens),
             "what": files.get(ref) or what or via} for ref, tokens, via, what in rows]
