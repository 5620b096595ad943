"""A Python peer, driven through its real API in its own interpreter.

Run by the benchmark as ``<peers-venv>/bin/python peer_worker.py contextweaver|headroom``:
the peers pin an older ``mcp`` than OSIRIS, so they live in a virtual environment of
their own and this script imports nothing of OSIRIS. It speaks JSON lines on stdin and
stdout::

    {"op": "tools"}                    -> {"definitions": [...]}  (what it adds to the prompt)
    {"op": "reset", "user": "<task>"}  -> {"ok": true}            (a new session)
    {"op": "keep", "output": s, "tool": t, "args": {...}} -> {"kept": s, "handles": [...]}
    {"op": "retrieve", "handles": [...], "needs": [...]}  -> {"exchanges": [[call, answer], ...]}

``retrieve`` plays the agent's honest strategy with the peer's own retrieval: headroom
expands each hash marker (``headroom_retrieve``); contextweaver has no search, so the
agent pages through the artifact in 200-line windows (``tool_view``) until it has what
it needs or the artifact ends.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

PAGE_LINES = 200
MAX_PAGES = 60


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

    def retrieve(self, handles: list[str], needs: list[str]) -> list[list[str]]:
        exchanges: list[list[str]] = []
        missing = set(needs)
        for handle in handles:
            total = self.store.get(handle).decode("utf-8", "replace").count("\n") + 1
            for start in range(0, min(total, PAGE_LINES * MAX_PAGES), PAGE_LINES):
                selector = {"type": "lines", "start": start, "end": start + PAGE_LINES}
                answer = self.store.drilldown(handle, selector)
                call = json.dumps({"tool": "tool_view",
                                   "args": {"handle": handle, "selector": selector}})
                exchanges.append([call, answer])
                missing = {n for n in missing if n not in answer}
                if not missing:
                    return exchanges
        return exchanges


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

    def retrieve(self, handles: list[str], needs: list[str]) -> list[list[str]]:
        exchanges: list[list[str]] = []
        missing = set(needs)
        for handle in handles:
            result = self._handler()._execute_retrieval(
                self._call("r1", handle, "headroom_retrieve"))
            answer = result.content if isinstance(result.content, str) else \
                json.dumps(result.content)
            call = json.dumps({"tool": "headroom_retrieve", "args": {"hash": handle}})
            exchanges.append([call, answer])
            missing = {n for n in missing if n not in answer}
            if not missing:
                break
        return exchanges


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
            else:
                reply = {"exchanges": peer.retrieve(request["handles"], request["needs"])}
        except Exception as exc:  # report, do not die: the harness decides
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
