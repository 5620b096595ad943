"""Peers: other context reducers, each driven through its real interface.

* ``contextweaver`` and ``headroom-ai`` (PyPI) run in their own virtual environment
  (``.tools/peers-venv``: they pin an older ``mcp`` than OSIRIS) through
  :mod:`osiris.harness.systems.peer_worker`;
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

from osiris.harness.replay.profiles import delta_tokens, measured
from osiris.harness.replay.retrieval import Exchange
from osiris.harness.replay.turns import Context, HeadPart, Item, ReplayBase
from osiris.harness.replay.workloads import Session, Step

WORKER = Path(__file__).with_name("peer_worker.py")
PYTHON_PEERS = ("contextweaver", "headroom")
PEER_NAMES = (*PYTHON_PEERS, "context-mode")
#: The client profiles each peer has a real integration with. contextweaver is a
#: library for agent loops; headroom also ships a proxy that any client can be pointed
#: at (it compresses each request, which is what is replayed); context-mode installs
#: into Claude Code and Codex as an MCP server with hooks.
PEER_PROFILES = {"contextweaver": ("agent-loop",),
                 "headroom": ("agent-loop", "claude-code", "codex"),
                 "context-mode": ("agent-loop", "claude-code", "codex")}


def _nudge_tokens(client: str, tool: str) -> int:
    """What context-mode's hooks add after the first call of ``tool`` in ``client``
    (measured: after a Read and after a shell command; client_heads.json)."""
    node = measured().get("summary", {}).get(client, {}).get(
        "hook_extra_tokens_after_read_and_shell", {}).get("context-mode")
    if not isinstance(node, list) or len(node) != 2:
        return 0
    return int(node[0] if tool == "read" else node[1] if tool == "bash" else 0)


INTERFACES = {
    "contextweaver": "PyPI `contextweaver`: `compact_tool_result` with an artifact store; "
                     "needs fetched by paging the artifact with `tool_view` (it has no search)",
    "headroom": "PyPI `headroom-ai`: `compress` on the conversation, as its proxy does with "
                "each request, CCR markers; needs fetched with `headroom_retrieve`. Run "
                "without its recommended `[all]` extras and their Kompress-v2-base model, "
                "which is fetched from Hugging Face at run time (these machines reach only "
                "the package registries): prose is not compressed by a model here",
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
             "interface": INTERFACES.get(p.name, ""), "error": None, "note": None}
            for p in ready]
    rows += [{"peer": m.name, "version": None, "status": "unavailable",
              "interface": INTERFACES.get(m.name, ""), "error": m.error, "note": None}
             for m in missing]
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
    """A Python peer behind :mod:`osiris.harness.systems.peer_worker`."""

    def __init__(self, name: str, python: Path, home: Path) -> None:
        self.name = name
        self.profiles = PEER_PROFILES.get(name, ("agent-loop",))
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

    def head_extra(self) -> HeadPart | None:
        return HeadPart("system", self._definitions, 0) if self._definitions else None

    def begin(self, session: Session, ctx: Context) -> None:
        self._handles = {}
        self._ask({"op": "reset", "user": (session.task_prompt or session.system_prompt
                                           or session.name)[-400:]})

    def keep_output(self, step: Step, shown: str, ctx: Context) -> Item | None:
        reply = self._ask({"op": "keep", "output": shown or "(no output)",
                           "tool": step.tool, "args": step.args})
        self._handles[step.i] = reply["handles"]
        self.modes["compressed" if reply["kept"] != shown else "unchanged"] += 1
        return ctx.add("output", reply["kept"], step.i)

    def page(self, source: Step, k: int, ctx: Context) -> Exchange | None:
        handles = self._handles.get(source.i) or []
        if not handles:
            return None
        reply = self._ask({"op": "page", "handles": handles, "k": k})
        if reply["exchange"] is None:
            return None
        call, answer = reply["exchange"]
        return Exchange(call, answer, overhead=True)

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
    profiles: tuple[str, ...] = PEER_PROFILES["context-mode"]
    _bridge: _LoopThread | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        from mcp import StdioServerParameters

        bin_dir = self.node_dir / "node_modules" / ".bin"
        project = self.home / "project"
        project.mkdir(parents=True, exist_ok=True)
        env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(self.home),
               "CLAUDE_PROJECT_DIR": str(project), "CONTEXT_MODE_PROJECT_DIR": str(project),
               # Its default throttle (fewer results after 3 searches, none after 8, within
               # 60 s of wall-clock time) would count this machine's speed, not the replayed
               # turns: it is lifted, and `throttled_searches` says how many searches the
               # default would have cut within 60 s of replay time.
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
        self.search_times: list[float] = []

    def throttled_searches(self, block_after: int = 8, window_s: float = 60.0) -> int:
        """Searches that context-mode's default throttle would have blocked, counted in
        replay time (turns 20 s apart) over every session replayed so far."""
        blocked = 0
        times = sorted(self.search_times)
        for index, at in enumerate(times):
            recent = [t for t in times[:index] if at - t < window_s]
            blocked += len(recent) >= block_after
        return blocked

    def head_extra(self) -> HeadPart | None:
        measured = delta_tokens(self.profile.name, "context-mode") \
            if self.profile.name != "agent-loop" else None
        if measured is not None:
            # Installed its documented way in this client: what it adds to every prompt,
            # measured from the real binary (its tool listing, its instructions).
            return HeadPart("system", "", int(measured))
        return HeadPart("system", self._definitions, 0)

    def begin(self, session: Session, ctx: Context) -> None:
        self._labels = {}
        self._session += 1
        self._nudged: set[str] = set()

    def _text(self, result: Any) -> str:
        return "\n".join(getattr(block, "text", "") for block in result.content)

    def keep_output(self, step: Step, shown: str, ctx: Context) -> Item | None:
        if self.profile.name != "agent-loop":
            return self._through_hooks(step, shown, ctx)
        assert self._bridge is not None
        label = f"s{self._session:04d}-out-{step.i:04d}"
        args = {"content": shown or "(no output)", "source": label}
        result = self._bridge.call(lambda c: c.call_tool("ctx_index", args))
        self._labels[step.i] = label
        self.modes["indexed"] += 1
        return ctx.add("output", self._text(result), step.i)

    def _through_hooks(self, step: Step, shown: str, ctx: Context) -> Item:
        """In Claude Code and Codex context-mode's hooks let Read, Grep and most shell
        commands through, adding a routing nudge once per session per tool (the agent
        would have to choose its sandbox tools itself; a replayed session does not)."""
        kind = {"Read": "read", "Grep": "grep", "Bash": "bash", "shell": "bash"}.get(step.tool)
        tokens = _nudge_tokens(self.profile.name, kind) if kind else 0
        if kind and kind not in self._nudged and tokens:
            self._nudged.add(kind)
            nudge = ctx.add("hook", "", step.i)
            nudge.tokens = int(tokens)  # measured size; its text is context-mode's own
            self._overhead += nudge.tokens
        self.modes["passed"] += 1
        return ctx.add("output", shown, step.i)

    def search(self, source: Step, queries: list[str], ctx: Context) -> Exchange | None:
        assert self._bridge is not None
        label = self._labels.get(source.i)
        if label is None:
            return None
        args = {"queries": queries, "source": label}
        self.search_times.append(ctx.elapsed())
        answer = self._text(self._bridge.call(lambda c: c.call_tool("ctx_search", args)))
        # The answer repeats each query as a heading; a need counts only when it comes
        # back in the content, not in the echo of the question.
        content = "\n".join(line for line in answer.splitlines() if not line.startswith("#"))
        return Exchange(json.dumps({"tool": "ctx_search", "args": args}), answer,
                        overhead=True, content=content)

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
