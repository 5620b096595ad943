"""Early answers: a stdio server answers the handshake and the first ``tools/list`` from
its last start's answers while the MCP SDK is still loading.

Importing the SDK costs a stdio server most of its start (about half a second here: the
pydantic models of two protocol revisions), and a client waits for ``tools/list`` before
its first prompt. So :func:`serve_stdio` first starts a thread that imports the SDK and
builds the server, and meanwhile answers, on the process's own stdin and stdout:

* ``initialize`` (the 2025-11-25 handshake), when the start cache has the SDK's answer
  to the same requested protocol version;
* ``tools/list`` without a cursor after that, when the cache has the SDK's answer for
  the negotiated version;
* ``ping``.

The first message it cannot answer (a tool call, a parse error, the 2026-07-28 era's
first request), or the server being ready, ends this phase: the SDK's session is then
given the client's ``initialize`` again (its answer is not sent twice), the
``notifications/initialized`` that followed, and every message not yet answered, in
order. A tool call therefore waits for the SDK as before; only the handshake and the
tool list come sooner.

The answers come from :class:`~osiris.server.start_cache.StartCache`,
``$OSIRIS_HOME/server-start.json``: the SDK's own answers of an earlier start, recorded
as they went out, valid only while the fingerprint matches (OSIRIS's and the SDK's
versions and files, the settings, the operating-context file): anything that could
change an answer starts the cache anew.

Where there is no valid cache (a new home, a new OSIRIS, changed settings), the answers
are built (:func:`~osiris.server.start_cache.built_answers`) from what they are made
of: OSIRIS's hand-written tool definitions (:mod:`osiris.server.definitions`), the
operating context's instructions, and the SDK's fixed parts (capabilities, field names)
for :data:`~osiris.server.start_cache.VERIFIED_SDK`, the SDK release a test compares
them with, answer for answer. Under any other SDK release nothing is built and the
first start waits for the SDK, as without early answers.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import threading
from typing import Any

from osiris.config import Settings
from osiris.server.start_cache import Handover, StartCache

log = logging.getLogger(__name__)
_POLL_S = 0.01
EARLY_LINE_BYTES = 1 << 20
"""A line longer than this ends the early phase (handshakes are a few hundred bytes)."""


class _Builder(threading.Thread):
    def __init__(self, settings: Settings) -> None:
        super().__init__(name="osiris-server-build", daemon=True)
        self.settings = settings
        self.server: Any = None
        self.error: BaseException | None = None
        self.done = threading.Event()

    def run(self) -> None:
        try:
            from osiris.server.app import build_server

            self.server = build_server(self.settings)
        except BaseException as exc:  # re-raised on the main thread
            self.error = exc
        finally:
            self.done.set()


def serve_stdio(settings: Settings) -> None:
    """Serve MCP on stdio, answering early where the start cache allows."""
    if threading.current_thread() is threading.main_thread():
        import signal

        # As the SDK's serving does (transports.serve_stdio): Ctrl-C ends a stdio server at
        # once and quietly, here too.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    cache = StartCache.load_or_build(settings)
    builder = _Builder(settings)
    builder.start()
    handover = Handover()
    if cache.initialize and settings.early_answers:
        with contextlib.suppress(OSError):
            handover = _answer_early(cache, builder.done)
    builder.done.wait()
    if builder.error is not None:
        raise builder.error
    from osiris.server.transports import serve_stdio as serve_with_sdk

    serve_with_sdk(settings, server=builder.server, handover=handover, cache=cache)


def _answer_early(cache: StartCache, ready: threading.Event) -> Handover:
    """Answer what the cache can until the server is ready or a message needs it."""
    handover = Handover()
    buffer = b""
    negotiated: str | None = None
    while not ready.is_set():
        readable, _, _ = select.select([0], [], [], _POLL_S)
        if not readable:
            continue
        chunk = os.read(0, 1 << 16)
        if not chunk:  # the client closed stdin: the SDK's session sees the end too
            break
        buffer += chunk
        if len(buffer) > EARLY_LINE_BYTES and b"\n" not in buffer:
            break  # a long message: the SDK's transport reads it, within its own bound
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            answer, negotiated = _early_answer(line, cache, negotiated, handover)
            handover.negotiated = negotiated
            if answer is None:
                handover.replay.append(line + b"\n")
                handover.rest = buffer
                return handover
            if answer:
                _write(answer)
                log.info("answered early: %s", json.loads(line).get("method"))
    handover.rest = buffer
    return handover


def _early_answer(line: bytes, cache: StartCache, negotiated: str | None,  # noqa: PLR0911
                  handover: Handover) -> tuple[bytes | None, str | None]:  # one per case
    """The bytes to write for ``line`` (b"" for none), or None when the SDK must see it
    and everything after it."""
    try:
        msg = json.loads(line)
    except ValueError:
        return None, negotiated
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
        return None, negotiated
    method, params = msg.get("method"), msg.get("params") or {}
    if not isinstance(params, dict):
        return None, negotiated
    if method == "initialize" and negotiated is None and "id" in msg:
        result = cache.initialize.get(str(params.get("protocolVersion")))
        if not isinstance(result, dict):
            return None, negotiated
        handover.replay.append(line + b"\n")
        handover.swallow = msg["id"]
        return _response(msg["id"], result), str(result.get("protocolVersion"))
    if method == "notifications/initialized" and negotiated is not None and "id" not in msg:
        handover.replay.append(line + b"\n")
        return b"", negotiated
    if method == "ping" and "id" in msg:
        return _response(msg["id"], {}), negotiated
    if method == "tools/list" and negotiated is not None and "id" in msg \
            and not params.get("cursor") and isinstance(cache.tools.get(negotiated), dict):
        return _response(msg["id"], cache.tools[negotiated]), negotiated
    return None, negotiated


def _response(request_id: Any, result: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result},
                      separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def _write(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]
