"""The six MCP tools (or ``osiris_call``): validate, call the engine, shape the answer.

Each answer is a short text for the model plus ``structuredContent`` with the same
facts. A domain error becomes an ``isError`` result whose text says what to do next;
an unexpected error is logged and reported without internals.
"""

from __future__ import annotations

import inspect
import json
import logging
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import anyio.to_thread
import jsonschema
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, TextContent, ToolAnnotations

from osiris.core import client_hooks
from osiris.core.redaction import scrub
from osiris.errors import InvalidInputError, OsirisError
from osiris.server import answers
from osiris.server.definitions import DISPATCH, HOOK, TOOLS, ToolDef

if TYPE_CHECKING:
    from osiris.engine import Engine

log = logging.getLogger(__name__)
T = TypeVar("T")
MAX_ARGUMENT_BYTES = 64 << 20
#: Longest error text a tool answers with (its structured copy is the same text).
MAX_ERROR_CHARS = 600


class EngineGate:
    """The engine behind a lock: MCP runs sync tools in worker threads, concurrently."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._lock = threading.Lock()

    def run(self, fn: Callable[[Engine], dict[str, Any]]) -> dict[str, Any]:
        """Call ``fn(engine)`` alone."""
        with self._lock:
            return fn(self.engine)

    def run_hook(self, fn: Callable[[Any], T]) -> T:
        """Call ``fn(engine)`` alone, whatever it returns (a hook's outcome)."""
        with self._lock:
            return fn(self.engine)


def principal_of(ctx: Context | None) -> str | None:
    """The HTTP bearer identity of the request (None on stdio and in process)."""
    if ctx is None:
        return None
    try:
        request = ctx.request_context.request
    except (AttributeError, LookupError, ValueError):
        return None
    state = getattr(request, "state", None)
    return getattr(state, "osiris_principal", None) if state is not None else None


def bounded_text(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """``text`` scrubbed of secrets and cut to ``limit`` characters (head and tail kept:
    the tail usually says what to do), so that no error can echo a huge or secret input."""
    text = scrub(text).text
    if len(text) <= limit:
        return text
    tail = limit // 3
    omitted = len(text) - (limit - tail)
    return f"{text[:limit - tail]} … [{omitted:,} characters omitted] … {text[-tail:]}"


def excerpt(value: object, limit: int = 60) -> str:
    """A short, scrubbed repr of an input value for an error message."""
    text = scrub(repr(value)).text
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters)"


def error_result(exc: Exception, *, committed: bool = False) -> CallToolResult:
    """A tool error the model can act on. ``committed``: the engine call had already
    taken effect when this failed (shaping its answer), so it must not be repeated."""
    code = getattr(exc, "code", "internal_error") if isinstance(exc, OsirisError) \
        else "internal_error"
    if committed:
        log.exception("an OSIRIS tool took effect but its answer failed")
        code = "committed_with_errors"
        text = (f"committed_with_errors: the call took effect, but its answer could not be "
                f"built ({type(exc).__name__}); do not repeat it: read the task with "
                "plan(mode='status') instead.")
    elif isinstance(exc, OsirisError):
        text = bounded_text(f"{exc.code}: {exc}")
    else:
        log.exception("unexpected error in an OSIRIS tool")
        text = (f"internal_error: {type(exc).__name__}; the call had no effect that was not "
                "journaled. Retry once; if it persists, run `osiris health`.")
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True,
                          structured_content={"error": code, "message": text})


def ok_result(tool: str, answer: dict[str, Any]) -> CallToolResult:
    """Short text plus the structured answer."""
    return CallToolResult(content=[TextContent(type="text", text=answers.text_of(tool, answer))],
                          structured_content=answers.model_facing(answer))


def hook_result(precheck: Callable[[], dict[str, Any]]) -> CallToolResult:
    """``precheck(format="claude-code")``: the PreToolUse decision as the text (what an
    ``mcp_tool`` hook parses), the precheck answer as structured content. A failure
    leaves the user's tool alone: no decision, a warning for the user."""
    try:
        answer = precheck()
        doc = answer.pop("client_output")
    except Exception as exc:
        if not isinstance(exc, OsirisError):
            log.exception("unexpected error in an OSIRIS hook precheck")
        problem = f"{exc.code}: {exc}" if isinstance(exc, OsirisError) else \
            f"internal error {type(exc).__name__}"
        answer, doc = {"error": problem}, client_hooks.allow_with_warning(problem)
    return CallToolResult(content=[TextContent(type="text",
                                               text=client_hooks.decision_json(doc))],
                          structured_content=answer)


class Validators:
    """One compiled JSON-schema validator per tool definition."""

    def __init__(self, defs: tuple[ToolDef, ...]) -> None:
        self._by_key = {d.key: jsonschema.Draft202012Validator(d.schema) for d in defs}
        self._props = {d.key: tuple(d.schema["properties"]) for d in defs}

    def properties(self, key: str) -> tuple[str, ...]:
        """The argument names a tool accepts."""
        return self._props[key]

    def check(self, key: str, arguments: object) -> dict[str, Any]:
        """The arguments, or InvalidInputError listing every problem."""
        if not isinstance(arguments, dict):
            raise InvalidInputError("arguments must be an object")
        errors = sorted(self._by_key[key].iter_errors(arguments), key=lambda e: list(e.path))
        if errors:
            details = "; ".join(
                f"{'.'.join(str(p) for p in e.path) or 'arguments'}: {_problem(e)}"
                for e in errors[:5])
            raise InvalidInputError(f"invalid arguments for osiris_{key}: {details}")
        return arguments


def _problem(error: jsonschema.ValidationError) -> str:
    """jsonschema's message with the offending value cut to a short, scrubbed excerpt
    (its own message quotes the whole value: a 5 MiB list would come back as the error)."""
    whole, message = repr(error.instance), str(error.message)
    if whole in message:
        return message.replace(whole, excerpt(error.instance), 1)
    return bounded_text(message, 200)


def _call_engine(gate: EngineGate, key: str, args: dict[str, Any],
                 principal: str | None) -> dict[str, Any]:
    """Route validated arguments to the engine operation ``key``."""
    # What the limit says: UTF-8 bytes (json.dumps' default ASCII escaping would count an
    # emoji as 12 bytes). Lone surrogates pass here; the engine refuses them by name.
    size = len(json.dumps(args, default=str, ensure_ascii=False).encode("utf-8",
                                                                        "surrogatepass"))
    if size > MAX_ARGUMENT_BYTES:
        raise InvalidInputError(f"arguments are {size:,} bytes; the limit is "
                                f"{MAX_ARGUMENT_BYTES:,}")
    a = {k: v for k, v in args.items() if v is not None}
    if key == "plan":
        return gate.run(lambda e: e.plan(principal=principal, **a))
    if key == "precheck":
        return gate.run(lambda e: e.precheck(a.pop("task_id"), a.pop("tool"),
                                             principal=principal, **a))
    if key == "observe":
        return gate.run(lambda e: e.observe(a.pop("task_id"), a.pop("kind"),
                                            principal=principal, **a))
    if key == "recall":
        return gate.run(lambda e: e.recall(a.pop("ref"), a.pop("op", "head"),
                                           principal=principal, **a))
    if key == "checkpoint":
        return gate.run(lambda e: e.checkpoint(a.pop("task_id"), a.pop("mode"),
                                               principal=principal, **a))
    return gate.run(lambda e: e.handoff(a.pop("mode"), principal=principal, **a))


def _make_tool(defn: ToolDef, gate: EngineGate, validators: Validators, dotted: bool) -> Tool:
    props = list(defn.schema["properties"])

    def handler(ctx: Context, **kwargs: Any) -> CallToolResult:
        try:
            args = validators.check(defn.key, {k: v for k, v in kwargs.items()
                                               if v is not None})
            key = defn.key
            if key == "call":
                key, args = args["op"], validators.check(args["op"], args["args"])
            hook_format = args.pop("format", "json") if key == "precheck" else "json"
        except Exception as exc:  # every failure becomes an isError result, never a crash
            return error_result(exc)
        if hook_format != "json":  # an mcp_tool hook: the client's decision JSON as text
            args["client_format"] = hook_format
            return hook_result(lambda: _call_engine(gate, key, args, principal_of(ctx)))
        try:
            answer = _call_engine(gate, key, args, principal_of(ctx))
        except Exception as exc:
            return error_result(exc)
        try:
            return ok_result(key, answer)
        except Exception as exc:  # the engine call committed: say so, never "retry"
            return error_result(exc, committed=True)

    def tool_fn(ctx: Context, **kwargs: Any) -> CallToolResult:
        return handler(ctx, **kwargs)

    # MCPServer derives the call signature from the function: give it one keyword per
    # schema property, typed Any, because the hand-written schema is what validates. A
    # string property is typed str: the SDK parses a JSON-looking string given for any
    # other type into an object (an observed '{"ok": true}' must stay the text it was).
    tool_fn.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Context)]
        + [inspect.Parameter(p, inspect.Parameter.KEYWORD_ONLY, default=None,
                             annotation=str
                             if defn.schema["properties"][p].get("type") == "string" else Any)
           for p in props],
        return_annotation=CallToolResult)
    tool = Tool.from_function(
        tool_fn, name=defn.name(dotted), title=defn.title,
        description=defn.description,
        annotations=ToolAnnotations(read_only_hint=defn.read_only,
                                    destructive_hint=defn.destructive,
                                    idempotent_hint=defn.idempotent, open_world_hint=False))
    tool.parameters = defn.schema
    return tool


def argument_guard(defs: tuple[ToolDef, ...], dotted: bool) -> Any:
    """Middleware: the whole raw arguments of a tools/call are checked against the
    hand-written schema before the SDK drops keys it does not know (a misspelt
    ``objectve`` must be an error, not silently ignored)."""
    validators = Validators(defs)
    by_name = {d.name(dotted): d.key for d in defs}

    async def guard(ctx: Any, call_next: Any) -> Any:
        if ctx.method == "tools/call" and isinstance(ctx.params, Mapping):
            key = by_name.get(str(ctx.params.get("name")))
            if key is not None:
                arguments = ctx.params.get("arguments") or {}
                try:
                    validators.check(key, arguments)
                    allowed = set(validators.properties(key))
                    extra = sorted(set(arguments) - allowed) if isinstance(arguments, dict) \
                        else []
                    if extra:
                        raise InvalidInputError(
                            f"unknown argument(s) {extra} for {ctx.params.get('name')}; "
                            f"accepted: {', '.join(sorted(allowed))}")
                except InvalidInputError as exc:
                    return error_result(exc)
        return await call_next(ctx)

    return guard


def build_tools(gate: EngineGate, *, dotted: bool, dispatch_only: bool,
                hook_tool: bool = False) -> list[Tool]:
    """The six tools (or the single dispatch tool), and ``osiris_hook`` if asked for."""
    validators = Validators((*TOOLS, DISPATCH))
    tools = [_make_tool(defn, gate, validators, dotted)
             for defn in ((DISPATCH,) if dispatch_only else TOOLS)]
    if hook_tool:
        tools.append(_hook_tool(gate, dotted))
    return tools


def _hook_tool(gate: EngineGate, dotted: bool) -> Tool:
    """``osiris_hook``, listed (Claude Code calls only a tool its server lists). Its calls
    are answered by :func:`hook_calls` before the SDK parses them; this function serves a
    server built without that middleware."""
    def tool_fn(ctx: Context, **kwargs: Any) -> CallToolResult:
        return hook_answer(gate, {k: v for k, v in kwargs.items() if v is not None})

    tool_fn.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Context)]
        + [inspect.Parameter(p, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Any)
           for p in HOOK.schema["properties"]],
        return_annotation=CallToolResult)
    tool = Tool.from_function(
        tool_fn, name=HOOK.name(dotted), title=HOOK.title, description=HOOK.description,
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False,
                                    idempotent_hint=False, open_world_hint=False))
    tool.parameters = HOOK.schema
    return tool


def hook_calls(gate: EngineGate, dotted: bool) -> Any:
    """Middleware: a tools/call of ``osiris_hook`` answered from its raw arguments (the
    SDK would turn a string result that looks like JSON into an object)."""
    name = HOOK.name(dotted)

    async def answer(ctx: Any, call_next: Any) -> Any:
        if ctx.method == "tools/call" and isinstance(ctx.params, Mapping) \
                and ctx.params.get("name") == name:
            arguments = ctx.params.get("arguments") or {}
            return await anyio.to_thread.run_sync(hook_answer, gate, arguments)
        return await call_next(ctx)

    return answer


_HOOK_VALIDATOR = jsonschema.Draft202012Validator(HOOK.schema)


def hook_answer(gate: EngineGate, arguments: object) -> CallToolResult:
    """Claude Code's ``mcp_tool`` hook, answered as the command hook answers (the same
    :func:`osiris.clients.hooks.run_hook`, routing included) without a process per call.
    The text is the hook's decision JSON (empty: none). A problem is a warning for the
    user, never an error result that could stop the user's tool."""
    from osiris.clients import hooks

    fields = dict(arguments) if isinstance(arguments, Mapping) else {}
    event = str(fields.pop("event", "") or "?")
    try:
        if not isinstance(arguments, Mapping):
            raise InvalidInputError("osiris_hook's arguments must be an object")
        unknown = sorted(set(fields) - set(HOOK.schema["properties"]))
        if unknown:
            raise InvalidInputError(f"unknown argument(s) {unknown} for osiris_hook")
        errors = sorted(_HOOK_VALIDATOR.iter_errors(arguments), key=lambda e: list(e.path))
        if errors:
            raise InvalidInputError("invalid arguments for osiris_hook: " + "; ".join(
                f"{'.'.join(str(p) for p in e.path) or 'arguments'}: {_problem(e)}"
                for e in errors[:5]))
        raw = client_hooks.hook_input(fields)
    except OsirisError as exc:
        outcome = hooks.skipped(gate.engine.settings, event, f"{exc.code}: {exc}", b"")
    else:
        outcome = gate.run_hook(lambda e: hooks.hook_in_server(e, event, raw))
    if outcome.stderr:
        log.warning("%s", outcome.stderr.strip())
    return CallToolResult(content=[TextContent(type="text", text=outcome.stdout)],
                          structured_content={"exit_code": outcome.exit_code,
                                              "problem": outcome.problem})
