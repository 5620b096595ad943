"""Using a home through its store owner (:mod:`osiris.owner`) from another process.

* :class:`RemoteEngine` has the engine facade's methods and runs each one in the owner:
  the stdio and HTTP servers, hooks and ``osiris run`` use it when ``OSIRIS_STORE_OWNER``
  is on (the default). It imports neither DuckDB nor the tokenizer.
* :func:`query` runs one read-only SQL statement on a live home and returns a
  ``pyarrow.Table``: the way for a notebook to read a home that agents are writing::

      from osiris.engine.remote import query
      events = query("~/.osiris", "SELECT kind, count(*) AS n FROM events GROUP BY kind")
      events.to_pandas()  # or polars.from_arrow(events)

  For a copy to keep, export the tables to Parquet through the same path
  (``query(home, "SELECT * FROM ledger").to_pandas().to_parquet(…)``, or pyarrow's
  ``parquet.write_table``). The owner stops a query that runs past
  ``OSIRIS_QUERY_TIMEOUT_S`` (an error says so) or whose process has gone.

Every call is bounded: ``OSIRIS_OWNER_TIMEOUT_S`` (hooks and ``osiris run``:
``OSIRIS_HOOK_TIMEOUT_S``), then :class:`~osiris.owner_wire.OwnerTimeout`.
"""

from __future__ import annotations

import contextlib
import decimal
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from osiris.config import Settings, settings_to_wire
from osiris.errors import OsirisError
from osiris.owner_wire import (
    OwnerClient,
    OwnerTimeout,
    remembered_failure,
    socket_path,
    start_owner,
    try_connect,
)

if TYPE_CHECKING:
    from osiris.contracts.checkpoint import CheckpointAnswer
    from osiris.contracts.handoff import HandoffAnswer
    from osiris.contracts.observe import ObserveAnswer
    from osiris.contracts.plan import ContextAnswer, PlanAnswer
    from osiris.contracts.precheck import PrecheckResult
    from osiris.contracts.recall import RecallAnswer
    from osiris.contracts.views import (
        Compacted,
        ManifestView,
        ResumeView,
        RoutedOutput,
        StatusView,
    )
    from osiris.engine.interface import Facade

log = logging.getLogger(__name__)


HAND_OVER_MIN_CHARS = 512
"""Payloads from this size on are worked on here before the owner gets them."""
ROUTED_BYTES_PER_S = 4 << 20
"""``osiris run`` waits for the owner to store an output its hook bound plus a second per
this many bytes (the owner stores about 8 MB a second here: reports/PERF.md)."""


class RemoteEngine:
    """The engine facade, served by the home's owner (a pool of connections: one per
    call in progress, reused)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._wire = settings_to_wire(settings)
        self._idle: list[OwnerClient] = []  # connections not in use, for any thread
        self._lock = threading.Lock()

    def start_owner(self) -> None:
        """Start the home's owner now, without waiting for it, unless one answers."""
        try:
            sock = try_connect(socket_path(self.settings.home), timeout_s=1.0)
            if sock is None:
                if remembered_failure(self.settings.home) is None:  # else it fails again
                    start_owner(self.settings.home)
            else:
                sock.close()
        except (OSError, OsirisError) as exc:  # the first call will say what is wrong
            log.info("cannot start the store owner of %s yet: %s", self.settings.home, exc)

    def _request(self, doc: dict[str, Any], *,
                 timeout_s: float | None = None) -> tuple[Any, bytes]:
        with self._lock:
            client = self._idle.pop() if self._idle else None
        if client is None:
            client = OwnerClient(self.settings.home, self._wire,
                                 timeout_s=self.settings.owner_timeout_s)
        try:
            answer = client.request(doc, timeout_s=timeout_s)
        except BaseException:
            client.close()  # a failed connection is not reused
            raise
        with self._lock:
            self._idle.append(client)
        return answer

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        result, _ = self._request({"op": "call", "method": method, "args": list(args),
                                   "kwargs": kwargs})
        return result

    def close(self) -> None:
        """Close this process's connections (the owner stays for its other clients)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for client in idle:
            client.close()

    def __enter__(self) -> RemoteEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # The facade's methods (osiris.engine.interface.Facade; osiris.engine.Engine documents
    # each one).

    def plan(self, mode: str, **kwargs: Any) -> PlanAnswer:
        return cast("PlanAnswer", dict(self._call("plan", mode, **kwargs)))

    def precheck(self, task_id: str, tool: str, **kwargs: Any) -> PrecheckResult:
        return cast("PrecheckResult", dict(self._call("precheck", task_id, tool, **kwargs)))

    def observe(self, task_id: str, kind: str, **kwargs: Any) -> ObserveAnswer:
        """The owner's observe; a payload's CPU work (scrub, count, preview) done here
        first and handed over with the scrubbed text (:mod:`osiris.core.payload_work`):
        this process's time, not the owner's, which every agent of the home shares."""
        handed = self._payload_work(kind, kwargs)
        if handed is None:
            return cast("ObserveAnswer", dict(self._call("observe", task_id, kind, **kwargs)))
        text, work = handed
        result, _ = self._request({"op": "call", "method": "observe",
                                   "args": [task_id, kind],
                                   "kwargs": {**kwargs, "result": text}, "prepared": work})
        return cast("ObserveAnswer", dict(result))

    def _payload_work(self, kind: str, kwargs: dict[str, Any],
                      ) -> tuple[str, dict[str, Any]] | None:
        result = kwargs.get("result")
        if kind not in ("result", "error") or not isinstance(result, str) \
                or len(result) < HAND_OVER_MIN_CHARS or kwargs.get("prepared") is not None \
                or len(result) > self.settings.max_payload_bytes:
            return None
        from osiris._version import __version__
        from osiris.core import payload_work
        from osiris.core.engagement import Thresholds
        from osiris.core.tokens import default_counter

        s = self.settings
        try:
            work = payload_work.client_work(
                result, kind=kind, args=kwargs.get("args"), counter=default_counter(),
                thresholds=Thresholds(s.engage_light_tokens, s.engage_standard_tokens,
                                      s.engage_full_tokens))
        except Exception as exc:  # the owner does the work, and reports what is wrong
            log.debug("payload work left to the owner: %s", exc)
            return None
        return work.scrubbed.text, payload_work.to_wire(work, __version__,
                                                        default_counter().encoding_name)

    def recall(self, ref: str, op: str = "head", **kwargs: Any) -> RecallAnswer:
        return cast("RecallAnswer", dict(self._call("recall", ref, op, **kwargs)))

    def checkpoint(self, task_id: str, mode: str, **kwargs: Any) -> CheckpointAnswer:
        return cast("CheckpointAnswer", dict(self._call("checkpoint", task_id, mode, **kwargs)))

    def handoff(self, mode: str, **kwargs: Any) -> HandoffAnswer:
        return cast("HandoffAnswer", dict(self._call("handoff", mode, **kwargs)))

    def compacted(self, task_id: str, **kwargs: Any) -> Compacted:
        return cast("Compacted", dict(self._call("compacted", task_id, **kwargs)))

    def hook(self, client: str, event: str, raw: str, principal: str | None = None,
             ) -> dict[str, Any]:
        """A client hook run by the owner (:func:`osiris.clients.hooks.run_hook` with its
        engine): ``{stdout, exit_code, problem, stderr}``."""
        result, _ = self._request({"op": "hook", "client": client, "event": event,
                                   "raw": raw, "principal": principal},
                                  timeout_s=self.settings.hook_timeout_s)
        return dict(result)

    def route_output(self, task_id: str, text: str, **kwargs: Any) -> RoutedOutput | None:
        """``osiris run``'s: bounded as a hook is (the command has run; its output must
        not wait on a stuck owner), plus time for the size of the output."""
        bound = self.settings.hook_timeout_s + len(text) / ROUTED_BYTES_PER_S
        answer, _ = self._request({"op": "call", "method": "route_output",
                                   "args": [task_id, text], "kwargs": kwargs},
                                  timeout_s=bound)
        return None if answer is None else cast("RoutedOutput", dict(answer))

    def operating_context(self, section: str | None = None) -> ContextAnswer:
        return cast("ContextAnswer", dict(self._call("operating_context", section)))

    def instructions(self) -> str:
        return str(self._call("instructions"))

    def manifest_view(self, task_id: str, principal: str | None = None) -> ManifestView:
        return cast("ManifestView", dict(self._call("manifest_view", task_id, principal)))

    def status_view(self, task_id: str, principal: str | None = None) -> StatusView:
        return cast("StatusView", dict(self._call("status_view", task_id, principal)))

    def resume_view(self, task_id: str, principal: str | None = None) -> ResumeView:
        return cast("ResumeView", dict(self._call("resume_view", task_id, principal)))

    def ref_bytes(self, ref: str, principal: str | None = None) -> tuple[bytes, str]:
        result, data = self._request(
            {"op": "call", "method": "ref_bytes", "args": [ref, principal], "kwargs": {}})
        return data, str(result["media_type"])


class RemoteCursor:
    """The rows of one query the owner ran, as a DuckDB cursor hands them out."""

    def __init__(self, table: Any) -> None:
        columns = [[_python(v) for v in column.to_pylist()] for column in table.columns]
        self._rows: list[tuple[Any, ...]] = list(zip(*columns, strict=True)) if columns \
            else []
        self._next = 0
        self.description = [(name, str(kind), None, None, None, None, None)
                            for name, kind in zip(table.schema.names, table.schema.types,
                                                  strict=True)]

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows, self._next = self._rows[self._next:], len(self._rows)
        return rows

    def fetchone(self) -> tuple[Any, ...] | None:
        if self._next >= len(self._rows):
            return None
        self._next += 1
        return self._rows[self._next - 1]

    def fetchmany(self, size: int = 1) -> list[tuple[Any, ...]]:
        rows = self._rows[self._next:self._next + size]
        self._next += len(rows)
        return rows

    def __iter__(self) -> Any:
        while (row := self.fetchone()) is not None:
            yield row


def _python(value: Any) -> Any:
    """A value as DuckDB's own Python client gives it (Arrow carries HUGEINT sums as
    whole decimals; DuckDB gives int)."""
    if isinstance(value, decimal.Decimal) and value == value.to_integral_value():
        return int(value)
    return value


class RemoteConnection:
    """A read-only connection whose queries the home's owner runs (one statement each:
    ``SELECT``/``WITH``/``EXPLAIN``, positional or named parameters)."""

    def __init__(self, client: OwnerClient, settings: Settings) -> None:
        self._client = client
        self._settings = settings

    def execute(self, sql: str, params: list[Any] | dict[str, Any] | None = None,
                ) -> RemoteCursor:
        import pyarrow as pa

        _, data = _query(self._client, self._settings, sql, params)
        return RemoteCursor(pa.ipc.open_stream(data).read_all())


def _query(client: OwnerClient, settings: Settings, sql: str,
           params: list[Any] | dict[str, Any] | None) -> tuple[Any, bytes]:
    """A query request: the owner stops it at the reader's OSIRIS_QUERY_TIMEOUT_S, and
    the client waits that long plus its usual bound (so the owner's error comes first)."""
    return client.request({"op": "query", "sql": sql, "params": params,
                           "timeout_s": settings.query_timeout_s},
                          timeout_s=settings.query_timeout_s + settings.owner_timeout_s)


class ReadStore:
    """What a reader of a live home needs of a store (the dashboard's): ``read()`` through
    the home's owner, the ref store on disk, the home. Where no owner can serve (a home
    this user may read but not write), it reads the database directly, as before."""

    def __init__(self, settings: Settings) -> None:
        from osiris.store.refs import RefStore

        self.settings = settings
        self.home = settings.home
        self.refs = RefStore(settings.refs_dir)
        self._wire = settings_to_wire(settings)
        self._idle: list[OwnerClient] = []
        self._lock = threading.Lock()
        self._direct: Any = None
        self._checked = False

    def _use_owner(self) -> bool:
        """Whether reads go through the owner (decided at the first read)."""
        with self._lock:
            if not self._checked:
                probe = self._client()
                try:
                    probe.request({"op": "ping"})
                    self._idle.append(probe)
                except OwnerTimeout:  # one runs, stuck: it holds the file; the error says so
                    probe.close()
                    raise
                except OsirisError as exc:
                    probe.close()
                    log.info("no store owner for %s (%s): reading the file", self.home, exc)
                    from osiris.store.state import Store

                    self._direct = Store(self.settings, create=False)
                self._checked = True
            return self._direct is None

    def _client(self) -> OwnerClient:
        return OwnerClient(self.home, self._wire, timeout_s=self.settings.owner_timeout_s)

    @contextlib.contextmanager
    def read(self) -> Iterator[Any]:
        """A connection for one read (the owner's, or a direct one)."""
        if not self._use_owner():
            with self._direct.read() as con:
                yield con
            return
        with self._lock:
            client = self._idle.pop() if self._idle else None
        client = client or self._client()
        try:
            yield RemoteConnection(client, self.settings)
        except BaseException:
            client.close()
            raise
        with self._lock:
            self._idle.append(client)

    def close(self) -> None:
        """Close the connections (or the direct store)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for client in idle:
            client.close()
        if self._direct is not None:
            self._direct.close()


def query(home: str | Path, sql: str, params: list[Any] | dict[str, Any] | None = None,
          *, settings: Settings | None = None) -> Any:
    """One read-only SQL statement on the live home ``home``, as a ``pyarrow.Table``
    (the owner is started if none runs). The owner stops it past
    ``settings.query_timeout_s`` (:class:`~osiris.errors.QueryCancelled`): pass
    ``settings`` for other bounds."""
    import pyarrow as pa

    home = Path(home).expanduser().absolute()
    settings = (settings or Settings()).with_home(home)
    client = OwnerClient(home, settings_to_wire(settings), timeout_s=settings.owner_timeout_s)
    try:
        _, data = _query(client, settings, sql, params)
    finally:
        client.close()
    return pa.ipc.open_stream(data).read_all()


if TYPE_CHECKING:
    def _implements_the_interface(engine: RemoteEngine) -> Facade:
        return engine  # mypy checks here that RemoteEngine is a Facade


def open_engine(settings: Settings) -> Facade:
    """The engine a serving process should use: the home's store owner's
    (:class:`osiris.engine.remote.RemoteEngine`) when ``OSIRIS_STORE_OWNER`` is on (the
    default), else an :class:`Engine` that opens the database for each call."""
    if settings.store_owner:
        return RemoteEngine(settings)
    from osiris.engine.facade import Engine

    return Engine(settings)
