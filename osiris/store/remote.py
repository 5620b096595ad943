"""Using a home through its store owner (:mod:`osiris.owner`) from another process.

* :class:`RemoteEngine` has the engine facade's methods and runs each one in the owner:
  the stdio and HTTP servers, hooks and ``osiris run`` use it when ``OSIRIS_STORE_OWNER``
  is on (the default). It imports neither DuckDB nor the tokenizer.
* :func:`query` runs one read-only SQL statement on a live home and returns a
  ``pyarrow.Table``: the way for a notebook to read a home that agents are writing::

      from osiris.store.remote import query
      events = query("~/.osiris", "SELECT kind, count(*) AS n FROM events GROUP BY kind")
      events.to_pandas()  # or polars.from_arrow(events)

  For a copy to keep, export the tables to Parquet through the same path
  (``query(home, "SELECT * FROM ledger").to_pandas().to_parquet(…)``, or pyarrow's
  ``parquet.write_table``).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from osiris.config import Settings, settings_to_wire
from osiris.errors import OsirisError
from osiris.store.owner_client import OwnerClient, socket_path, start_owner, try_connect

log = logging.getLogger(__name__)


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
            sock = try_connect(socket_path(self.settings.home))
            if sock is None:
                start_owner(self.settings.home)
            else:
                sock.close()
        except (OSError, OsirisError) as exc:  # the first call will say what is wrong
            log.info("cannot start the store owner of %s yet: %s", self.settings.home, exc)

    def _request(self, doc: dict[str, Any]) -> tuple[Any, bytes]:
        with self._lock:
            client = self._idle.pop() if self._idle else None
        if client is None:
            client = OwnerClient(self.settings.home, self._wire)
        try:
            answer = client.request(doc)
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

    # The facade's methods (osiris.engine.Engine documents each one).

    def plan(self, mode: str, **kwargs: Any) -> dict[str, Any]:
        return dict(self._call("plan", mode, **kwargs))

    def precheck(self, task_id: str, tool: str, **kwargs: Any) -> dict[str, Any]:
        return dict(self._call("precheck", task_id, tool, **kwargs))

    def observe(self, task_id: str, kind: str, **kwargs: Any) -> dict[str, Any]:
        return dict(self._call("observe", task_id, kind, **kwargs))

    def recall(self, ref: str, op: str = "head", **kwargs: Any) -> dict[str, Any]:
        return dict(self._call("recall", ref, op, **kwargs))

    def checkpoint(self, task_id: str, mode: str, **kwargs: Any) -> dict[str, Any]:
        return dict(self._call("checkpoint", task_id, mode, **kwargs))

    def handoff(self, mode: str, **kwargs: Any) -> dict[str, Any]:
        return dict(self._call("handoff", mode, **kwargs))

    def compacted(self, task_id: str, **kwargs: Any) -> dict[str, Any]:
        return dict(self._call("compacted", task_id, **kwargs))

    def route_output(self, task_id: str, text: str, **kwargs: Any) -> dict[str, Any] | None:
        answer = self._call("route_output", task_id, text, **kwargs)
        return None if answer is None else dict(answer)

    def operating_context(self, section: str | None = None) -> dict[str, Any]:
        return dict(self._call("operating_context", section))

    def instructions(self) -> str:
        return str(self._call("instructions"))

    def manifest_view(self, task_id: str, principal: str | None = None) -> dict[str, Any]:
        return dict(self._call("manifest_view", task_id, principal))

    def status_view(self, task_id: str, principal: str | None = None) -> dict[str, Any]:
        return dict(self._call("status_view", task_id, principal))

    def resume_view(self, task_id: str, principal: str | None = None) -> dict[str, Any]:
        return dict(self._call("resume_view", task_id, principal))

    def ref_bytes(self, ref: str, principal: str | None = None) -> tuple[bytes, str]:
        result, data = self._request(
            {"op": "call", "method": "ref_bytes", "args": [ref, principal], "kwargs": {}})
        return data, str(result["media_type"])


def query(home: str | Path, sql: str, params: list[Any] | dict[str, Any] | None = None,
          *, settings: Settings | None = None) -> Any:
    """One read-only SQL statement on the live home ``home``, as a ``pyarrow.Table``
    (the owner is started if none runs)."""
    import pyarrow as pa

    home = Path(home).expanduser().absolute()
    settings = (settings or Settings()).with_home(home)
    client = OwnerClient(home, settings_to_wire(settings))
    try:
        _, data = client.request({"op": "query", "sql": sql, "params": params})
    finally:
        client.close()
    return pa.ipc.open_stream(data).read_all()
