"""Peers: other context reducers, each driven through its real interface.

* ``contextweaver`` and ``headroom-ai`` (PyPI) run in their own virtual environment
  (``.tools/peers-venv``: they pin an older ``mcp`` than OSIRIS) through
  :mod:`osiris.harness.peer_worker`;
* ``context-mode`` (npm) is an MCP server on Node 22 (``.tools/context-mode``), driven
  by the MCP client of the SDK: each output is indexed with ``ctx_index`` and every
  need searched with ``ctx_search``.

Their outputs are counted with the same encoding as everything else; the scripted
agent gets needs back through each peer's own retrieval and every exchange is
charged, exactly as for OSIRIS. A peer that is not installed or does not start is
reported with the exact error; no figure is ever invented.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from osiris.harness.replay import Context, Item, ReplayBase
from osiris.harness.workloads import Need, Session, Step

WORKER = Path(__file__).with_name("peer_worker.py")
PYTHON_PEERS = ("contextweaver", "headroom")
PEER_NAMES = (*PYTHON_PEERS, "context-mode")


INTERFACES = {
    "contextweaver": "PyPI `contextweaver`: `compact_tool_result` with an artifact store; "
                     "needs fetched by paging the artifact with `tool_view` (it has no search)",
    "headroom": "PyPI `headroom-ai`: `compress` on the conversation, CCR markers; needs "
                "fetched with `headroom_retrieve`",
    "context-mode": "npm `context-mode`, an MCP server on Node 22 driven by the MCP SDK "
                    "client over stdio: `ctx_index` each output, `ctx_search` each need"}


@dataclass
class PeerUnavailable:
    """Why a peer could not be measured (shown in the report, verbatim)."""

    name: str
    error: str


def status_rows(ready: list[ReplayBase], missing: list[PeerUnavailable]) -> list[dict[str, Any]]:
    """One row per peer for ``reports/data/peers.parquet``: measured (with the version
    that ran) or not (with the exact error)."""
    rows = [{"peer": p.name, "version": getattr(p, "version", None), "status": "measured",
             "interface": INTERFACES.get(p.name, ""), "error": None} for p in ready]
    rows += [{"peer": m.name, "version": None, "status": "unavailable",
              "interface": INTERFACES.get(m.name, ""), "error": m.error} for m in missing]
    order = {name: i for i, name in enumerate(PEER_NAMES)}
    return sorted(rows, key=lambda r: order.get(str(r["peer"]), len(order)))


def tools_dir(repo: Path) -> Path:
    """Where the peers are installed (``.ci/install-peers``)."""
    return repo / ".tools"


def _peer_env(home: Path) -> dict[str, str]:
    # No network, no state outside a scratch home, no telemetry.
    return {"HOME": str(home), "PATH": "/usr/bin:/bin", "HEADROOM_CCR_BACKEND": "memory",
            "HEADROOM_CCR_TTL_SECONDS": "604800", "HEADROOM_TOIN_BACKEND": "none",
            "HEADROOM_TELEMETRY": "off", "DO_NOT_TRACK": "1", "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1", "PYTHONIOENCODING": "utf-8"}


class WorkerPeer(ReplayBase):
    """A Python peer behind :mod:`osiris.harness.peer_worker`."""

    def __init__(self, name: str, python: Path, home: Path) -> None:
        self.name = name
        home.mkdir(parents=True, exist_ok=True)
        self._stderr = home / "worker.stderr"
        with self._stderr.open("w") as errors:
            self._proc = subprocess.Popen(
                [str(python), str(WORKER), name], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=errors, text=True, env=_peer_env(home))
        self._handles: dict[int, list[str]] = {}
        try:
            self.version = str(self._ask({"op": "version"})["version"])
            definitions = self._ask({"op": "tools"})["definitions"]
        except Exception:
            self.close()
            raise
        self._definitions = json.dumps(definitions, separators=(",", ":")) if definitions else ""

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self._proc.stdin is not None
        assert self._proc.stdout is not None
        self._proc.stdin.write(json.dumps(request) + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:
            self._proc.wait(timeout=30)
            tail = self._stderr.read_text("utf-8", "replace").strip().splitlines()[-3:]
            raise RuntimeError(f"{self.name} worker exited with code {self._proc.returncode}"
                               + (": " + " | ".join(tail) if tail else ""))
        reply: dict[str, Any] = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"{self.name}: {reply['error']}")
        return reply

    def head_extra(self) -> str:
        return self._definitions

    def begin(self, session: Session, ctx: Context) -> None:
        self._handles = {}
        self._ask({"op": "reset", "user": session.system_prompt[-400:]})

    def keep_output(self, step: Step, ctx: Context) -> Item | None:
        reply = self._ask({"op": "keep", "output": step.output or "(no output)",
                           "tool": step.tool, "args": step.args})
        self._handles[step.i] = reply["handles"]
        self.modes["compressed" if reply["kept"] != step.output else "unchanged"] += 1
        return ctx.add("output", reply["kept"], step.i)

    def retrieve(self, source: Step, needs: list[Need], ctx: Context) -> int:
        handles = self._handles.get(source.i) or []
        if not handles:
            return 0
        reply = self._ask({"op": "retrieve", "handles": handles,
                           "needs": [n.text for n in needs]})
        answers = []
        for call, answer in reply["exchanges"]:
            self.charge(ctx, call, answer, source.i, overhead=True)
            answers.append(answer)
        joined = "\n".join(answers)
        return sum(1 for n in needs if n.text in joined)

    def close(self) -> None:
        """Stop the worker."""
        for pipe in (self._proc.stdin, self._proc.stdout):
            if pipe is not None and not pipe.closed:
                pipe.close()
        self._proc.wait(timeout=30)


class _LoopThread:
    """An asyncio loop in a thread, holding one MCP client session open."""

    def __init__(self, params: Any) -> None:
        self._params = params
        self._loop = asyncio.new_event_loop()
        self._ready: Future[Any] = Future()
        self._requests: asyncio.Queue[Any] | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._ready.result(timeout=120)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._serve())

    async def _serve(self) -> None:
        from mcp import Client

        self._requests = asyncio.Queue()
        try:
            async with Client(self._params, mode="legacy") as client:
                self._ready.set_result(client)
                while True:
                    item = await self._requests.get()
                    if item is None:
                        return
                    coro_factory, future = item
                    try:
                        future.set_result(await coro_factory(client))
                    except Exception as exc:
                        future.set_exception(exc)
        except Exception as exc:
            if not self._ready.done():
                self._ready.set_exception(exc)

    def call(self, coro_factory: Any) -> Any:
        """Run ``coro_factory(client)`` on the loop and wait for its result."""
        future: Future[Any] = Future()
        assert self._requests is not None
        self._loop.call_soon_threadsafe(self._requests.put_nowait, (coro_factory, future))
        return future.result(timeout=300)

    def close(self) -> None:
        """End the session and the loop."""
        if self._requests is not None:
            self._loop.call_soon_threadsafe(self._requests.put_nowait, None)
        self._thread.join(timeout=60)


@dataclass
class ContextModeSystem(ReplayBase):
    """context-mode 1.0.169 over stdio: ``ctx_index`` each output, ``ctx_search`` needs."""

    node_dir: Path
    home: Path
    name: str = "context-mode"
    _bridge: _LoopThread | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        from mcp import StdioServerParameters

        bin_dir = self.node_dir / "node_modules" / ".bin"
        project = self.home / "project"
        project.mkdir(parents=True, exist_ok=True)
        env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(self.home),
               "CLAUDE_PROJECT_DIR": str(project), "CONTEXT_MODE_PROJECT_DIR": str(project),
               # The default throttles searches (8 a minute); an agent replay needs more.
               "CONTEXT_MODE_SEARCH_BLOCK_AFTER": "1000000",
               "CONTEXT_MODE_SEARCH_MAX_RESULTS_AFTER": "1000000", "NODE_NO_WARNINGS": "1"}
        params = StdioServerParameters(
            command=str(bin_dir / "node"),
            args=[str(self.node_dir / "node_modules" / "context-mode" / "cli.bundle.mjs")],
            cwd=str(project), env=env)
        package = self.node_dir / "node_modules" / "context-mode" / "package.json"
        self.version = str(json.loads(package.read_text("utf-8"))["version"])
        self._bridge = _LoopThread(params)
        tools = self._bridge.call(lambda c: c.list_tools())
        self._definitions = json.dumps(
            [{"name": t.name, "description": t.description, "input_schema": t.input_schema}
             for t in tools.tools], separators=(",", ":"))
        self._labels: dict[int, str] = {}
        self._session = 0

    def head_extra(self) -> str:
        return self._definitions

    def begin(self, session: Session, ctx: Context) -> None:
        self._labels = {}
        self._session += 1

    def _text(self, result: Any) -> str:
        return "\n".join(getattr(block, "text", "") for block in result.content)

    def keep_output(self, step: Step, ctx: Context) -> Item | None:
        assert self._bridge is not None
        label = f"s{self._session:04d}-out-{step.i:04d}"
        args = {"content": step.output or "(no output)", "source": label}
        result = self._bridge.call(lambda c: c.call_tool("ctx_index", args))
        self._labels[step.i] = label
        self.modes["indexed"] += 1
        return ctx.add("output", self._text(result), step.i)

    def retrieve(self, source: Step, needs: list[Need], ctx: Context) -> int:
        assert self._bridge is not None
        label = self._labels.get(source.i)
        if label is None:
            return 0
        args = {"queries": [n.text for n in needs], "source": label}
        answer = self._text(self._bridge.call(lambda c: c.call_tool("ctx_search", args)))
        self.charge(ctx, json.dumps({"tool": "ctx_search", "args": args}), answer, source.i,
                    overhead=True)
        # The answer repeats each query as a heading; a need counts only when it comes
        # back in the content, not in the echo of the question.
        content = "\n".join(line for line in answer.splitlines() if not line.startswith("#"))
        return sum(1 for n in needs if n.text in content)

    def close(self) -> None:
        """Stop the server."""
        if self._bridge is not None:
            self._bridge.close()


def build_peers(repo: Path, workdir: Path, names: tuple[str, ...] = PEER_NAMES,
                ) -> tuple[list[ReplayBase], list[PeerUnavailable]]:
    """The peers that start, and the exact error of each one that does not."""
    tools = tools_dir(repo.resolve())
    workdir = workdir.resolve()
    ready: list[ReplayBase] = []
    missing: list[PeerUnavailable] = []
    python = tools / "peers-venv" / "bin" / "python"
    for name in names:
        try:
            if name in PYTHON_PEERS:
                if not python.exists():
                    raise RuntimeError(f"{python} does not exist: run .ci/install-peers")
                ready.append(WorkerPeer(name, python, workdir / f"peer-{name}"))
            else:
                node_dir = tools / "context-mode"
                if not (node_dir / "node_modules" / "context-mode").exists():
                    raise RuntimeError(f"{node_dir}/node_modules/context-mode does not exist: "
                                       "run .ci/install-peers")
                ready.append(ContextModeSystem(node_dir, workdir / "peer-context-mode"))
        except Exception as exc:
            missing.append(PeerUnavailable(name, f"{type(exc).__name__}: {exc}"
                                           + _install_errors(tools)))
    return ready, missing


def _install_errors(tools: Path) -> str:
    """The last lines ``.ci/install-peers`` wrote to stderr, if it failed."""
    log = tools / "install-peers.log"
    if not log.exists():
        return ""
    lines = [line for line in log.read_text("utf-8", "replace").splitlines() if line.strip()]
    return f" (install-peers said: {' / '.join(lines[-3:])})" if lines else ""
