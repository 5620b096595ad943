"""The six MCP tools (or ``osiris_call``): list, validate, call the engine, shape the answer.

The tools are served by the SDK's low-level server (:mod:`osiris.server.app`) from the
hand-written definitions (:mod:`osiris.server.definitions`): ``tools/list`` lists them
as written and ``tools/call`` checks the raw arguments against their JSON schema once
(an unknown or misspelt argument is an error, not silently dropped), then calls the
engine through its one gate. Each answer is a short text for the model plus
``structuredContent`` with the same facts. A domain error becomes an ``isError`` result
whose text says what to do next; an unexpected error is logged and reported without
internals.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import anyio.to_thread
import jsonschema
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    TextContent,
    Tool,
    ToolAnnotations,
)

from osiris.clients import adapters
from osiris.clients.hook_input import hook_input
from osiris.core.redaction import scrub
from osiris.errors import InvalidInputError, OsirisError
from osiris.server import answers
from osiris.server.definitions import DISPATCH, HOOK, TOOLS, ToolDef
from osiris.server.definitions import listed as listed_tools

if TYPE_CHECKING:
    from osiris.engine.interface import Facade

log = logging.getLogger(__name__)
T = TypeVar("T")
MAX_ARGUMENT_BYTES = 64 << 20
#: Longest error text a tool answers with (its structured copy is the same text).
MAX_ERROR_CHARS = 600


class EngineGate:
    """The one way to the engine: tools, resources, the prompt and hooks all call it
    here, one at a time (requests are served concurrently, in worker threads)."""

    def __init__(self, engine: Facade) -> None:
        self._engine = engine
        self._lock = threading.Lock()

    def run(self, fn: Callable[[Facade], T]) -> T:
        """Call ``fn(engine)`` alone."""
        with self._lock:
            return fn(self._engine)

    async def call(self, fn: Callable[[Facade], T]) -> T:
        """:meth:`run` in a worker thread (the event loop keeps serving)."""
        return await anyio.to_thread.run_sync(self.run, fn)


def principal_of(ctx: Any) -> str | None:
    """The HTTP bearer identity of the request (None on stdio and in process): what
    :class:`osiris.server.transports.BearerAuth` put in the request's state."""
    state = getattr(getattr(ctx, "request", None), "state", None)
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


def ok_result(tool: str, found: Mapping[str, Any]) -> CallToolResult:
    """Short text plus the structured answer."""
    answer = dict(found)
    return CallToolResult(content=[TextContent(type="text", text=answers.text_of(tool, answer))],
                          structured_content=answers.model_facing(answer))


def hook_result(precheck: Callable[[], Mapping[str, Any]],
                client: adapters.Adapter) -> CallToolResult:
    """``precheck(format="claude-code")``: the PreToolUse decision as the text (what an
    ``mcp_tool`` hook parses), the precheck answer as structured content. A failure
    leaves the user's tool alone: no decision, a warning for the user."""
    try:
        answer: dict[str, Any] = dict(precheck())
        doc = client.before(answer)
        answer.pop("hook", None)
    except Exception as exc:
        if not isinstance(exc, OsirisError):
            log.exception("unexpected error in an OSIRIS hook precheck")
        problem = f"{exc.code}: {exc}" if isinstance(exc, OsirisError) else \
            f"internal error {type(exc).__name__}"
        answer, doc = {"error": problem}, adapters.allow_with_warning(problem)
    return CallToolResult(content=[TextContent(type="text",
                                               text=adapters.decision_json(doc))],
                          structured_content=answer)


class Validators:
    """One compiled JSON-schema validator per tool definition: the one validation pass."""

    def __init__(self, defs: tuple[ToolDef, ...], names: Mapping[str, str]) -> None:
        self._by_key = {d.key: jsonschema.Draft202012Validator(d.schema) for d in defs}
        self._props = {d.key: frozenset(d.schema["properties"]) for d in defs}
        self._names = names

    def check(self, key: str, arguments: object) -> dict[str, Any]:
        """The arguments, or InvalidInputError listing every problem (an unknown
        argument included: a misspelt ``objectve`` must not be silently ignored)."""
        name = self._names.get(key, f"osiris_{key}")
        if not isinstance(arguments, dict):
            raise InvalidInputError(f"the arguments of {name} must be an object")
        errors = sorted(self._by_key[key].iter_errors(arguments), key=lambda e: list(e.path))
        if errors:
            details = "; ".join(
                f"{'.'.join(str(p) for p in e.path) or 'arguments'}: {_problem(e)}"
                for e in errors[:5])
            raise InvalidInputError(f"invalid arguments for {name}: {details}")
        extra = sorted(set(arguments) - self._props[key])
        if extra:
            raise InvalidInputError(f"unknown argument(s) {extra} for {name}; accepted: "
                                    f"{', '.join(sorted(self._props[key]))}")
        return arguments


def _problem(error: jsonschema.ValidationError) -> str:
    """jsonschema's message with the offending value cut to a short, scrubbed excerpt
    (its own message quotes the whole value: a 5 MiB list would come back as the error)."""
    whole, message = repr(error.instance), str(error.message)
    if whole in message:
        return message.replace(whole, excerpt(error.instance), 1)
    return bounded_text(message, 200)


def _call_engine(engine: Facade, key: str, args: dict[str, Any],
                 principal: str | None) -> Mapping[str, Any]:
    """Route validated arguments to the engine operation ``key``."""
    a = {k: v for k, v in args.items() if v is not None}
    if key == "plan":
        return engine.plan(principal=principal, **a)
    if key == "precheck":
        return engine.precheck(a.pop("task_id"), a.pop("tool"), principal=principal, **a)
    if key == "observe":
        return engine.observe(a.pop("task_id"), a.pop("kind"), principal=principal, **a)
    if key == "recall":
        return engine.recall(a.pop("ref"), a.pop("op", "head"), principal=principal, **a)
    if key == "checkpoint":
        return engine.checkpoint(a.pop("task_id"), a.pop("mode"), principal=principal, **a)
    return engine.handoff(a.pop("mode"), principal=principal, **a)


def _check_size(args: dict[str, Any]) -> None:
    # What the limit says: UTF-8 bytes (json.dumps' default ASCII escaping would count an
    # emoji as 12 bytes). Lone surrogates pass here; the engine refuses them by name.
    size = len(json.dumps(args, default=str, ensure_ascii=False).encode("utf-8",
                                                                        "surrogatepass"))
    if size > MAX_ARGUMENT_BYTES:
        raise InvalidInputError(f"arguments are {size:,} bytes; the limit is "
                                f"{MAX_ARGUMENT_BYTES:,}")


def _listed(defn: ToolDef, dotted: bool) -> Tool:
    return Tool(name=defn.name(dotted), title=defn.title, description=defn.description,
                input_schema=defn.schema, output_schema=defn.output_schema,
                annotations=ToolAnnotations(read_only_hint=defn.read_only,
                                            destructive_hint=defn.destructive,
                                            idempotent_hint=defn.idempotent,
                                            open_world_hint=False))


class ToolRouter:
    """``tools/list`` and ``tools/call`` for the low-level server: the six tools (or
    ``osiris_call`` alone), and ``osiris_hook`` when asked for."""

    def __init__(self, gate: EngineGate, *, dotted: bool, dispatch_only: bool,
                 hook_tool: bool = False, surface: str = "full") -> None:
        self.gate = gate
        listed = listed_tools(dispatch_only=dispatch_only, hook_tool=hook_tool,
                              surface=surface)
        self._tools = ListToolsResult(tools=[_listed(d, dotted) for d in listed])
        self._by_name = {d.name(dotted): d.key for d in listed}
        self._schemas = {d.name(dotted): d.schema for d in listed}
        # osiris_call's inner operations are checked against the six schemas.
        self._validators = Validators((*TOOLS, DISPATCH),
                                      {d.key: d.name(dotted) for d in (*TOOLS, DISPATCH)})

    def input_schema(self, name: str) -> dict[str, Any] | None:
        """A listed tool's input schema (the SDK checks ``Mcp-Param-*`` headers with it)."""
        return self._schemas.get(name)

    async def list_tools(self, ctx: Any, params: Any) -> ListToolsResult:
        """The listed tools, as written in :mod:`osiris.server.definitions`."""
        return self._tools

    async def call_tool(self, ctx: Any, params: CallToolRequestParams) -> CallToolResult:
        """One tool call: its raw arguments validated once, then the engine, in a
        worker thread. Never raises: every failure is an ``isError`` result."""
        key = self._by_name.get(params.name)
        arguments: object = params.arguments if params.arguments is not None else {}
        if key == "hook":
            return await anyio.to_thread.run_sync(hook_answer, self.gate, arguments,
                                                  principal_of(ctx))
        if key is None:
            return error_result(InvalidInputError(
                f"unknown tool {excerpt(params.name)}; listed: {', '.join(self._by_name)}"))
        principal = principal_of(ctx)
        return await anyio.to_thread.run_sync(self._answer, key, arguments, principal)

    def _answer(self, key: str, arguments: object, principal: str | None) -> CallToolResult:
        try:
            args = dict(self._validators.check(key, arguments))
            if key == "call":
                key, args = args["op"], dict(self._validators.check(args["op"], args["args"]))
            _check_size(args)
            hook_format = args.pop("format", "json") if key == "precheck" else "json"
        except Exception as exc:  # every failure becomes an isError result, never a crash
            return error_result(exc)
        if hook_format != "json":  # an mcp_tool hook: the client's decision JSON as text
            client = adapters.adapter(hook_format)
            args["client"] = client.traits
            return hook_result(lambda: self.gate.run(
                lambda e: _call_engine(e, key, args, principal)), client)
        try:
            answer = self.gate.run(lambda e: _call_engine(e, key, args, principal))
        except Exception as exc:
            return error_result(exc)
        try:
            return ok_result(key, answer)
        except Exception as exc:  # the engine call committed: say so, never "retry"
            return error_result(exc, committed=True)


_HOOK_VALIDATOR = Validators((HOOK,), {})


def hook_answer(gate: EngineGate, arguments: object,
                principal: str | None = None) -> CallToolResult:
    """Claude Code's ``mcp_tool`` hook, answered as the command hook answers (the same
    :func:`osiris.clients.hooks.run_hook`, routing included) without a process per call.
    The text is the hook's decision JSON (empty: none). A problem is a warning for the
    user, never an error result that could stop the user's tool. ``principal``: the
    caller's bearer identity: the session's task, and so its refs, are bound to it."""
    from osiris.clients import hooks

    fields = dict(arguments) if isinstance(arguments, Mapping) else {}
    event = str(fields.pop("event", "") or "?")
    try:
        _HOOK_VALIDATOR.check("hook", arguments)
        raw = hook_input(fields)
    except OsirisError as exc:
        problem = f"{exc.code}: {exc}"
        outcome = gate.run(lambda e: hooks.skipped(e.settings, event, problem, b""))
    else:
        outcome = gate.run(lambda e: hooks.hook_in_server(e, event, raw,
                                                          principal=principal))
    if outcome.stderr:
        log.warning("%s", outcome.stderr.strip())
    return CallToolResult(content=[TextContent(type="text", text=outcome.stdout)],
                          structured_content={"exit_code": outcome.exit_code,
                                              "problem": outcome.problem})
