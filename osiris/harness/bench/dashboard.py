"""The dashboard on a large home (reports/PERF.md): page latency, deep pages, and what
its reads cost an MCP server writing to the same home at the same time.

The home is built by :mod:`osiris.harness.bench.large_home` (real engine activity copied
across many tasks, with a valid journal chain); the dashboard runs as its own process
(uvicorn), exactly as ``osiris-dashboard`` does, and is measured over real HTTP.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from osiris.harness.bench.context import BenchContext, StageResult
from osiris.harness.stats import median, ms, percentile

WRITER = """
import json, sys, time
from pathlib import Path
from osiris.config import Settings
from osiris.engine import open_engine
# As an agent writes: through the home's store owner, which the dashboard reads through too.
engine = open_engine(Settings(home=Path(sys.argv[1])))
task = engine.plan("start", objective="writer beside the dashboard")["task_id"]
latencies = []
for i in range(int(sys.argv[2])):
    started = time.perf_counter()
    engine.observe(task, "result", tool="Bash", args={"command": f"echo {i}"},
                   result=f"line {i}\\n" * 400)
    latencies.append(time.perf_counter() - started)
engine.close()
sys.stdout.write(json.dumps(latencies))
"""


def _get(url: str, timeout: float = 120) -> tuple[float, str]:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 (loopback)
        body = response.read().decode("utf-8", "replace")
    return time.perf_counter() - started, body


@contextlib.contextmanager
def _dashboard(home: Path) -> Iterator[str]:
    proc = subprocess.Popen(  # --port 0: it binds a free port and says which on stderr
        [sys.executable, "-c", "import sys; from osiris.dashboard import main; "
         "sys.exit(main(sys.argv[1:]))", "--port", "0"],
        env={"OSIRIS_HOME": str(home), "OSIRIS_LOG_LEVEL": "WARNING"},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    try:
        assert proc.stderr is not None
        said = ""
        while not (found := re.search(r"http://127\.0\.0\.1:(\d+)/", said)):
            line = proc.stderr.readline()  # ends at the process's exit at the latest
            if not line:
                raise RuntimeError(f"dashboard exited before it listened: {said}")
            said += line
        base = f"http://127.0.0.1:{found.group(1)}"
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"dashboard exited: {proc.stderr.read() if proc.stderr else ''}")
            with contextlib.suppress(OSError):
                _get(base + "/healthz", timeout=5)
                break
            if time.monotonic() > deadline:
                raise TimeoutError("dashboard did not answer within 120 s")
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


def _writer(home: Path, n: int) -> list[float]:
    done = subprocess.run([sys.executable, "-c", WRITER, str(home), str(n)],
                          env={"OSIRIS_LOG_LEVEL": "WARNING"}, capture_output=True,
                          text=True, timeout=1800, check=True)
    latencies: list[float] = json.loads(done.stdout)
    return latencies


def _writer_beside_dashboard(home: Path, base: str,
                             n: int) -> tuple[list[float], list[float], list[float]]:
    """Writer latencies alone, then while two clients poll the live fragments."""
    alone = _writer(home, n)
    stop = threading.Event()
    polls: list[float] = []

    def poll(path: str) -> None:
        while not stop.is_set():
            polls.append(_get(base + path)[0])

    pollers = [threading.Thread(target=poll, args=(p,), daemon=True)
               for p in ("/?_fragment=1", "/events?_fragment=1")]
    for thread in pollers:
        thread.start()
    try:
        beside = _writer(home, n)
    finally:
        stop.set()
        for thread in pollers:
            thread.join(timeout=120)
    return alone, beside, polls


def stage_dashboard(ctx: BenchContext) -> StageResult:
    """Build a large home, then time every page and the writer beside the dashboard."""
    from osiris.harness.bench.large_home import build_large_home

    tasks, events = (300, 30_000) if ctx.quick else (10_000, 1_000_000)
    home = ctx.workdir / "dashboard-home"
    ctx.say(f"dashboard: building a home of {tasks:,} tasks and {events:,} events")
    started = time.perf_counter()
    shown: dict[str, int] = {}

    def progress(stage: str, done: int, total: int) -> None:
        tenth = 10 * done // max(total, 1)
        if shown.get(stage) != tenth:  # about ten lines per stage
            shown[stage] = tenth
            ctx.say(f"dashboard: {stage} {done:,}/{total:,}")

    built = build_large_home(home, tasks, events, progress=progress)
    build_s = time.perf_counter() - started
    db_mb = built["db_bytes"] / 1e6
    counts = built["counts"]
    rows: list[dict[str, Any]] = []
    runs = 3 if ctx.quick else 5
    with _dashboard(home) as base:
        _, listing = _get(base + "/tasks")
        task = re.findall(r'href="/tasks/(t_[0-9a-zA-Z_]+)"', listing)[0]
        _, refs = _get(base + "/refs")
        ref = urllib.parse.unquote(re.findall(r'href="/ref\?ref=([^"]+)"', refs)[0])
        pages = {"overview": "/", "tasks": "/tasks", "task search": "/tasks?q=parser",
                 "task": f"/tasks/{task}", "journal": "/events",
                 "drift": "/events?filter=drift", "verdicts": "/events?filter=verdicts",
                 "loopguard": "/events?filter=loopguard", "refs": "/refs",
                 "ref preview": "/ref?ref=" + urllib.parse.quote(ref, safe=""),
                 "benchmark": "/bench/", "live refresh (overview fragment)": "/?_fragment=1"}
        ctx.say(f"dashboard: {len(pages)} pages x {runs} requests")
        for name, path in pages.items():
            # Cold: a query parameter the page ignores makes every request miss the
            # dashboard's page cache, so the page is computed from the database each
            # time (as after every write). Cached: the same URL again, nothing written.
            mark = "&" if "?" in path else "?"
            _get(f"{base}{path}{mark}_cold=warm")  # code paths and DuckDB warmed
            cold = [_get(f"{base}{path}{mark}_cold={i}")[0] for i in range(runs)]
            _get(base + path)
            cached = [_get(base + path)[0] for _ in range(runs)]
            rows.append({"measure": f"page {name}", "n": runs, "median_s": median(cold),
                         "p99_s": percentile(cold, 99), "max_s": max(cold),
                         "cached_median_s": median(cached)})
        depth, page_times, path = (5 if ctx.quick else 20), [], "/events"
        for _ in range(depth):
            took, body = _get(base + path)
            page_times.append(took)
            found = re.search(r'href="(/events\?filter=all&amp;before=\d+)"', body)
            if not found:
                break
            path = found.group(1).replace("&amp;", "&")
        rows.append({"measure": f"journal pages 1-{len(page_times)} (keyset)",
                     "n": len(page_times), "median_s": median(page_times),
                     "p99_s": percentile(page_times, 99), "max_s": max(page_times)})
        audit_s, _ = _get(f"{base}/tasks/{task}/audit?format=json", timeout=600)
        rows.append({"measure": "audit of one task (whole chain re-verified)", "n": 1,
                     "median_s": audit_s, "p99_s": audit_s, "max_s": audit_s})
        n = 20 if ctx.quick else 60
        ctx.say(f"dashboard: a writer process, {n} observes, alone then beside 2 pollers")
        alone, beside, polls = _writer_beside_dashboard(home, base, n)
    for name, values in (("writer observe, alone", alone),
                         ("writer observe, dashboard polled", beside),
                         ("dashboard polls during the writes", polls)):
        rows.append({"measure": name, "n": len(values), "median_s": median(values),
                     "p99_s": percentile(values, 99), "max_s": max(values, default=0.0)})
    ctx.say(f"dashboard: overview median {ms(rows[0]['median_s'])} ms; writer median "
            f"{ms(median(alone))} ms alone, {ms(median(beside))} ms beside the dashboard")
    # The home's size goes with every row: the README quotes it from the Parquet.
    return StageResult(
        tables={"dashboard_perf": [{**r, "tasks": tasks, "events": events,
                                    "ledger_rows": counts["ledger"],
                                    "db_bytes": built["db_bytes"]} for r in rows]},
        perf_sections=[_section(rows, counts, db_mb, build_s)])


def _section(rows: list[dict[str, Any]], counts: dict[str, int], db_mb: float,
             build_s: float) -> str:
    """PERF.md's section on the dashboard."""
    table = ["| measure | n | median ms | p99 ms | max ms | cached median ms |",
             "|---|---|---|---|---|---|"]
    table += [f"| {r['measure']} | {r['n']} | {ms(r['median_s'])} | {ms(r['p99_s'])} | "
              f"{ms(r['max_s'])} | "
              f"{ms(r['cached_median_s']) if r.get('cached_median_s') else '—'} |"
              for r in rows]
    return "\n".join([
        "## Dashboard on a large home",
        "",
        f"A home of {counts['tasks']:,} tasks and {counts['events']:,} journal events "
        f"({counts['ledger']:,} ledger rows; DuckDB file {db_mb:,.0f} MB) built "
        f"in {build_s:,.0f} s by `osiris.harness.bench.large_home` from real engine activity. "
        "`osiris-dashboard` ran as its own process, reading through the home's store "
        "owner; each page was requested over HTTP after one warm-up request. The first "
        "columns are pages computed from the "
        "database (a page cache keyed by the journal head serves repeats until the next "
        "write: its figure is the last column). The writer is a separate process doing "
        "`observe` calls on the same home through the same owner, as an agent does, "
        "first alone, then while two clients poll the "
        "dashboard's live fragments back to back (each write invalidates the cache, so "
        "the polls recompute).",
        "",
        *table,
        ""])
