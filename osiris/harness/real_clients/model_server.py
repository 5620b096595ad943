"""A scripted model on 127.0.0.1 for the real clients (Claude Code, Codex), offline.

The clients run their tools and hooks for real and send every prompt here, where it is
logged and can be counted exactly (``../shared/FACTS.md``, "Real clients, offline"). The
reply to each prompt comes from a :class:`Script`: it sees the parsed request and returns
the next :data:`Action` (a tool call or a final text). Two wire APIs:

* Anthropic Messages (Claude Code): ``POST /v1/messages`` (``?beta=true``), SSE when
  ``stream`` is true, plain JSON otherwise; ``POST /v1/messages/count_tokens``.
* OpenAI Responses (Codex): ``POST /v1/responses``, SSE.
* OpenAI Chat Completions (litellm's ``openai/…`` models, which mini-swe-agent drives):
  ``POST /v1/chat/completions``, SSE chunks when ``stream`` is true, JSON otherwise.

The server never waits on anything but the socket: a script that raises, returns
nonsense or is asked something it did not expect yields a final text, so a client can
always finish its turn. Request bodies are bounded (:data:`MAX_BODY_BYTES`); unknown
paths get a 404 JSON error. Every request, answered or not, is logged in memory and
optionally appended to a JSONL file.
"""

from __future__ import annotations

import gzip
import itertools
import json
import logging
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from osiris.harness.real_clients.model_script import (
    ANTHROPIC,
    CHAT,
    OPENAI,
    Action,
    FinalText,
    ModelRequest,
    Script,
    ToolCall,
    prompt_tokens,
)

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 64 * 1024 * 1024
"""Largest request body read (a long Claude Code session re-sends a few MB at most)."""
SOCKET_TIMEOUT_S = 60.0
"""An idle keep-alive connection is dropped after this long (its thread ends)."""
DEFAULT_MODEL = "scripted-model"


@dataclass(frozen=True)
class LoggedRequest:
    """One request the server received."""

    index: int
    method: str
    path: str
    query: str
    api: str | None
    """``anthropic``, ``openai`` or ``chat`` for model prompts, None for anything else."""
    body_bytes: int
    body: Any
    """The parsed JSON body (None when absent or not JSON)."""
    status: int
    action: dict[str, Any] | None = None
    """What the script answered (``{"tool": …, "input": …}`` or ``{"text": …}``)."""
    error: str | None = None
    """Why the request was refused, or why the script's answer was replaced."""
    received_s: float = 0.0
    """When the request had been read (``time.monotonic()``)."""
    answered_s: float = 0.0
    """When its answer was ready to send: the gap to the next prompt is the client's
    time (its tool, its hooks) between two model turns."""

    def as_json(self) -> dict[str, Any]:
        """The entry as one JSON object (a line of the JSONL log)."""
        return asdict(self)


class ModelServer:
    """The scripted model, serving on ``127.0.0.1`` (port 0: the system picks one).

    Use as a context manager; :attr:`base_url` is ``http://127.0.0.1:PORT``. The log is
    kept in memory (:meth:`requests`) and appended to ``log_path`` when given. With
    ``count_tokens=False`` the count endpoint is unknown (404), as behind a proxy that
    lacks it: Claude Code then falls back on its own limits. With ``context_window`` a
    prompt of more tokens is refused as the provider refuses it (HTTP 400, "prompt is
    too long: N tokens > W maximum")."""

    def __init__(self, script: Script, *, port: int = 0, log_path: Path | None = None,
                 count_input: Callable[[Mapping[str, Any]], int] | None = None,
                 model: str = DEFAULT_MODEL, max_body_bytes: int = MAX_BODY_BYTES,
                 count_tokens: bool = True, context_window: int | None = None) -> None:
        self._script = script
        self.context_window = context_window
        self.count_tokens = count_tokens
        self._port = port
        self._log_path = log_path
        self._count_input = count_input or prompt_tokens
        self.max_body_bytes = max_body_bytes
        self.model = model
        self._lock = threading.Lock()
        self._log: list[LoggedRequest] = []
        self._index = itertools.count()
        self._ids = itertools.count(1)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------
    def start(self) -> ModelServer:
        """Bind and serve in a background thread."""
        if self._httpd is not None:
            return self
        handler = type("_BoundHandler", (_Handler,), {"model_server": self})
        httpd = _Server(("127.0.0.1", self._port), handler)
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, name="model-server",
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket (open keep-alive connections are dropped)."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The port served (after :meth:`start`)."""
        if self._httpd is None:
            raise RuntimeError("the model server is not running")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (Claude Code's ``ANTHROPIC_BASE_URL``; Codex takes
        ``…/v1``)."""
        return f"http://127.0.0.1:{self.port}"

    # -- the log ---------------------------------------------------------------------
    def requests(self, api: str | None = None) -> list[LoggedRequest]:
        """The log so far, oldest first (only model prompts of ``api`` when given)."""
        with self._lock:
            entries = list(self._log)
        return [e for e in entries if api is None or e.api == api]

    def prompts(self, api: str | None = None) -> list[ModelRequest]:
        """The model prompts received (count_tokens excluded), as the script saw them."""
        return prompts_of(self.requests(api))

    def _record(self, entry: LoggedRequest) -> None:
        line = json.dumps(entry.as_json(), ensure_ascii=False) + "\n" if self._log_path else ""
        with self._lock:
            self._log.append(entry)
            if self._log_path is not None:
                with self._log_path.open("a", encoding="utf-8") as handle:
                    handle.write(line)

    def _next_index(self) -> int:
        with self._lock:
            return next(self._index)

    def _new_id(self, prefix: str) -> str:
        with self._lock:
            return f"{prefix}_{next(self._ids):06d}"

    # -- answering -------------------------------------------------------------------
    def _decide(self, request: ModelRequest) -> tuple[Action, str | None]:
        """The script's action, or a final text when it fails (never an exception)."""
        try:
            action = self._script.reply(request)
        except Exception as exc:  # the script is the caller's code: never let it hang us
            logger.warning("script failed on request %d: %r", request.index, exc)
            return FinalText(f"[scripted model: the script failed: {exc!r}]"), repr(exc)
        if not isinstance(action, ToolCall | FinalText):
            return FinalText("[scripted model: no action]"), f"not an action: {action!r}"
        if isinstance(action, ToolCall) and isinstance(action.input, str) and (
                request.api == ANTHROPIC):
            return (FinalText("[scripted model: a string input needs the Responses API]"),
                    "custom tool call on the Messages API")
        if isinstance(action, ToolCall) and action.call_id is None:
            prefix = "toolu" if request.api == ANTHROPIC else "call"
            action = ToolCall(action.name, action.input, self._new_id(prefix))
        return action, None


def prompts_of(entries: Iterable[LoggedRequest]) -> list[ModelRequest]:
    """The model prompts among logged requests (not count_tokens, not refused ones)."""
    return [ModelRequest(e.index, e.api, e.path, e.body) for e in entries
            if e.api is not None and e.status == HTTPStatus.OK
            and not e.path.endswith("/count_tokens") and isinstance(e.body, dict)]


def _action_json(action: Action) -> dict[str, Any]:
    if isinstance(action, ToolCall):
        return {"tool": action.name, "input": _input(action), "call_id": action.call_id}
    return {"text": action.text}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True


@dataclass
class _Reply:
    status: int
    body: bytes
    content_type: str = "application/json"
    extra: dict[str, str] = field(default_factory=dict)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = SOCKET_TIMEOUT_S
    model_server: ModelServer  # set on the bound subclass
    server_version = "osiris-scripted-model/1"

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("model server: " + format, *args)

    def do_GET(self) -> None:
        self._serve(with_body=False)

    def do_POST(self) -> None:
        self._serve(with_body=True)

    def do_HEAD(self) -> None:
        self._serve(with_body=False)

    def _serve(self, *, with_body: bool) -> None:
        try:
            self._serve_one(with_body=with_body)
        except (TimeoutError, ConnectionError):
            self.close_connection = True  # a client that stalls or leaves mid-request

    def _serve_one(self, *, with_body: bool) -> None:
        server = self.model_server
        index = server._next_index()
        url = urllib.parse.urlsplit(self.path)
        raw, refusal = self._read_body() if with_body else (b"", None)
        received = time.monotonic()
        body: Any = None
        if raw and refusal is None:
            try:
                body = json.loads(raw)
            except (ValueError, UnicodeDecodeError):
                refusal = (HTTPStatus.BAD_REQUEST, "the body is not JSON")
        api = _api_of(url.path, server.count_tokens) if self.command == "POST" else None
        action: Action | None = None
        note: str | None = None
        if refusal is not None:
            reply = _error(refusal[0], refusal[1], api)
            note = refusal[1]
        elif api is None:
            reply = _error(HTTPStatus.NOT_FOUND, f"no such endpoint: {self.command} {url.path}",
                           None)
            note = "unknown path"
        elif not isinstance(body, dict):
            reply = _error(HTTPStatus.BAD_REQUEST, "the body must be a JSON object", api)
            note = "not a JSON object"
        elif url.path.endswith("/count_tokens"):
            reply = _json_reply({"input_tokens": server._count_input(body)})
        elif server.context_window is not None and (
                (size := server._count_input(body)) > server.context_window):
            # What the provider answers a prompt over the model's window (the client
            # then compacts, as it does against the real API).
            limit = server.context_window
            message = (f"prompt is too long: {size} tokens > {limit} maximum" if api == ANTHROPIC
                       else f"Your input exceeds the context window of this model "
                            f"({size} > {limit} tokens).")
            reply = _error(HTTPStatus.BAD_REQUEST, message, api)
            note = "over the context window"
        else:
            request = ModelRequest(index, api, url.path, body)
            action, note = server._decide(request)
            reply = _answer(server, request, action)
        server._record(LoggedRequest(
            index=index, method=self.command, path=url.path, query=url.query, api=api,
            body_bytes=len(raw), body=body, status=reply.status,
            action=None if action is None else _action_json(action), error=note,
            received_s=received, answered_s=time.monotonic()))
        self._send(reply)

    def _read_body(self) -> tuple[bytes, tuple[HTTPStatus, str] | None]:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            return self._read_chunked()
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self.close_connection = True
            return b"", (HTTPStatus.BAD_REQUEST, "bad Content-Length")
        limit = self.model_server.max_body_bytes
        if length > limit or length < 0:
            self.close_connection = True  # the rest of the body is never read
            return b"", (HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"the body is over {limit} bytes")
        raw = self.rfile.read(length) if length else b""
        if len(raw) < length:
            self.close_connection = True
            return raw, (HTTPStatus.BAD_REQUEST, "the body ended early")
        return self._decoded(raw)

    def _read_chunked(self) -> tuple[bytes, tuple[HTTPStatus, str] | None]:
        chunks: list[bytes] = []
        total = 0
        while True:
            size_line = self.rfile.readline(1024)
            try:
                size = int(size_line.split(b";")[0].strip() or b"x", 16)
            except ValueError:
                self.close_connection = True
                return b"", (HTTPStatus.BAD_REQUEST, "bad chunk size")
            if size == 0:
                while self.rfile.readline(1024).strip():  # trailers
                    pass
                return self._decoded(b"".join(chunks))
            total += size
            limit = self.model_server.max_body_bytes
            if total > limit:
                self.close_connection = True
                return b"", (HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"the body is over {limit} bytes")
            chunks.append(self.rfile.read(size))
            self.rfile.readline(1024)

    def _decoded(self, raw: bytes) -> tuple[bytes, tuple[HTTPStatus, str] | None]:
        encoding = self.headers.get("Content-Encoding", "identity").lower()
        if encoding in {"", "identity"}:
            return raw, None
        if encoding == "gzip":
            try:
                decoded = gzip.decompress(raw)
            except (OSError, EOFError):
                return b"", (HTTPStatus.BAD_REQUEST, "bad gzip body")
            if len(decoded) > self.model_server.max_body_bytes:
                return b"", (HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "the body is too large")
            return decoded, None
        return b"", (HTTPStatus.UNSUPPORTED_MEDIA_TYPE, f"unsupported encoding {encoding!r}")

    def _send(self, reply: _Reply) -> None:
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.body)))
            for name, value in reply.extra.items():
                self.send_header(name, value)
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(reply.body)
        except (TimeoutError, BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client went away: nothing to answer


def _api_of(path: str, count_tokens: bool = True) -> str | None:
    if path == "/v1/messages" or (count_tokens and path == "/v1/messages/count_tokens"):
        return ANTHROPIC
    if path == "/v1/responses":
        return OPENAI
    if path in ("/v1/chat/completions", "/chat/completions"):
        return CHAT
    return None


def _json_reply(payload: Mapping[str, Any], status: int = 200) -> _Reply:
    return _Reply(status, json.dumps(payload, separators=(",", ":")).encode("utf-8"))


def _error(status: HTTPStatus, message: str, api: str | None) -> _Reply:
    if api in (OPENAI, CHAT):
        return _json_reply({"error": {"message": message, "type": "invalid_request_error",
                                      "code": None}}, status)
    return _json_reply({"type": "error", "error": {"type": "invalid_request_error" if status < 500
                                                   else "api_error", "message": message}},
                       status)


def _answer(server: ModelServer, request: ModelRequest, action: Action) -> _Reply:
    input_tokens = server._count_input(request.body)
    if request.api == ANTHROPIC:
        message = _anthropic_message(server, action, input_tokens)
        if request.body.get("stream"):
            return _sse(_anthropic_events(message))
        return _json_reply(message)
    if request.api == CHAT:
        completion = _chat_completion(server, action, input_tokens)
        if request.body.get("stream"):
            return _sse(_chat_chunks(completion), named=False)
        return _json_reply(completion)
    return _sse(_responses_events(server, action, input_tokens))


def _input(action: ToolCall) -> dict[str, Any] | str:
    return action.input if isinstance(action.input, str) else dict(action.input)


def _output_tokens(action: Action) -> int:
    text = action.text if isinstance(action, FinalText) else json.dumps(_input(action))
    return max(1, len(text) // 4)


def _anthropic_message(server: ModelServer, action: Action, input_tokens: int
                       ) -> dict[str, Any]:
    if isinstance(action, ToolCall):
        content: list[dict[str, Any]] = [{"type": "tool_use", "id": action.call_id,
                                          "name": action.name, "input": _input(action)}]
        stop = "tool_use"
    else:
        content, stop = [{"type": "text", "text": action.text}], "end_turn"
    return {"id": server._new_id("msg"), "type": "message", "role": "assistant",
            "model": server.model, "content": content, "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": _output_tokens(action),
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}


def _anthropic_events(message: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The Messages API stream of one complete message (FACTS.md gives the shapes)."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None,
             "usage": {**usage, "output_tokens": 1}}
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(message["content"]):
        if block["type"] == "tool_use":
            opening = {**block, "input": {}}
            delta = {"type": "input_json_delta",
                     "partial_json": json.dumps(block["input"], ensure_ascii=False)}
        else:
            opening = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        yield "content_block_start", {"type": "content_block_start", "index": index,
                                      "content_block": opening}
        yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                      "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield "message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": message["stop_reason"],
                                      "stop_sequence": None},
                            "usage": {"output_tokens": usage["output_tokens"]}}
    yield "message_stop", {"type": "message_stop"}


def _responses_events(server: ModelServer, action: Action, input_tokens: int
                      ) -> Iterator[tuple[str, dict[str, Any]]]:
    """The Responses API stream of one output item (what Codex reads)."""
    response_id = server._new_id("resp")
    item: dict[str, Any]
    if isinstance(action, ToolCall) and isinstance(action.input, str):
        item = {"type": "custom_tool_call", "id": server._new_id("ctc"), "status": "completed",
                "call_id": action.call_id, "name": action.name, "input": action.input}
    elif isinstance(action, ToolCall):
        item = {"type": "function_call", "id": server._new_id("fc"), "status": "completed",
                "call_id": action.call_id, "name": action.name,
                "arguments": json.dumps(_input(action), ensure_ascii=False)}
        if "." in action.name:  # a tool of a namespace (Codex lists MCP servers so)
            namespace, _, name = action.name.partition(".")
            item.update(namespace=namespace, name=name)
    else:
        item = {"type": "message", "id": server._new_id("msg"), "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": action.text, "annotations": []}]}
    shell = {"id": response_id, "object": "response", "model": server.model,
             "status": "in_progress", "output": []}
    yield "response.created", {"type": "response.created", "response": shell}
    yield "response.output_item.added", {"type": "response.output_item.added",
                                         "output_index": 0,
                                         "item": {**item, "status": "in_progress"}}
    if isinstance(action, FinalText):
        yield "response.output_text.delta", {"type": "response.output_text.delta",
                                             "item_id": item["id"], "output_index": 0,
                                             "content_index": 0, "delta": action.text}
    yield "response.output_item.done", {"type": "response.output_item.done",
                                        "output_index": 0, "item": item}
    output_tokens = _output_tokens(action)
    usage = {"input_tokens": input_tokens, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": output_tokens,
             "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": input_tokens + output_tokens}
    yield "response.completed", {"type": "response.completed",
                                 "response": {**shell, "status": "completed",
                                              "output": [item], "usage": usage}}


def _chat_completion(server: ModelServer, action: Action, input_tokens: int
                     ) -> dict[str, Any]:
    """A Chat Completions answer: one choice, a text or one function call."""
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if isinstance(action, ToolCall):
        message["tool_calls"] = [{"id": action.call_id, "type": "function", "function": {
            "name": action.name, "arguments": json.dumps(_input(action), ensure_ascii=False)}}]
        finish = "tool_calls"
    else:
        message["content"], finish = action.text, "stop"
    output_tokens = _output_tokens(action)
    return {"id": server._new_id("chatcmpl"), "object": "chat.completion",
            "created": int(time.time()), "model": server.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": input_tokens, "completion_tokens": output_tokens,
                      "total_tokens": input_tokens + output_tokens}}


def _chat_chunks(completion: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """The stream of one completion: the whole delta in one chunk, then usage, [DONE]."""
    choice = completion["choices"][0]
    message = choice["message"]
    delta: dict[str, Any] = {"role": "assistant", "content": message["content"]}
    if message.get("tool_calls"):
        delta["tool_calls"] = [{"index": 0, **call} for call in message["tool_calls"]]
    head = {k: completion[k] for k in ("id", "created", "model")}
    yield "", {**head, "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    yield "", {**head, "object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}],
               "usage": completion["usage"]}
    yield "", "[DONE]"


def _data(data: Any) -> str:
    return data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)


def _sse(events: Iterator[tuple[str, Any]], *, named: bool = True) -> _Reply:
    """Server-sent events: ``event:`` lines (Anthropic, Responses) or data only (Chat
    Completions, whose last data is the bare ``[DONE]``)."""
    body = "".join((f"event: {name}\n" if named else "") + f"data: {_data(data)}\n\n"
                   for name, data in events)
    return _Reply(200, body.encode("utf-8"), "text/event-stream; charset=utf-8",
                  {"Cache-Control": "no-cache"})
