"""A Python peer, driven through its real API in its own interpreter.

Run by the benchmark as ``<peers-venv>/bin/python peer_worker.py contextweaver|headroom``:
the peers pin an older ``mcp`` than OSIRIS, so they live in a virtual environment of
their own and this script imports nothing of OSIRIS. It speaks JSON lines on stdin and
stdout::

    {"op": "tools"}                    -> {"definitions": [...]}  (what it adds to the prompt)
    {"op": "reset", "user": "<task>"}  -> {"ok": true}            (a new session)
    {"op": "keep", "output": s, "tool": t, "args": {...}} -> {"kept": s, "handles": [...]}
    {"op": "page", "handles": [...], "k": 0}  -> {"exchange": [call, answer] or null}

Neither peer can search a kept output (the scripted agent then uses the client's own
search, :mod:`osiris.harness.replay.retrieval`); ``page`` is each one's own way back:
contextweaver shows an artifact in 200-line windows (``tool_view``), headroom expands a
hash marker to the whole original (``headroom_retrieve``), one marker per page.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

PAGE_LINES = 200


class ContextWeaver:
    """contextweaver 0.18.2: the firewall facade and ``tool_view`` drill-down."""

    def __init__(self) -> None:
        from contextweaver import compact_tool_result
        from contextweaver.store.artifacts import InMemoryArtifactStore

        self._compact = compact_tool_result
        self._store_type = InMemoryArtifactStore
        self.store = InMemoryArtifactStore()

    def tools(self) -> list[dict[str, Any]]:
        from contextweaver.adapters.mcp_gateway import make_gateway_meta_tools

        return [t for t in make_gateway_meta_tools(None) if t.get("name") == "tool_view"]

    def reset(self, user: str) -> None:
        self.store = self._store_type()

    def keep(self, output: str, tool: str, args: dict[str, Any]) -> tuple[str, list[str]]:
        result = self._compact(output, artifact_store=self.store)
        if not result.firewalled:
            return output, []
        return json.dumps(result.payload, ensure_ascii=False), [result.artifact_ref]

    def page(self, handles: list[str], k: int) -> list[str] | None:
        for handle in handles:
            total = self.store.get(handle).decode("utf-8", "replace").count("\n") + 1
            pages = (total + PAGE_LINES - 1) // PAGE_LINES
            if k < pages:
                selector = {"type": "lines", "start": k * PAGE_LINES,
                            "end": (k + 1) * PAGE_LINES}
                answer = self.store.drilldown(handle, selector)
                call = json.dumps({"tool": "tool_view",
                                   "args": {"handle": handle, "selector": selector}})
                return [call, answer]
            k -= pages
        return None


class Headroom:
    """headroom-ai 0.42.0: ``compress`` with CCR markers and ``headroom_retrieve``."""

    HASH = re.compile(r"hash=([0-9a-f]{8,})")

    def __init__(self) -> None:
        from headroom import compress
        from headroom.ccr.response_handler import CCRResponseHandler
        from headroom.ccr.tool_calls import CCRToolCall

        self._compress = compress
        self._handler = CCRResponseHandler
        self._call = CCRToolCall
        self.user = "task"

    def tools(self) -> list[dict[str, Any]]:
        from headroom.ccr.tool_injection import create_ccr_tool_definition

        definition = create_ccr_tool_definition()
        return [definition] if isinstance(definition, dict) else []

    def reset(self, user: str) -> None:
        # headroom caches pipelines by content in the module; a session starts clean.
        module = sys.modules.get("headroom.compress")
        if module is not None and hasattr(module, "_pipeline"):
            module._pipeline = None  # type: ignore[attr-defined]
        self.user = user

    def keep(self, output: str, tool: str, args: dict[str, Any]) -> tuple[str, list[str]]:
        messages = [
            {"role": "user", "content": self.user},
            {"role": "assistant", "content": None, "tool_calls": [{
                "id": "call_1", "type": "function",
                "function": {"name": tool, "arguments": json.dumps(args)}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": output}]
        kept = self._compress(messages, model="gpt-4o", protect_recent=0).messages[-1]["content"]
        kept = kept if isinstance(kept, str) else json.dumps(kept)
        return kept, list(dict.fromkeys(self.HASH.findall(kept)))

    def page(self, handles: list[str], k: int) -> list[str] | None:
        if k >= len(handles):
            return None
        handle = handles[k]
        result = self._handler()._execute_retrieval(self._call("r1", handle, "headroom_retrieve"))
        answer = result.content if isinstance(result.content, str) else \
            json.dumps(result.content)
        return [json.dumps({"tool": "headroom_retrieve", "args": {"hash": handle}}), answer]


DISTRIBUTIONS = {"contextweaver": "contextweaver", "headroom": "headroom-ai"}
PEERS: dict[str, type[ContextWeaver | Headroom]] = {"contextweaver": ContextWeaver,
                                                  "headroom": Headroom}


def main() -> int:
    """Serve one peer on stdin/stdout until EOF."""
    peer: ContextWeaver | Headroom = PEERS[sys.argv[1]]()
    for line in sys.stdin:
        request = json.loads(line)
        op = request["op"]
        try:
            if op == "tools":
                reply: dict[str, Any] = {"definitions": peer.tools()}
            elif op == "version":
                from importlib.metadata import version

                reply = {"version": version(DISTRIBUTIONS[sys.argv[1]])}
            elif op == "reset":
                peer.reset(request.get("user", "task"))
                reply = {"ok": True}
            elif op == "keep":
                kept, handles = peer.keep(request["output"], request["tool"], request["args"])
                reply = {"kept": kept, "handles": handles}
            elif op == "page":
                reply = {"exchange": peer.page(request["handles"], int(request["k"]))}
            else:
                reply = {"error": f"unknown op {op!r}"}
        except Exception as exc:  # report, do not die: the harness decides
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
