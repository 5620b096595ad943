"""The start cache of a stdio server: the SDK's answers to the handshake and the first
``tools/list`` of an earlier start (``$OSIRIS_HOME/server-start.json``), or answers built
from OSIRIS's tool definitions, and what the early phase hands over to the SDK's session
(:class:`Handover`). :mod:`osiris.server.early` answers from it while the SDK loads;
:mod:`osiris.server.transports` records the SDK's own answers into it."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from osiris._version import __version__
from osiris.config import Settings, settings_to_wire

log = logging.getLogger(__name__)
CACHE_NAME = "server-start.json"


def fingerprint(settings: Settings) -> str:
    """What the SDK's answers to the handshake and ``tools/list`` depend on."""
    import importlib.util

    files: list[tuple[str, int, int]] = []
    roots = [Path(__file__).resolve().parent.parent]
    spec = importlib.util.find_spec("mcp")
    if spec is not None and spec.origin:
        roots.append(Path(spec.origin).parent)
    # The tools' output schemas are data, not code: listed by name.
    data = [roots[0] / "contracts" / "output_schemas.json"]
    for root in roots:
        for path in sorted(root.rglob("*.py")) + (data if root == roots[0] else []):
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
    from osiris.server.definitions import listed as listed_tools

    context, _ = OperatingContextLoader(settings.sidecar_path).load()
    dotted = settings.tool_names == "dotted"
    listed = listed_tools(dispatch_only=settings.dispatch_only,
                          hook_tool=settings.hook_tool, surface=settings.surface)
    tools = {"tools": [
        {"name": t.name(dotted), "title": t.title, "description": t.description,
         "inputSchema": t.schema, "outputSchema": t.output_schema,
         "annotations": {"readOnlyHint": t.read_only, "destructiveHint": t.destructive,
                         "idempotentHint": t.idempotent, "openWorldHint": False}}
        for t in listed]}
    capabilities = {"tools": _CAPABILITIES["tools"]} if settings.surface == "hooks" \
        else _CAPABILITIES
    instructions = instructions_text(context, settings.surface)
    initialize = {version: {"protocolVersion": version, "capabilities": capabilities,
                            "serverInfo": {"name": "osiris", "title": "OSIRIS",
                                           "version": __version__},
                            **({"instructions": instructions} if instructions else {})}
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
            # The early phase may come before anything else made the home: private, as the
            # store makes it (osiris.store.fsutil, which a server may not import).
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
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
