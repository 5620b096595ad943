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

The answers come from :class:`StartCache`, ``$OSIRIS_HOME/server-start.json``: the SDK's
own answers of an earlier start, recorded as they went out, valid only while the
fingerprint matches (OSIRIS's and the SDK's versions and files, the settings, the
operating-context file): anything that could change an answer starts the cache anew.

Where there is no valid cache (a new home, a new OSIRIS, changed settings), the answers
are built (:func:`built_answers`) from what they are made of: OSIRIS's hand-written tool
definitions (:mod:`osiris.server.definitions`), the operating context's instructions,
and the SDK's fixed parts (capabilities, field names) for :data:`VERIFIED_SDK`, the SDK
release a test compares them with, answer for answer. Under any other SDK release
nothing is built and the first start waits for the SDK, as without early answers.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import select
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from osiris._version import __version__
from osiris.config import Settings, settings_to_wire

log = logging.getLogger(__name__)
CACHE_NAME = "server-start.json"
_POLL_S = 0.01
EARLY_LINE_BYTES = 1 << 20
"""A line longer than this ends the early phase (handshakes are a few hundred bytes)."""


def fingerprint(settings: Settings) -> str:
    """What the SDK's answers to the handshake and ``tools/list`` depend on."""
    import importlib.util

    files: list[tuple[str, int, int]] = []
    roots = [Path(__file__).resolve().parent.parent]
    spec = importlib.util.find_spec("mcp")
    if spec is not None and spec.origin:
        roots.append(Path(spec.origin).parent)
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            with contextlib.suppress(OSError):
                info = path.stat()
                files.append((str(path), info.st_mtime_ns, info.st_size))
    sidecar = settings.sidecar_path
    side = None
    if sidecar is not None:
        with contextlib.suppress(OSError):
            info = sidecar.stat()
            side = (str(sidecar), info.st_mtime_ns, info.st_size)
    doc = [__version__, sys.version, settings_to_wire(settings), side, files]
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()


VERIFIED_SDK = {"mcp": "2.3.0", "mcp_types": "2.3.0"}
"""The MCP SDK release (its distributions' versions) whose answers :func:`built_answers`
reproduces: ``tests/server/test_early.py`` compares them with the SDK's own, for every
variant of the tool list and every version in :data:`BUILT_VERSIONS`."""
BUILT_VERSIONS = ("2025-06-18", "2025-11-25")
"""Requested protocol versions answered from built answers (the SDK agrees to each)."""
_CAPABILITIES = {"prompts": {"listChanged": False},
                 "resources": {"listChanged": False, "subscribe": False},
                 "tools": {"listChanged": False}}


def sdk_versions() -> dict[str, str] | None:
    """The installed ``mcp`` and ``mcp_types`` versions, read from their distributions'
    folder names beside the packages (``importlib.metadata`` would cost a start 40 ms);
    None when either is missing or ambiguous."""
    import importlib.util

    found: dict[str, str] = {}
    for name in VERIFIED_SDK:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.origin:
            return None
        folder = Path(spec.origin).parent.parent
        try:
            versions = [entry[len(name) + 1:-len(".dist-info")] for entry in os.listdir(folder)
                        if entry.startswith(name + "-") and entry.endswith(".dist-info")]
        except OSError:
            return None
        if len(versions) != 1:
            return None
        found[name] = versions[0]
    return found


def built_answers(settings: Settings) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """``initialize`` and ``tools/list`` answers made without the SDK (see the module
    docstring), by requested and by negotiated protocol version; None under an SDK other
    than :data:`VERIFIED_SDK`."""
    return answers_for(settings) if sdk_versions() == VERIFIED_SDK else None


def answers_for(settings: Settings) -> tuple[dict[str, Any], dict[str, Any]]:
    """The answers :func:`built_answers` gives, whatever SDK is installed."""
    from osiris.core.operating_context import instructions_text
    from osiris.engine.operating_context import OperatingContextLoader
    from osiris.server.definitions import DISPATCH, HOOK, TOOLS

    context, _ = OperatingContextLoader(settings.sidecar_path).load()
    dotted = settings.tool_names == "dotted"
    listed = [*((DISPATCH,) if settings.dispatch_only else TOOLS),
              *((HOOK,) if settings.hook_tool else ())]
    tools = {"tools": [
        {"name": t.name(dotted), "title": t.title, "description": t.description,
         "inputSchema": t.schema,
         "annotations": {"readOnlyHint": t.read_only, "destructiveHint": t.destructive,
                         "idempotentHint": t.idempotent, "openWorldHint": False}}
        for t in listed]}
    initialize = {version: {"protocolVersion": version, "capabilities": _CAPABILITIES,
                            "serverInfo": {"name": "osiris", "title": "OSIRIS",
                                           "version": __version__},
                            "instructions": instructions_text(context)}
                  for version in BUILT_VERSIONS}
    return initialize, dict.fromkeys(BUILT_VERSIONS, tools)


@dataclass
class StartCache:
    """The SDK's answers of an earlier start (see the module docstring)."""

    path: Path
    key: str
    initialize: dict[str, Any] = field(default_factory=dict)
    """Requested protocol version -> the SDK's ``initialize`` result."""
    tools: dict[str, Any] = field(default_factory=dict)
    """Negotiated protocol version -> the SDK's first ``tools/list`` result."""
    changed: bool = False

    @classmethod
    def load(cls, settings: Settings) -> StartCache:
        """The cache for ``settings`` (empty when absent, unreadable or stale)."""
        cache = cls(settings.home / CACHE_NAME, fingerprint(settings))
        try:
            doc = json.loads(cache.path.read_text("utf-8"))
        except (OSError, ValueError):
            return cache
        if isinstance(doc, dict) and doc.get("key") == cache.key:
            cache.initialize = dict(doc.get("initialize") or {})
            cache.tools = dict(doc.get("tools") or {})
        return cache

    @classmethod
    def load_or_build(cls, settings: Settings) -> StartCache:
        """The cache for ``settings``; where it holds nothing, the built answers."""
        cache = cls.load(settings)
        if not cache.initialize:
            built = built_answers(settings)
            if built is not None:  # saved once the SDK's own answers have confirmed them
                cache.initialize, cache.tools = built
                cache.changed = True
        return cache

    def record(self, kind: str, version: str, result: Any) -> None:
        """An answer the SDK gave (kept when it differs from the one held)."""
        held = self.initialize if kind == "initialize" else self.tools
        if isinstance(version, str) and isinstance(result, dict) and held.get(version) != result:
            held[version] = result
            self.changed = True

    def save(self) -> None:
        """Write the cache if an answer changed (atomically; never fails the server)."""
        if not self.changed:
            return
        text = json.dumps({"key": self.key, "initialize": self.initialize,
                           "tools": self.tools}, separators=(",", ":"))
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, self.path)
            self.changed = False
        except OSError as exc:
            log.info("could not write %s: %s", self.path, exc)
            with contextlib.suppress(OSError):
                tmp.unlink()


@dataclass
class Handover:
    """What the early phase leaves for the SDK's session."""

    replay: list[bytes] = field(default_factory=list)
    """Lines for the SDK, in order (an answered ``initialize`` first)."""
    rest: bytes = b""
    """Bytes read from stdin after the last whole line."""
    swallow: Any = None
    """The id of the replayed ``initialize``, whose second answer is not sent."""
    negotiated: str | None = None
    """The protocol version the early ``initialize`` answer settled on."""


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
