"""Load and faults on a home served by its store owner (:mod:`osiris.owner`).

``python -m osiris.harness.bench.owner_load observe HOME NAME COUNT SIZE [STOP_FILE|-]
[GO_FILE]`` starts a task through the owner and sends COUNT distinct ``observe`` calls
of SIZE bytes (or until STOP_FILE exists, when COUNT is 0; with GO_FILE, once every
writer is ready), printing one JSON line per call only after the owner acknowledged it
(``ack``), and one per call that failed (``lost``: the owner died under it, or none
answered). The tests kill owners under these writers; the
benchmark times them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from osiris.config import Settings
from osiris.contracts.observe import ObserveStored
from osiris.contracts.plan import PlanStart
from osiris.engine import open_engine
from osiris.errors import OsirisError
from osiris.owner_wire import LOCK_NAME, OwnerClient, socket_path, try_connect


def observe_loop(home: Path, name: str, count: int, size: int, stop: Path | None,
                 go: Path | None = None) -> None:
    """The writer: one task, then ``count`` observes (or until ``stop`` exists). With
    ``go``: once its task exists, the writer says so (``<go>.<name>.ready``) and waits
    for ``go`` before its first counted observe, so that writers started together write
    together (a process start and a tokenizer load on a busy machine otherwise stagger
    them)."""
    # The owner's (or, with OSIRIS_STORE_OWNER=off, one opening the database per call).
    engine = open_engine(replace(Settings.from_env(), home=home))
    task_id = None
    while task_id is None:
        try:
            task_id = cast(PlanStart, engine.plan("start", objective=f"owner load {name}",
                                                  steps=["observe"], announce=False))["task_id"]
        except OsirisError:
            engine.close()
            time.sleep(0.01)
    if go is not None:
        # One observe first, not counted: a writer's first call loads its tokenizer and
        # payload work (0.6 s here), which would stagger writers released together.
        try:
            engine.observe(task_id, "result", tool="Bash",
                           args={"command": f"echo {name} warm"},
                           result=_payload(f"{name} warm", size))
        except OsirisError:
            engine.close()  # the owner died under it: the counted calls find out
        go.with_name(f"{go.name}.{name}.ready").touch()
        while not go.exists():
            time.sleep(0.005)
    i = 0
    while (count and i < count) or (not count and not (stop and stop.exists())):
        text = _payload(f"{name} #{i}", size)
        started = time.perf_counter()
        try:
            answer = cast(ObserveStored, engine.observe(
                task_id, "result", tool="Bash", args={"command": f"echo {name} {i}"},
                result=text))
        except OsirisError as exc:
            engine.close()  # the next call reconnects (and starts an owner if needed)
            _emit({"lost": i, "error": exc.code, "at": time.time()})
        else:
            _emit({"ack": i, "task_id": task_id, "ref": answer["ref"], "at": time.time(),
                   "latency_s": time.perf_counter() - started})
        i += 1
    engine.close()


def _payload(label: str, size: int) -> str:
    """A distinct tool output of about ``size`` bytes."""
    return f"payload {label} pid {os.getpid()}\n" + "line of tool output\n" * max(size // 20, 1)


def _emit(doc: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()


class Observer(subprocess.Popen[str]):
    """A writer process whose output goes to unnamed files, read when it ends. With
    pipes, a writer whose pipe nobody drains blocks once it is full (64 KiB: a few
    hundred acknowledgements) and stops writing, which stalled the kill run and held
    back all but the first of three writers in the throughput run."""

    def __init__(self, args: list[str], env: dict[str, str] | None) -> None:
        self._files = (tempfile.TemporaryFile("w+", encoding="utf-8"),  # noqa: SIM115
                       tempfile.TemporaryFile("w+", encoding="utf-8"))  # noqa: SIM115
        super().__init__(args, stdout=self._files[0], stderr=self._files[1], text=True,
                         env=env)

    def communicate(self, input: str | None = None,
                    timeout: float | None = None) -> tuple[str, str]:
        """Wait for the process; its whole stdout and stderr."""
        del input
        self.wait(timeout)
        texts = []
        for file in self._files:
            file.seek(0)
            texts.append(file.read())
            file.close()
        return texts[0], texts[1]


def spawn_observer(home: Path, name: str, count: int, size: int,
                   stop: Path | None = None, env: dict[str, str] | None = None,
                   go: Path | None = None) -> Observer:
    """Start a writer process of this module (``env``: its environment; ``go``: see
    :func:`observe_loop`)."""
    args = [sys.executable, "-m", "osiris.harness.bench.owner_load", "observe", str(home), name,
            str(count), str(size), str(stop) if stop else "-"] + ([str(go)] if go else [])
    return Observer(args, env)


def release_together(go: Path, names: list[str], timeout_s: float = 300.0) -> None:
    """Wait until every writer ``names`` started with ``go`` is ready, then let them all
    write (a writer that died is found by its caller when it reads its output)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not all(
            go.with_name(f"{go.name}.{name}.ready").exists() for name in names):
        time.sleep(0.01)
    go.touch()


def owner_pid(home: Path) -> int | None:
    """The pid of the owner serving ``home`` right now (None when none answers)."""
    stats = owner_stats(home)
    return None if stats is None else int(stats["pid"])


def owner_stats(home: Path) -> dict[str, Any] | None:
    """The ping answer of the owner serving ``home`` (None when none answers)."""
    try:
        sock = try_connect(socket_path(home))
    except OsirisError:
        return None
    if sock is None:
        return None
    sock.close()
    client = OwnerClient(home, {}, spawn=False)
    try:
        result, _ = client.request({"op": "ping"})
        return dict(result)
    except OsirisError:
        return None
    finally:
        client.close()


def lock_holder_pid(home: Path) -> int | None:
    """The pid written in ``owner.lock`` (the last owner that claimed the home)."""
    try:
        return int((home / LOCK_NAME).read_text().strip() or 0) or None
    except (OSError, ValueError):
        return None


@dataclass
class KillRun:
    """What killing owners under writers observed."""

    kills: int
    acknowledged: list[dict[str, object]]
    lost: int
    recoveries_s: list[float] = field(default_factory=list)
    """Per kill: from the SIGKILL to the next acknowledged call of any writer."""
    errors: list[str] = field(default_factory=list)


def kill_owners(home: Path, *, kills: int, writers: int, size: int, seed: int = 7,
                max_gap_s: float = 0.05, timeout_s: float = 300.0) -> KillRun:
    """Run ``writers`` writers until ``kills`` owners were SIGKILLed at random moments
    (each after a random 0..``max_gap_s`` of serving)."""
    import random

    rng = random.Random(seed)  # noqa: S311 - kill timings, not secrets
    stop = home.parent / f"{home.name}.stop"
    stop.unlink(missing_ok=True)
    procs = [spawn_observer(home, f"w{n}", 0, size, stop) for n in range(writers)]
    kill_times: list[float] = []
    deadline = time.monotonic() + timeout_s
    try:
        while len(kill_times) < kills and time.monotonic() < deadline:
            stats = owner_stats(home)
            if stats is None or int(stats["served"]) < 3:  # let it do some real work
                time.sleep(0.005)
                continue
            pid = int(stats["pid"])
            time.sleep(rng.uniform(0.0, max_gap_s))
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
            kill_times.append(time.time())
            _wait_gone(pid)
    finally:
        time.sleep(0.3)  # let the writers get a last call through
        stop.touch()
    outs = [p.communicate(timeout=60) for p in procs]
    lines = [json.loads(line) for out, _ in outs for line in out.splitlines() if line]
    acked = [line for line in lines if "ack" in line]
    ack_times = sorted(float(str(a["at"])) for a in acked)
    recoveries = []
    for at in kill_times:
        later = [t for t in ack_times if t > at]
        if later:
            recoveries.append(later[0] - at)
    errors = [err for _, err in outs if err.strip()]
    return KillRun(len(kill_times), acked, sum(1 for line in lines if "lost" in line),
                   recoveries, errors)


@dataclass(frozen=True)
class Verdict:
    """What the database says of the acknowledged calls of a run."""

    missing: int
    """Acknowledged observes whose ref is not linked to their task."""
    chain_ok: bool
    audit_lossless: bool
    """``osiris audit`` of every task the run wrote to is lossless."""


def verify(home: Path, acknowledged: list[dict[str, object]]) -> Verdict:
    """Open ``home`` (any owner steps aside) and check every acknowledged call."""
    from osiris.engine.audit import audit_task
    from osiris.store import journal
    from osiris.store.state import Store

    store = Store(Settings(home=home))
    try:
        with store.read() as con:
            linked = {(t, r) for t, r in con.execute(
                "SELECT task_id, ref FROM task_refs").fetchall()}
            chain = journal.verify_chain(con, home)
        missing = sum(1 for a in acknowledged if (a["task_id"], a["ref"]) not in linked)
        lossless = all(audit_task(store, task).lossless
                       for task in {str(a["task_id"]) for a in acknowledged})
    finally:
        store.close()
    return Verdict(missing, chain.ok, lossless)


def _wait_gone(pid: int) -> None:
    for _ in range(500):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        # A killed child of ours would linger as a zombie; owners are not our children.
        if Path(f"/proc/{pid}/stat").exists() and \
                Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
            return
        time.sleep(0.002)


if __name__ == "__main__":
    if len(sys.argv) >= 6 and sys.argv[1] == "observe":
        observe_loop(Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5]),
                     Path(sys.argv[6]) if len(sys.argv) > 6 and sys.argv[6] != "-" else None,
                     Path(sys.argv[7]) if len(sys.argv) > 7 else None)
    else:
        sys.stderr.write("usage: python -m osiris.harness.bench.owner_load observe HOME NAME "
                         "COUNT SIZE [STOP_FILE|-] [GO_FILE]\n")
        sys.exit(2)
