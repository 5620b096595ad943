"""The store owner: one long-lived process per home that keeps the database open and
serves every other OSIRIS process of that home over a local socket.

Why
---
DuckDB lets one process open a file read-write, and opening it costs 15-25 ms; every
hook, ``osiris run`` and stdio server used to open, lock, commit and close it for each
call, and a hook also paid for importing DuckDB and the tokenizer (about 0.8 s added to
every tool call of a Claude Code session). The owner pays those once: it holds the
database (``Store(exclusive=True)``: one connection and the exclusive ``flock`` on
``osiris.duckdb.lock`` for its whole life), the tokenizer and the rule files, and runs
each engine call on that connection. Clients (:mod:`osiris.owner_wire`) import
only the standard library.

How
---
* **Start on first use.** A client that finds no owner starts ``python -m osiris owner
  --home H`` detached and connects as soon as it listens. ``owner.lock`` in the home,
  held with ``flock`` for the owner's life, makes sure two owners never serve one home:
  a second one exits at once, and its starter connects to the first.
* **Stale state recovers itself.** The kernel drops a dead owner's locks; the next owner
  takes ``owner.lock``, removes the socket left behind and binds a new one. A client that
  connects to a dead socket gets ``ECONNREFUSED`` and starts an owner.
* **Idle exit.** With no request for ``OSIRIS_OWNER_IDLE_S`` (120 s) the owner closes the
  database and exits, so a notebook can open the file; a process that opens the file
  directly while an owner runs asks it to step aside (``release``) and the next client
  starts a new one.
* **Only this user.** The socket is created mode 0600 (in the home, or in a 0700
  directory of this user when the home's path is too long for a socket address) and
  every connection's peer uid (``SO_PEERCRED``) must be the owner's; anyone else is cut
  off without a reply. The owner runs with umask 077 and makes the home private when it
  opens it (:mod:`osiris.store.fsutil`): DuckDB's database and WAL, the logs and the
  refs are the user's alone.
* **Durable before acknowledged.** A reply is sent after the call's transaction has
  committed (DuckDB syncs its WAL on COMMIT) and the journal witness is written: a call
  whose answer arrived survives a SIGKILL of the owner. A call in flight when the owner
  dies gets :class:`~osiris.owner_wire.OwnerLost` ("may or may not have taken
  effect"), never a false success.
* **CPU work outside the lock.** Calls run on one thread per connection; only the
  transaction itself is serialised (the store's mutex). ``observe`` of a large payload
  is scrubbed, hashed, written to the ref store, counted and previewed before its
  transaction starts (:func:`osiris.engine.payloads.prepare_payload`).
* **Bad input harms nobody.** A frame that is not JSON, too large, cut off, or an
  unknown operation gets an error reply (or a closed connection) for that client only.
* **Readers.** ``query`` runs one read-only SQL statement (``SELECT``, ``WITH``,
  ``DESCRIBE``, ``SHOW``, ``SUMMARIZE``, ``EXPLAIN``) on a cursor of its own, beside the
  calls (:meth:`osiris.store.state.Store.reader`), and answers with an Arrow IPC stream:
  notebooks and the dashboard read a live home through the owner
  (:func:`osiris.engine.remote.query`). DuckDB is told to stop it (``interrupt()``) when
  it runs past its time (the request's ``timeout_s``, else ``OSIRIS_QUERY_TIMEOUT_S``),
  when its client closes the connection, or when the owner stops.
* **A failed start is said.** An owner that cannot open the store writes why to
  ``owner.failed`` before it exits (:func:`osiris.owner_wire.record_failed_start`), so
  its starter knows at once and later clients do not start one again for nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import io
import json
import logging
import os
import select
import signal
import socket
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from osiris import owner_wire as wire
from osiris.config import Settings, settings_from_wire
from osiris.engine.interface import FACADE_METHODS
from osiris.errors import (
    ConfigError,
    InvalidInputError,
    OsirisError,
    QueryCancelled,
    StoreBusyError,
    StoreError,
)
from osiris.store.fsutil import PRIVATE_FILE, PRIVATE_UMASK, make_private_dirs

log = logging.getLogger("osiris.owner")

ENGINE_METHODS = FACADE_METHODS
"""What a client may ask the owner's engine: the interface's methods, no other."""
READ_STATEMENTS = ("SELECT", "EXPLAIN")
MAX_PARSED = 64
"""Distinct light-client environments whose settings are kept parsed."""
FLUSH_AFTER_S = 0.25
"""Deferred rows wait at most about this long before the owner writes them to DuckDB."""


class Owner:
    """The owner of one home (see the module docstring)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.home = settings.home
        self.started = time.monotonic()
        self.last_request = time.monotonic()
        self.requests = 0
        #: Requests other than pings answered (the fault test waits for real work).
        self.served = 0
        self.in_flight = 0
        self._count = threading.Lock()
        self._stop = threading.Event()
        self._engines: dict[str, Any] = {}
        self._engines_lock = threading.Lock()
        self._parsed: dict[tuple[tuple[str, str], ...], Settings] = {}
        """Light clients' variables -> their settings (parsed once)."""
        self._by_text: dict[str, Any] = {}
        """Settings as a client sends them (JSON text) -> the engine for them."""
        self._lock_fd: int | None = None
        self.store: Any = None
        self._queries: set[QueryWatch] = set()
        self._queries_lock = threading.Lock()

    # -- life ----------------------------------------------------------------------

    def claim(self, timeout_s: float = 10.0) -> bool:
        """Take ``owner.lock``; False when another owner holds it and serves. An owner
        that holds it without serving is shutting down: wait for it to let go."""
        make_private_dirs(self.home)
        fd = os.open(self.home / wire.LOCK_NAME, os.O_RDWR | os.O_CREAT, PRIVATE_FILE)
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                serving = wire.try_connect(wire.socket_path(self.home))
                if serving is not None or time.monotonic() > deadline:
                    if serving is not None:
                        serving.close()
                    os.close(fd)
                    return False
                time.sleep(0.01)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._lock_fd = fd
        return True

    def open_store(self) -> None:
        """Open the database for the owner's life (waits its turn behind a process that
        has it open directly, up to the lock timeout)."""
        from osiris.store.state import Store

        self.store = Store.owned(self.settings)
        self.store.db.migrate()
        if self.store.behind is not None:
            threading.Thread(target=self._flush_when_idle, daemon=True,
                             name="osiris-owner-flush").start()
        # Load the tokenizer, the rules and the engine now, not in the first call.
        self.engine_for({}).ctx.counter.count("warm")

    def serve(self) -> None:
        """Listen until idle, released or terminated."""
        path = wire.socket_path(self.home)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # left by a dead owner: we hold owner.lock
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            server.bind(os.fsencode(str(path)))
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
        inode = os.stat(path).st_ino
        server.listen(128)
        server.settimeout(0.25)
        log.info("owner %d serving %s at %s", os.getpid(), self.home, path)
        try:
            while not self._stop.is_set():
                try:
                    conn, _ = server.accept()
                except TimeoutError:
                    if not _same_socket(path, inode):
                        log.info("owner %d: its socket or home is gone: exiting", os.getpid())
                        break
                    if self._idle():
                        log.info("owner %d idle for %gs: exiting", os.getpid(),
                                 self.settings.owner_idle_s)
                        break
                    continue
                threading.Thread(target=self._serve_connection, args=(conn,), daemon=True,
                                 name="osiris-owner-conn").start()
        finally:
            server.close()
            with contextlib.suppress(FileNotFoundError):
                if _same_socket(path, inode):
                    path.unlink()
            with self._queries_lock:  # a long read must not hold the database's release
                running = list(self._queries)
            for watch in running:
                watch.cancel("the store owner stopped")
            self._wait_for_calls(5.0)
            self.close()

    def _flush_when_idle(self) -> None:
        """Write deferred rows to DuckDB once they have waited :data:`FLUSH_AFTER_S`,
        beside the calls (:meth:`osiris.store.state.Store.flush`)."""
        while not self._stop.is_set():
            self._stop.wait(FLUSH_AFTER_S / 2)
            store = self.store
            if store is None:
                return
            try:
                store.flush(FLUSH_AFTER_S)
            except OsirisError as exc:  # the rows stay in the log; calls go on
                log.error("owner %d: %s", os.getpid(), exc)

    def stop(self) -> None:
        """Stop accepting; the serve loop closes the store once calls in flight end."""
        self._stop.set()

    def close(self) -> None:
        """Close the database (after writing deferred rows) and release ``owner.lock``."""
        self._stop.set()
        if self.store is not None:
            self.store.close()
            self.store = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def _idle(self) -> bool:
        with self._count:
            return self.in_flight == 0 and \
                time.monotonic() - self.last_request > self.settings.owner_idle_s

    def _wait_for_calls(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self._count:
                if self.in_flight == 0:
                    return
            time.sleep(0.01)

    # -- connections ---------------------------------------------------------------

    def _serve_connection(self, conn: socket.socket) -> None:
        with conn:
            try:
                if wire.peer_uid(conn) != os.getuid():
                    log.warning("refused a connection from uid %d", wire.peer_uid(conn))
                    return
            except OSError:
                return
            while not self._stop.is_set():
                try:
                    doc, _ = wire.recv_frame(conn, wire.MAX_REQUEST_BYTES)
                except EOFError:
                    return
                except ValueError as exc:  # garbage: answer once, then hang up
                    with contextlib.suppress(OSError):
                        wire.send_frame(conn, _error(InvalidInputError(
                            f"the store owner cannot read this request: {exc}")))
                    return
                except OSError:
                    return
                with self._count:
                    self.in_flight += 1
                    self.requests += 1
                    self.last_request = time.monotonic()
                try:
                    reply, binary = self.handle(doc, conn)
                finally:
                    with self._count:
                        self.in_flight -= 1
                        self.last_request = time.monotonic()
                        if doc.get("op") != "ping":
                            self.served += 1
                try:
                    wire.send_frame(conn, reply, binary)
                except OSError:
                    return

    def handle(self, doc: dict[str, Any], conn: socket.socket | None = None,
               ) -> tuple[dict[str, Any], bytes]:
        """One request's reply (never raises). ``conn``: the client's connection, watched
        while a query runs (a query whose client has gone is stopped)."""
        try:
            op = doc.get("op")
            if op == "query":
                return self._query(doc, conn)
            handler = {"ping": self._ping, "release": self._release, "call": self._call,
                       "hook": self._hook}.get(str(op))
            if handler is None:
                raise InvalidInputError(f"unknown store owner operation {op!r}: use ping, "
                                        "call, hook, query or release")
            return handler(doc)
        except OsirisError as exc:
            return _error(exc), b""
        except Exception as exc:  # a bug must cost one call, not the owner
            log.error("owner call failed: %s", "".join(traceback.format_exception(exc)))
            return _error(StoreError(f"internal error in the store owner: "
                                     f"{type(exc).__name__}: {exc}")), b""

    def _ping(self, doc: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
        return {"ok": True, "result": self.stats()}, b""

    def _release(self, doc: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
        self.stop()
        return {"ok": True, "result": {"released": True}}, b""

    def stats(self) -> dict[str, Any]:
        """Who serves this home and how busy it has been; with write-behind, how many of
        its transactions went to DuckDB and for which statements (a hooked call should
        not: each one waits for a flush)."""
        out: dict[str, Any] = {
            "pid": os.getpid(), "home": str(self.home), "requests": self.requests,
            "served": self.served, "in_flight": self.in_flight,
            "uptime_s": round(time.monotonic() - self.started, 3)}
        behind = self.store.behind if self.store is not None else None
        if behind is not None:
            reasons = dict(behind.slow_reasons)  # a copy: calls go on in other threads
            out["on_duckdb"] = {"transactions": sum(reasons.values()),
                                "flushes": behind.flushes,
                                "statements": dict(sorted(reasons.items(),
                                                          key=lambda kv: -kv[1])[:10])}
        return out

    # -- operations ----------------------------------------------------------------

    def engine_for(self, doc: dict[str, Any]) -> Any:
        """The engine for the caller's settings (one per distinct settings, all on the
        owner's store)."""
        from osiris.config import settings_to_wire
        from osiris.engine import Engine

        raw = doc.get("settings")
        # A client sends the same settings with every call: the engine for them is found
        # by their text before they are parsed again (0.1 ms a call, measured).
        quick = None if not isinstance(raw, dict) else json.dumps(raw, sort_keys=True)
        with self._engines_lock:
            engine = self._by_text.get(quick) if quick is not None else None
        if engine is not None:
            return engine
        settings = self._settings_of(doc)
        if settings.home.absolute() != self.home.absolute():
            raise InvalidInputError(f"this owner serves {self.home}, not {settings.home}")
        key = repr(sorted(settings_to_wire(settings).items()))
        with self._engines_lock:
            engine = self._engines.get(key)
            if engine is None:
                engine = Engine(settings, store=self.store)
                self._engines[key] = engine
            if quick is not None:
                if len(self._by_text) >= MAX_PARSED:
                    self._by_text.clear()
                self._by_text[quick] = engine
        return engine

    def _settings_of(self, doc: dict[str, Any]) -> Settings:
        """The caller's settings: sent whole, or as the variables they are made of (a
        light client's, parsed here as :meth:`Settings.from_env` would have there)."""
        variables = doc.get("environment")
        if variables is None:
            raw = doc.get("settings")
            return self.settings if raw is None else settings_from_wire(raw)
        if not isinstance(variables, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in variables.items()):
            raise InvalidInputError("environment must be an object of strings")
        key = tuple(sorted(variables.items()))
        with self._engines_lock:
            settings = self._parsed.get(key)
        if settings is None:
            settings = Settings.from_env(variables)
            with self._engines_lock:
                if len(self._parsed) >= MAX_PARSED:
                    self._parsed.clear()
                self._parsed[key] = settings
        return settings

    def _call(self, doc: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
        method = doc.get("method")
        args, kwargs = doc.get("args") or [], doc.get("kwargs") or {}
        if method not in ENGINE_METHODS:
            raise InvalidInputError(f"the store owner does not run {method!r}")
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            raise InvalidInputError("args must be a list and kwargs an object")
        engine = self.engine_for(doc)
        if method == "ref_bytes":
            data, media_type = engine.ref_bytes(*args, **kwargs)
            return {"ok": True, "result": {"media_type": media_type}}, data
        kwargs.pop("prepared", None)  # only ever the checked one below
        if method == "observe" and doc.get("prepared") is not None:
            kwargs = _with_handed_work(engine, kwargs, doc["prepared"])
        try:
            result = getattr(engine, method)(*args, **kwargs)
        except TypeError as exc:
            raise InvalidInputError(f"bad arguments for {method}: {exc}") from exc
        return {"ok": True, "result": result}, b""

    def _hook(self, doc: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
        from osiris.clients.hooks import run_hook, skipped

        raw = doc.get("raw")
        if not isinstance(raw, str):
            raise InvalidInputError("a hook request needs raw: the client's hook input")
        try:
            engine = self.engine_for(doc)
        except ConfigError as exc:  # the hook's variables: its answer says so, fail-open
            outcome = skipped(None, str(doc.get("event")), f"configuration error: {exc}",
                              raw.encode("utf-8"), client=str(doc.get("client")))
        else:
            principal = doc.get("principal")
            outcome = run_hook(engine.settings, str(doc.get("event")), raw.encode("utf-8"),
                               str(doc.get("client")), engine=engine,
                               principal=principal if isinstance(principal, str) else None)
        return {"ok": True, "result": {"stdout": outcome.stdout, "exit_code": outcome.exit_code,
                                       "problem": outcome.problem,
                                       "stderr": outcome.stderr}}, b""

    def _query(self, doc: dict[str, Any],
               conn: socket.socket | None) -> tuple[dict[str, Any], bytes]:
        import duckdb
        import pyarrow as pa

        sql, params = doc.get("sql"), doc.get("params")
        timeout_s = doc.get("timeout_s", self.settings.query_timeout_s)
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) \
                or not 0 < timeout_s < float("inf"):
            raise InvalidInputError("timeout_s must be a positive number of seconds")
        if not isinstance(sql, str) or not sql.strip():
            raise InvalidInputError("a query needs sql: one read-only SQL statement")
        if params is not None and not isinstance(params, list | dict):
            raise InvalidInputError("params must be a list or an object")
        try:
            statements = duckdb.extract_statements(sql)
        except duckdb.Error as exc:
            raise InvalidInputError(f"the query does not parse: {exc}") from exc
        if len(statements) != 1 or statements[0].type.name not in READ_STATEMENTS:
            raise InvalidInputError("the owner runs one read-only statement per query "
                                    "(SELECT, WITH … SELECT, DESCRIBE, SHOW, EXPLAIN); export "
                                    "or copy the data from its answer")
        with self.store.reader() as cursor:
            watch = QueryWatch(cursor, conn, float(timeout_s))
            with self._queries_lock:
                self._queries.add(watch)
            watch.start()
            try:
                table = cursor.execute(sql, params or []).to_arrow_table()
            except duckdb.Error as exc:
                reason = watch.finish()
                if reason is not None:
                    raise QueryCancelled(f"the query was cancelled: {reason}") from exc
                raise InvalidInputError(f"the query failed: {exc}") from exc
            finally:
                watch.finish()
                with self._queries_lock:
                    self._queries.discard(watch)
        sink = io.BytesIO()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        return {"ok": True, "result": {"format": "arrow-ipc", "rows": table.num_rows}}, \
            sink.getvalue()


class QueryWatch(threading.Thread):
    """Stops one query (DuckDB's ``interrupt()`` on its cursor) when its time is up, when
    its client has closed the connection, or when the owner stops: a reader killed
    mid-query used to leave its query running for as long as it took."""

    def __init__(self, cursor: Any, conn: socket.socket | None, timeout_s: float) -> None:
        super().__init__(daemon=True, name="osiris-owner-query")
        self.cursor, self.conn, self.timeout_s = cursor, conn, timeout_s
        self.deadline = time.monotonic() + timeout_s
        #: Why the query was stopped (None: it was not).
        self.reason: str | None = None
        self._done = threading.Event()
        self._lock = threading.Lock()

    def run(self) -> None:
        poller = select.poll()
        if self.conn is not None:  # the peer's close: POLLRDHUP (POLLHUP/ERR always come)
            poller.register(self.conn, select.POLLRDHUP)
        while not self._done.is_set():
            left = self.deadline - time.monotonic()
            if left <= 0:
                self.cancel(f"it ran past {self.timeout_s:g}s (OSIRIS_QUERY_TIMEOUT_S): "
                            "narrow it (a WHERE, a LIMIT, fewer columns), or give this "
                            "reader a larger OSIRIS_QUERY_TIMEOUT_S")
                return
            if poller.poll(min(left, 0.1) * 1000):
                self.cancel("its client closed the connection")
                return

    def cancel(self, reason: str) -> None:
        """Stop the query (once, and only while it runs)."""
        import duckdb

        with self._lock:
            if self._done.is_set() or self.reason is not None:
                return
            self.reason = reason
            log.info("owner %d: stopping a query: %s", os.getpid(), reason)
            with contextlib.suppress(duckdb.Error):
                self.cursor.interrupt()

    def finish(self) -> str | None:
        """The query has ended: stop watching; why it was stopped, if it was."""
        with self._lock:
            self._done.set()
            return self.reason


def _with_handed_work(engine: Any, kwargs: dict[str, Any], doc: object) -> dict[str, Any]:
    """``kwargs`` of an observe whose client did the payload's work: its scrubbed result
    marked as such (not scrubbed again) and the work passed on, when the work was made
    for exactly that text by this OSIRIS with these rules and this encoding; else as
    they came (the engine does the work)."""
    from osiris._version import __version__
    from osiris.core.payload_work import from_wire
    from osiris.core.redaction import ScrubbedText, default_rules

    text = kwargs.get("result")
    if not isinstance(text, str):
        return kwargs
    work = from_wire(doc, text, version=__version__, rules_version=default_rules().version,
                     encoding=engine.ctx.counter.encoding_name)
    if work is None:
        return kwargs
    return {**kwargs, "result": ScrubbedText(work.scrubbed), "prepared": work}


def _error(exc: OsirisError) -> dict[str, Any]:
    return {"ok": False, "error": {"type": type(exc).__name__, "code": exc.code,
                                   "message": str(exc)}}


def _same_socket(path: Path, inode: int) -> bool:
    """Whether ``path`` is still the socket we bound (not gone with its home, not replaced
    by a successor's)."""
    try:
        return os.stat(path).st_ino == inode
    except OSError:
        return False


def main(argv: list[str]) -> int:
    """``osiris owner --home DIR``: serve a home until idle (started by clients)."""
    # Before anything is written: the owner makes the home's files, and DuckDB makes the
    # database, its WAL (again after each checkpoint) and its temporary files with this
    # process's umask, not with modes of OSIRIS's choosing. Its stderr, owner.log, was
    # opened by its starter (osiris.owner_wire) and is made private when the store opens.
    os.umask(PRIVATE_UMASK)
    parser = argparse.ArgumentParser(prog="osiris owner",
                                     description="serve one OSIRIS home over its socket")
    parser.add_argument("--home", required=True, help="the OSIRIS home to own")
    args = parser.parse_args(argv)
    from dataclasses import replace

    settings = Settings.from_env()
    settings = replace(settings, home=Path(args.home).absolute())
    logging.basicConfig(level=settings.log_level, stream=None,
                        format="%(asctime)s owner[%(process)d] %(levelname)s %(message)s")
    owner = Owner(settings)
    if not owner.claim():
        return 0  # another owner serves this home: the client connects to it
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: owner.stop())
    try:
        owner.open_store()
    except Exception as exc:  # DuckDB's own errors too: whatever it is, its starter hears
        log.error("cannot open the store of %s: %s", settings.home, exc)
        code = exc.code if isinstance(exc, OsirisError) else type(exc).__name__
        # Said before owner.lock is let go, so that a client that sees the owner gone
        # finds why. A busy store is not remembered: the next call may find it free.
        wire.record_failed_start(settings.home, pid=os.getpid(), code=code,
                                 message=str(exc),
                                 remember=not isinstance(exc, StoreBusyError)
                                 and settings.db_path.exists())
        owner.close()
        return 1
    wire.forget_failed_start(settings.home)  # this start worked: clients may start owners
    owner.serve()
    return 0
