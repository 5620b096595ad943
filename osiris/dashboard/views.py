"""The dashboard's pages: each one reads (``queries``, the engine's read-only views) and
renders a Jinja2 template with autoescaping. ``?_fragment=1`` returns only the page's
main section (what ``static/app.js`` swaps in to refresh the page live)."""

from __future__ import annotations

import functools
import logging
import threading
from collections import OrderedDict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from osiris._version import __version__
from osiris.config import Settings
from osiris.core.hashing import digest_of_ref
from osiris.dashboard import charts
from osiris.dashboard.queries import FILTERS, Queries
from osiris.engine import open_engine
from osiris.engine.audit import audit_task
from osiris.engine.remote import ReadStore
from osiris.errors import IntegrityError, InvalidInputError, NotFoundError

log = logging.getLogger(__name__)
STATIC = Path(__file__).with_name("static")
PREVIEW_BYTES = 16_384
AUDIT_CACHE = 256
PAGE_CACHE = 128


def _when(us: int | None) -> str:
    if not us:
        return "—"
    return datetime.fromtimestamp(int(us) / 1e6, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


def _num(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.4f}"
    return f"{int(value):,}"


def _short_ref(ref: str | None) -> str:
    return "—" if not ref else ref.replace("mem://sha256:", "")[:12] + "…"


@functools.lru_cache(maxsize=1)
def _environment() -> Environment:
    env = Environment(loader=PackageLoader("osiris.dashboard", "templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters.update(when=_when, num=_num, short_ref=_short_ref)
    return env


class Views:
    """Routes and handlers over one OSIRIS home."""

    def __init__(self, settings: Settings, reports: Path | None) -> None:
        self.settings = settings
        # A live home is read through its store owner (agents keep writing meanwhile);
        # with OSIRIS_STORE_OWNER=off, by opening the file for each read.
        self.engine = open_engine(settings)
        self.store: Any = ReadStore(settings) if settings.store_owner else None
        if self.store is None:
            from osiris.engine import Engine

            assert isinstance(self.engine, Engine)  # open_engine's, without an owner
            self.store = self.engine.store
        self.queries = Queries(self.store)
        self.reports = reports
        self._audits: OrderedDict[tuple[str, int], dict[str, Any]] = OrderedDict()
        self._audit_lock = threading.Lock()
        self._audit_generation = 0
        self._pages: OrderedDict[tuple[str, str], tuple[tuple[int, int], bytes, int]] = \
            OrderedDict()
        self._pages_lock = threading.Lock()

    def close(self) -> None:
        """Release the store."""
        self.engine.close()
        if isinstance(self.store, ReadStore):
            self.store.close()

    def routes(self) -> list[Route]:
        """Every route (all GET; HEAD is served by Starlette for each GET route)."""
        cached = self._cached
        return [Route("/", cached(self.overview)), Route("/tasks", cached(self.tasks)),
                Route("/tasks/{task_id}", cached(self.task)),
                Route("/tasks/{task_id}/audit", self.audit),
                Route("/events", cached(self.events)), Route("/refs", cached(self.refs)),
                Route("/ref", self.ref), Route("/bench/", self.bench),
                Route("/bench/{name}", self.bench_file), Route("/static/{name}", self.static),
                Route("/healthz", self.healthz)]

    # -- rendering ----------------------------------------------------------------------

    def _cached(self, handler: Any) -> Any:
        """``handler`` behind a cache keyed by the journal head: every write to a home
        appends a journal event in the same transaction, so while the head stays put a
        page cannot change, and the live refresh of an idle home costs one tiny query
        instead of the page's aggregations over the whole ledger."""

        @functools.wraps(handler)
        def page(request: Request) -> Response:
            # Pages also show audit results, which change without a write.
            head = (self.queries.head_seq(), self._audit_generation)
            key = (request.url.path, str(request.query_params))
            with self._pages_lock:
                hit = self._pages.get(key)
                if hit is not None and hit[0] == head:
                    self._pages.move_to_end(key)
                    return HTMLResponse(hit[1], status_code=hit[2])
            response: Response = handler(request)
            if isinstance(response, HTMLResponse) and response.status_code == 200:
                with self._pages_lock:
                    self._pages[key] = (head, bytes(response.body), response.status_code)
                    while len(self._pages) > PAGE_CACHE:
                        self._pages.popitem(last=False)
            return response

        return page

    def _page(self, request: Request, template: str, status_code: int = 200,
              **context: Any) -> HTMLResponse:
        fragment = request.query_params.get("_fragment") == "1"
        layout = "fragment.html" if fragment else "base.html"
        body = _environment().get_template(template).render(
            layout=layout, home=str(self.settings.home), version=__version__,
            now=_when(int(datetime.now(tz=UTC).timestamp() * 1e6)), path=request.url.path,
            **context)
        return HTMLResponse(body, status_code=status_code)

    def _problem(self, request: Request, status: int, message: str) -> HTMLResponse:
        return self._page(request, "problem.html", status_code=status, message=message)

    # -- pages --------------------------------------------------------------------------

    def overview(self, request: Request) -> Response:
        """Totals, the ledger over time, pressure, the latest drift and verdicts."""
        counts = self.queries.counts()
        series = self.queries.ledger_series()
        times = [p["t_us"] for p in series]
        ledger_chart = charts.line_chart(
            "Ledger over time (tokens per slice)", times,
            {"into context": [p["context_tokens"] for p in series],
             "saved (claimed)": [p["saved_claimed"] for p in series],
             "saved (proven by drop receipts)": [p["saved_proven"] for p in series],
             "OSIRIS overhead": [p["overhead_tokens"] for p in series]})
        cost_chart = charts.line_chart("Estimated cost over time (USD per slice)", times,
                                       {"cost": [p["cost_usd"] for p in series]})
        leaders = self.queries.pressure_leaders()
        window = self.settings.context_window_tokens
        for row in leaders:
            row["ratio"] = (row["context_tokens"] or 0) / window if window else 0
        pressure_chart = charts.bar_chart(
            f"Context pressure: tokens OSIRIS measured in active tasks (window {window:,})",
            [f"{r['task_id'][2:8]} · {r['objective']}" for r in leaders],
            [float(r["context_tokens"] or 0) for r in leaders], " tok")
        return self._page(
            request, "overview.html", counts=counts,
            ledger_chart=Markup(ledger_chart), cost_chart=Markup(cost_chart),  # noqa: S704
            pressure_chart=Markup(pressure_chart), leaders=leaders,  # noqa: S704
            drift=self.queries.events(kind="drift", limit=10).rows,
            verdicts=self.queries.events(kind="verdicts", limit=10).rows,
            loops=self.queries.events(kind="loopguard", limit=10).rows)

    def tasks(self, request: Request) -> Response:
        """Tasks, newest activity first, searchable, paginated."""
        query = request.query_params.get("q", "")[:200]
        try:
            page = self.queries.tasks(cursor=request.query_params.get("after"), query=query)
        except ValueError as exc:
            return self._problem(request, 400, str(exc))
        return self._page(request, "tasks.html", page=page, q=query)

    def task(self, request: Request) -> Response:
        """One task: manifest, plan, pressure and budget, ledger, events, refs."""
        task_id = request.path_params["task_id"]
        try:
            manifest = self.engine.manifest_view(task_id)
            status = self.engine.status_view(task_id)
        except (NotFoundError, InvalidInputError) as exc:
            return self._problem(request, 404, str(exc))
        series = self.queries.ledger_series(task_id)
        chart = charts.line_chart(
            "This task's ledger over time", [p["t_us"] for p in series],
            {"into context": [p["context_tokens"] for p in series],
             "saved (claimed)": [p["saved_claimed"] for p in series],
             "saved (proven)": [p["saved_proven"] for p in series],
             "OSIRIS overhead": [p["overhead_tokens"] for p in series]})
        kind = request.query_params.get("filter", "all")
        if kind not in FILTERS:
            kind = "all"
        before = request.query_params.get("before") or ""
        events = self.queries.events(kind=kind, task_id=task_id,
                                     before_seq=int(before) if before.isascii()
                                     and before.isdigit() else None)
        return self._page(request, "task.html", task_id=task_id, manifest=manifest,
                          status=status, chart=Markup(chart),  # noqa: S704
                          ledger=self.queries.task_ledger(task_id),
                          refs=self.queries.task_refs(task_id), events=events, filter=kind,
                          filters=list(FILTERS), audit=self._cached_audit(task_id))

    def audit(self, request: Request) -> Response:
        """The task's non-loss proof (run now, or the cached one for this journal head)."""
        task_id = request.path_params["task_id"]
        try:
            report = self._run_audit(task_id)
        except (NotFoundError, InvalidInputError) as exc:
            return self._problem(request, 404, str(exc))
        if request.query_params.get("format") == "json":
            return JSONResponse(report)
        return self._page(request, "audit.html", task_id=task_id, audit=report)

    def _head(self) -> int:
        return self.queries.head_seq()

    def _cached_audit(self, task_id: str) -> dict[str, Any] | None:
        with self._audit_lock:
            return self._audits.get((task_id, self._head()))

    def _run_audit(self, task_id: str) -> dict[str, Any]:
        key = (task_id, self._head())
        with self._audit_lock:
            if key in self._audits:
                return self._audits[key]
        report = audit_task(self.store, task_id).as_dict()
        report["checked_at"] = _when(int(datetime.now(tz=UTC).timestamp() * 1e6))
        with self._audit_lock:
            self._audits[key] = report
            self._audit_generation += 1  # the task's page now shows the result
            while len(self._audits) > AUDIT_CACHE:
                self._audits.popitem(last=False)
        return report

    def events(self, request: Request) -> Response:
        """The journal, newest first: all events, drift, precheck verdicts or LoopGuard."""
        kind = request.query_params.get("filter", "all")
        if kind not in FILTERS:
            return self._problem(request, 400, f"unknown filter {kind[:40]!r}: use one of "
                                 + ", ".join(FILTERS))
        before = request.query_params.get("before")
        if before is not None and not (before.isascii() and before.isdigit()):
            return self._problem(request, 400, "before must be an event number")
        page = self.queries.events(kind=kind, before_seq=int(before) if before else None)
        return self._page(request, "events.html", page=page, filter=kind,
                          filters=list(FILTERS))

    def refs(self, request: Request) -> Response:
        """Refs, newest first."""
        try:
            page = self.queries.refs(cursor=request.query_params.get("after"))
        except ValueError as exc:
            return self._problem(request, 400, str(exc))
        return self._page(request, "refs.html", page=page)

    def ref(self, request: Request) -> Response:
        """One ref: metadata, holders, and a preview of its verified bytes."""
        ref = request.query_params.get("ref", "")
        try:
            digest_of_ref(ref)
        except (InvalidInputError, ValueError):
            return self._problem(request, 400, "ref must look like mem://sha256:<64 hex>")
        # With tokens, the bytes of a ref are its principal's alone, as over MCP.
        meta = self.queries.ref_meta(ref, getattr(request.state, "osiris_principal", None))
        if meta is None:
            return self._problem(request, 404, f"{ref} is unknown to this OSIRIS home")
        verified, problem, preview, truncated = True, None, "", False
        try:
            data = self.store.refs.get(ref)
            preview = data[:PREVIEW_BYTES].decode("utf-8", errors="replace")
            truncated = len(data) > PREVIEW_BYTES
        except (NotFoundError, IntegrityError) as exc:
            verified, problem = False, str(exc)
        return self._page(request, "ref.html", meta=meta, verified=verified, problem=problem,
                          preview=preview, truncated=truncated)

    def bench(self, request: Request) -> Response:
        """The latest benchmark report (reports/BENCHMARK.md) and its plots."""
        report = self.reports / "BENCHMARK.md" if self.reports else None
        if report is None or not report.exists():
            return self._page(request, "bench.html", report=None, reports=self.reports)
        from markdown_it import MarkdownIt

        # html=False: raw HTML in the report is shown as text, never rendered.
        rendered = MarkdownIt("commonmark", {"html": False}).enable("table").render(
            report.read_text("utf-8", errors="replace"))
        return self._page(request, "bench.html", report=Markup(rendered),  # noqa: S704
                          reports=self.reports, modified=_when(int(report.stat().st_mtime * 1e6)))

    def bench_file(self, request: Request) -> Response:
        """A plot of the report directory (only the PNG files it lists)."""
        name = request.path_params["name"]
        if self.reports is None or name not in _pngs(self.reports):
            return Response("not found", status_code=404, media_type="text/plain")
        return FileResponse(self.reports / name, media_type="image/png")

    def static(self, request: Request) -> Response:
        """The page's script and style sheet."""
        name = request.path_params["name"]
        types = {"app.js": "text/javascript", "style.css": "text/css"}
        if name not in types:
            return Response("not found", status_code=404, media_type="text/plain")
        return FileResponse(STATIC / name, media_type=types[name])

    def healthz(self, request: Request) -> Response:
        """Liveness and the home's counts (JSON)."""
        return JSONResponse({"ok": True, "home": str(self.settings.home),
                             **self.queries.counts()})


def _pngs(directory: Path) -> set[str]:
    return {p.name for p in directory.glob("*.png") if p.is_file()}
