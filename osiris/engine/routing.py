"""Routing inside the engine: the file reads, stores and texts behind a rewritten call.

:mod:`osiris.core.routing` decides which calls are candidates; this module looks at the
file (inside ``OSIRIS_ROOTS`` only, through :mod:`osiris.store.files`), stores what the
model will not see in full, and journals it (``route.read``, ``route.output``) so the
audit can show the ref was kept. Any reason not to route — a file outside the roots, a
missing, binary or over-limit file, a small one — is an answer of ``None``: the call
passes as the client sent it.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from osiris.core import routing
from osiris.core.outline import detect_language, outline_symbols
from osiris.core.preview import make_preview
from osiris.core.routing import RoutingConfig
from osiris.engine.context import EngineContext
from osiris.engine.payloads import args_fingerprint, store_payload
from osiris.errors import OsirisError
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
    tx.event("route.read", {"path": str(read.path), "ref": stored.ref, "lines": lines,
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


def store_output(ctx: EngineContext, tx: Tx, task_id: str, text: str, *, tool: str,
                 args: dict[str, Any], failed: bool, config: RoutingConfig,
                 threshold: int) -> dict[str, Any] | None:
    """Store a command's (or an MCP tool's) whole output; the preview that stands in for
    it when it is over ``threshold`` tokens, else None (the output is shown as is)."""
    tokens = ctx.counter.count(text)
    if tokens <= threshold:
        return None
    stored = store_payload(ctx, tx, task_id, text, via=f"route.{tool}")
    preview = make_preview(stored.text, budget_tokens=config.preview_tokens,
                           counter=ctx.counter, kind="error" if failed else "result")
    args_text, _ = args_fingerprint(tool, args)
    tx.event("route.output", {"tool": tool, "args": args_text[:500], "ref": stored.ref,
                              "tokens": stored.tokens, "lines": preview.lines_total,
                              "preview_tokens": preview.tokens, "failed": failed},
             task_id=task_id)
    return {"ref": stored.ref, "tokens": stored.tokens, "lines": preview.lines_total,
            "preview": preview.text, "preview_tokens": preview.tokens}


LIVE_REF_MIN_TOKENS = 500
"""Refs smaller than this are not worth a line after a compaction."""


def live_refs(tx: Tx, task_id: str, files: dict[str, str], limit: int = 30,
              ) -> list[dict[str, Any]]:
    """The task's refs worth recalling, newest first: ref, tokens and what they held."""
    rows = tx.con.execute(
        "SELECT tr.ref, r.tokens, tr.via, (SELECT arg_min(coalesce(l.detail->>'path',"
        " concat_ws(' ', l.detail->>'tool', substr(l.detail->>'args', 1, 80))), l.ts_us)"
        " FROM ledger l WHERE l.task_id = tr.task_id AND l.ref = tr.ref) AS what"
        " FROM task_refs tr JOIN refs r USING (ref) WHERE tr.task_id = ? AND r.tokens >= ?"
        " ORDER BY tr.created_us DESC LIMIT ?",
        [task_id, LIVE_REF_MIN_TOKENS, limit + 1]).fetchall()
    return [{"ref": ref, "tokens": int(tokens),
             "what": files.get(ref) or what or via} for ref, tokens, via, what in rows]
