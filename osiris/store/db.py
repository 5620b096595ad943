"""The state database: one DuckDB file shared by many OSIRIS processes.

Why it is built this way
------------------------
DuckDB lets exactly one process open a database file read-write, and while it is
open no other process can open it at all, not even read-only (``IOException:
Could not set lock on file … Conflicting lock is held``; ../shared/FACTS.md). Yet
every stdio MCP client spawns its own OSIRIS server, and the dashboard and the
notebooks read while agents write. By default one process per home, the store owner
(:mod:`osiris.owner`), holds the file and serves the others over a socket; this module
is what it, and every process with ``OSIRIS_STORE_OWNER=off``, opens the file with:

* Every unit of work opens a connection, does its work in one transaction and
  closes it ("connection per unit of work"), unless its caller keeps one (the owner's
  write-behind, :mod:`osiris.store.write_behind`).
* Before opening, a process takes an advisory ``flock`` on ``osiris.duckdb.lock`` beside
  the database: exclusive for writers, shared for readers. OSIRIS processes thus
  queue on the lock file instead of colliding on DuckDB's own lock, readers run
  side by side, and a SIGKILLed holder releases its lock with its last descriptor.
* Writers are not starved by readers. A shared ``flock`` is granted while a writer
  waits, so readers that overlap back to back (two dashboards polling a large home)
  could hold a writer off for ever. A second lock file, ``osiris.duckdb.turnstile``, is
  the queue: a writer holds it exclusively while it waits for the main lock, and a
  reader passes it (takes it shared, lets go at once) before asking for the main lock.
  Readers that arrive after a writer began to wait thus queue behind it, the readers
  already inside finish, and the writer goes next. This is a preference for writers
  over later readers, not a queue: among several waiting writers, and for a reader
  that passed the turnstile just before a writer took it, the kernel decides the order.
* Waiting is in the kernel and bounded: a contended ``flock`` blocks in a helper thread
  (woken the moment the holder lets go) for at most ``OSIRIS_LOCK_TIMEOUT_S`` (30 s by
  default); past it the call fails with :class:`~osiris.errors.StoreBusyError`, naming
  the processes that hold the lock (from ``/proc/locks``), and nothing half-written.
* A process outside OSIRIS (a notebook with its own ``duckdb.connect``) does not
  take our lock; its DuckDB lock conflict is retried with a short doubling back-off,
  bounded by the same timeout.
* Reads need no write access. A process's first read checks the applied migrations
  under the shared lock and takes the exclusive lock only when one is pending, so a
  dashboard may read a home it cannot write (lock files it may only read are locked
  read-only; without any, a reader relies on DuckDB's own lock and its retry). A home
  that needs migrating and is not writable is refused with an error that says so.
* Nesting: a ``write()`` or ``read()`` inside a ``write()`` joins it, and an inner
  ``on_commit`` runs after the outer COMMIT. A ``write()`` inside a ``read()`` of the
  same thread would wait for its own shared lock: it fails at once, as a bug.
* ``on_commit`` work (the journal witness) runs after COMMIT; when it fails the call
  has nevertheless taken effect, and :class:`~osiris.errors.CommittedWithErrors` says so.
* An ``exclusive`` database (the benchmark's private workspace) keeps one
  connection open for the life of the object: nobody else uses that home.

Durability: DuckDB commits with one fdatasync; a torn WAL tail after a crash is
dropped silently, which is why the journal keeps a witness file outside the
database (``osiris.store.journal``).
"""
from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb

from osiris.errors import (
    CommittedWithErrors,
    NotFoundError,
    OsirisError,
    SchemaError,
    StoreBusyError,
    StoreError,
)
from osiris.store.fsutil import PRIVATE_FILE, keep_private, make_private_dirs
from osiris.store.migrations import MIGRATIONS, Migration

log = logging.getLogger(__name__)

_CONFLICT_MARKERS = ("Conflicting lock", "Could not set lock")
_WRITE_IN_READ = (
    "a write (Store.transaction or Database.write) was started inside a read (Store.read) "
    "of the same thread: it would wait for the read's own shared lock until the lock "
    "timeout. This is a bug in the caller, not a busy store: finish the read first, or "
    "do the reading inside the transaction")


class Database:
    """Access to ``osiris.duckdb`` with the locking discipline described above."""

    def __init__(self, path: Path, *, lock_timeout_s: float = 30.0, exclusive: bool = False,
                 migrations: tuple[Migration, ...] = MIGRATIONS, create: bool = True) -> None:
        self.path = path
        #: False: never create the file or its directory (NotFoundError when absent).
        self.create = create
        self.lock_path = path.with_name(path.name + ".lock")
        #: DuckDB's write-ahead log: it makes it at the first write after a checkpoint.
        self.wal_path = path.with_name(path.name + ".wal")
        self.turnstile_path = path.with_name(path.name + ".turnstile")
        self.lock_timeout_s = lock_timeout_s
        self.exclusive = exclusive
        self._migrations = migrations
        self._held: duckdb.DuckDBPyConnection | None = None
        self._held_lock: int | None = None
        # Per thread: the open write transaction (nested calls join it), the callbacks to
        # run after it commits, and how many reads are open. And a mutex that serialises
        # this process's writers (and, when exclusive, everyone: a DuckDB connection must
        # not be shared by two threads at once).
        self._local = threading.local()
        self._mutex = threading.RLock()
        self._migrated = False
        #: Seconds spent waiting for locks by this object (reported by the benchmark).
        self.lock_wait_s = 0.0
        #: Seconds the last write held the store (its transaction and after-commit work).
        self.last_write_held_s = 0.0
        #: Seconds the last unit of work held the home's lock (open, work, close; for an
        #: exclusive database, the last write's turn).
        self.last_lock_held_s = 0.0

    # -- public API -----------------------------------------------------------------

    @contextlib.contextmanager
    def write(self, on_commit: Callable[[], None] | None = None,
              ) -> Iterator[duckdb.DuckDBPyConnection]:
        """A read-write connection inside one transaction; commits on success.

        ``on_commit`` runs after COMMIT while the lock is still held (the journal
        witness uses it); if it fails, :class:`CommittedWithErrors` is raised: the
        changes stay committed. Re-entrant: a nested ``write()`` (or ``read()``) joins
        the outer transaction, and a nested ``on_commit`` runs after the outer COMMIT
        (never, when the outer transaction rolls back). A ``write()`` inside a
        ``read()`` of the same thread raises StoreError at once.
        """
        if self._current is not None:
            if on_commit is not None:
                self._local.after_commit.append(on_commit)
            yield self._current
            return
        if getattr(self._local, "reads", 0):
            raise StoreError(_WRITE_IN_READ)
        after_commit = [on_commit] if on_commit is not None else []
        with self._mutex, self._connection(read_only=False) as con:
            if not self._migrated:  # on this connection: no second open just to check
                self._apply_migrations(con)
            began = time.perf_counter()
            con.execute("BEGIN TRANSACTION")
            self._current = con
            self._local.after_commit = after_commit
            try:
                yield con
                con.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(duckdb.Error):
                    con.execute("ROLLBACK")
                raise
            finally:
                self._current = None
                self._local.after_commit = []
            # DuckDB makes the WAL anew after each checkpoint, with the umask's mode: a
            # process without the owner's umask makes it private here (one stat when it
            # is already).
            keep_private(self.wal_path)
            try:
                _run_after_commit(after_commit)
            finally:
                self.last_write_held_s = time.perf_counter() - began
                if self._held is not None:  # one connection for life: the turn is the lock
                    self.last_lock_held_s = self.last_write_held_s

    @contextlib.contextmanager
    def hold(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """The exclusive connection, this thread's alone, outside any transaction (the
        store owner's write-behind begins and commits its own; :meth:`join` makes nested
        :meth:`write` and :meth:`read` calls use the one it begins)."""
        if not self.exclusive:
            raise StoreError("Database.hold() needs an exclusive database")
        if getattr(self._local, "reads", 0):
            raise StoreError(_WRITE_IN_READ)
        with self._mutex, self._connection(read_only=False) as con:
            if not self._migrated:
                self._apply_migrations(con)
            began = time.perf_counter()
            try:
                yield con
            finally:
                self.last_write_held_s = self.last_lock_held_s = time.perf_counter() - began

    def join(self, con: duckdb.DuckDBPyConnection | None) -> None:
        """Inside :meth:`hold`: ``con`` is in a transaction that nested writes and reads
        join (None: it ended)."""
        self._current = con
        self._local.after_commit = []

    @contextlib.contextmanager
    def read(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A read-only connection, shared with other readers."""
        if self._current is not None:
            yield self._current
            return
        guard = self._mutex if self.exclusive else contextlib.nullcontext()
        reads = getattr(self._local, "reads", 0)
        self._local.reads = reads + 1
        try:
            if not self._migrated and self.path.exists():
                # The first read: check the schema on the read's own connection, under
                # the shared lock; only a pending migration needs the exclusive one.
                with guard, self._connection(read_only=not self.exclusive) as con:
                    if not self._pending_migrations(con):
                        self._migrated = True
                        yield con
                        return
            if not self._migrated:
                self._migrate_for_read()
            with guard, self._connection(read_only=not self.exclusive) as con:
                yield con
        finally:
            self._local.reads = reads

    def migrate(self) -> list[str]:
        """Apply pending migrations; return the names applied now."""
        if not self.create and not self.path.exists():
            raise NotFoundError(f"{self.path} does not exist")
        with self._mutex, self._connection(read_only=False) as con:
            return self._apply_migrations(con)

    def applied_migrations(self) -> list[str]:
        """Names of the migrations recorded in the database, in order."""
        with self.read() as con:
            rows = con.execute("SELECT name FROM schema_migrations ORDER BY id").fetchall()
        return [r[0] for r in rows]

    @property
    def _current(self) -> duckdb.DuckDBPyConnection | None:
        return getattr(self._local, "current", None)

    @_current.setter
    def _current(self, con: duckdb.DuckDBPyConnection | None) -> None:
        self._local.current = con

    @property
    def schema_version(self) -> str:
        """Name of the newest migration this code knows."""
        return self._migrations[-1].name

    def close(self) -> None:
        """Release the exclusive connection, if one is held."""
        if self._held is not None:
            self._held.close()
            self._held = None
        if self._held_lock is not None:
            if self._held_lock >= 0:
                _release(self._held_lock)
            self._held_lock = None

    # -- connections and locks --------------------------------------------------------

    @contextlib.contextmanager
    def _connection(self, *, read_only: bool) -> Iterator[duckdb.DuckDBPyConnection]:
        if self._held is not None:
            yield self._held
            return
        if self.create:
            make_private_dirs(self.path.parent)
        elif not self.path.exists():
            raise NotFoundError(f"{self.path} does not exist")
        fd = self._acquire_lock(shared=read_only)
        locked = time.perf_counter()
        try:
            fresh = not read_only and not self.path.exists()
            con = self._connect(read_only=read_only)
            if fresh:  # DuckDB made the file with this process's umask
                keep_private(self.path)
            if self.exclusive:
                self._held, self._held_lock = con, fd
                fd = -1
                yield con
                return
            try:
                yield con
            finally:
                con.close()
        finally:
            if fd >= 0:
                _release(fd)
                self.last_lock_held_s = time.perf_counter() - locked

    def _acquire_lock(self, *, shared: bool) -> int:
        """The main lock (shared for readers), taken through the turnstile so that a
        waiting writer goes before readers that arrive after it."""
        started = time.monotonic()
        gate = self._flock(self.turnstile_path, fcntl.LOCK_SH if shared else fcntl.LOCK_EX,
                           self.lock_timeout_s)
        try:
            if shared and gate >= 0:  # a reader only passes through
                _release(gate)
                gate = -1
            left = max(self.lock_timeout_s - (time.monotonic() - started), 0.0)
            return self._flock(self.lock_path, fcntl.LOCK_SH if shared else fcntl.LOCK_EX,
                               left)
        finally:
            if gate >= 0:
                _release(gate)

    def _flock(self, path: Path, mode: int, timeout_s: float) -> int:
        """A descriptor of ``path`` holding ``flock(mode)``, waited for at most
        ``timeout_s`` seconds (then StoreBusyError); -1 for a reader that may not open
        the lock file at all."""
        fd = _open_lock_file(path, shared=mode == fcntl.LOCK_SH)
        if fd < 0:
            return fd
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            pass
        if path == self.lock_path:
            # The home's store owner may be the holder: it steps aside when asked, and the
            # next OSIRIS client starts a new one (osiris.owner).
            ask_owner_to_release(self.path.parent)
        # Contended: wait in the kernel (a blocked flock is woken the moment the holder
        # releases, so waiters are served promptly instead of polling and losing the race
        # to a holder that re-locks at once). The wait runs in a helper thread so that it
        # can be bounded; a waiter that gives up hands the lock straight back if it ever
        # gets it.
        started = time.monotonic()
        waiter = _LockWaiter(fd, mode)
        waiter.start()
        waiter.acquired.wait(timeout_s)
        self.lock_wait_s += time.monotonic() - started
        if waiter.give_up():
            holders = ", ".join(lock_holders(path)) or "another process"
            raise StoreBusyError(
                f"the OSIRIS store {self.path} stayed locked for {self.lock_timeout_s:g}s "
                f"by {holders}: an OSIRIS server, hook, dashboard or benchmark on this "
                "home. Retry when it is done, stop it if it hangs, or raise "
                "OSIRIS_LOCK_TIMEOUT_S"
            )
        if waiter.error is not None:
            os.close(fd)
            raise StoreError(f"cannot lock {path}: {waiter.error}")
        return fd

    def _connect(self, *, read_only: bool) -> duckdb.DuckDBPyConnection:
        started = time.monotonic()
        delay = 0.005
        while True:
            try:
                return connect_duckdb(self.path, read_only=read_only)
            except duckdb.IOException as exc:
                # Only a process that skips our flock can get here: a foreign one, or an
                # OSIRIS reader that may not open the lock files.
                if not any(m in str(exc) for m in _CONFLICT_MARKERS):
                    raise StoreError(f"cannot open {self.path}: {exc}") from exc
                waited = time.monotonic() - started
                if waited >= self.lock_timeout_s:
                    holders = ", ".join(lock_holders(self.path)) or "a process"
                    raise StoreBusyError(
                        f"{self.path} is held open by {holders} that does not take OSIRIS's "
                        "lock (for example a notebook's own duckdb.connect): close that "
                        "connection and retry. To read a home while OSIRIS uses it, open it "
                        "through osiris.store.state.Store(Settings(home=...)).read(), which "
                        "waits its turn"
                    ) from exc
                time.sleep(delay)
                delay = min(delay * 2, 0.2)

    # -- schema -------------------------------------------------------------------------

    def _pending_migrations(self, con: duckdb.DuckDBPyConnection) -> list[str]:
        """Names of the known migrations the database lacks (SchemaError when it holds
        one this code does not know). Reads only: safe on a read-only connection."""
        try:
            done = [r[0] for r in con.execute(
                "SELECT name FROM schema_migrations ORDER BY id").fetchall()]
        except duckdb.CatalogException:  # an empty database: nothing applied yet
            done = []
        known = [m.name for m in self._migrations]
        if done != known[: len(done)]:
            raise SchemaError(
                f"{self.path} has migrations {done} but this OSIRIS knows {known}: the "
                "database was written by a newer or different OSIRIS; upgrade mcp-osiris "
                "or point OSIRIS_HOME elsewhere"
            )
        return known[len(done):]

    def _migrate_for_read(self) -> None:
        """Migrate before a read; when that fails because this process may not write the
        home, say so instead of DuckDB's or the OS's words."""
        try:
            self.migrate()
        except (StoreBusyError, SchemaError, NotFoundError):
            raise
        except (StoreError, OSError, duckdb.Error) as exc:
            if _writable(self.path):
                raise
            raise StoreError(
                f"{self.path} needs migrating to {self.schema_version} (written by an older "
                f"OSIRIS) but is not writable by this process ({exc}). Run OSIRIS once with "
                "write access to this home (mcp-osiris or osiris serve, which migrate it "
                "on their first call), then read it again"
            ) from exc

    def _apply_migrations(self, con: duckdb.DuckDBPyConnection) -> list[str]:
        con.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " id INTEGER PRIMARY KEY, name VARCHAR NOT NULL UNIQUE,"
            " applied_at TIMESTAMP NOT NULL DEFAULT current_timestamp)"
        )
        pending = self._pending_migrations(con)
        done = len(self._migrations) - len(pending)
        applied = []
        for index, migration in enumerate(self._migrations[done:], start=done + 1):
            con.execute("BEGIN TRANSACTION")
            try:
                for statement in migration.statements:
                    con.execute(statement)
                con.execute("INSERT INTO schema_migrations (id, name) VALUES (?, ?)",
                            [index, migration.name])
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
            log.info("applied migration %s to %s", migration.name, self.path)
            applied.append(migration.name)
        self._migrated = True
        return applied


def ask_owner_to_release(home: Path) -> bool:
    """Ask the store owner of ``home`` (if one listens) to close the database and exit;
    True when one agreed."""
    from osiris import owner_wire

    # Bounded, and given up at once on a stopped owner: the caller then waits for the
    # lock as it would for any holder, and its error names the process.
    client = owner_wire.OwnerClient(home, {}, spawn=False, timeout_s=5.0)
    try:
        client.request({"op": "release"})
    except OsirisError:  # none runs, it went away, or it does not answer
        return False
    finally:
        client.close()
    log.info("asked the store owner of %s to release the database", home)
    return True


def connect_duckdb(path: Path, *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection as every OSIRIS connection must be: no extension downloads, and
    no progress bar. DuckDB draws its bar on stdout for a query over 2 s whenever the
    Python client thinks the session interactive (``python -c``, a notebook), and stdout
    is the JSON-RPC channel and the JSON of ``osiris health``/``audit``. The setting is
    per connection: DuckDB refuses it in ``connect(config=…)`` ("as a global option")."""
    con = duckdb.connect(str(path), read_only=read_only,
                         config={"autoload_known_extensions": False,
                                 "autoinstall_known_extensions": False})
    try:
        con.execute("SET enable_progress_bar = false")
    except duckdb.InvalidInputException as exc:
        # In a Jupyter kernel without ipywidgets DuckDB refuses to touch the setting at
        # all (it would render a widget, not text); there stdout is no protocol channel.
        if "progress bar" not in str(exc):
            con.close()
            raise
    except BaseException:
        con.close()
        raise
    return con


def _run_after_commit(callbacks: list[Callable[[], None]]) -> None:
    """Run every callback; any failure becomes CommittedWithErrors (the commit stands)."""
    failures: list[Exception] = []
    for callback in callbacks:
        try:
            callback()
        except Exception as exc:  # each one runs, whatever the others did
            failures.append(exc)
    if failures:
        detail = "; ".join(str(exc) or type(exc).__name__ for exc in failures)
        raise CommittedWithErrors(
            f"the call took effect (its changes are committed), but work after the commit "
            f"failed: {detail}. Do not retry the call: it would be applied a second time"
        ) from failures[0]


def _open_lock_file(path: Path, *, shared: bool) -> int:
    """A descriptor to ``flock`` on: read-write (created if needed) when allowed, else
    read-only (flock works on any descriptor); -1 for a reader that may not open it."""
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT, PRIVATE_FILE)
    except OSError as first:
        try:
            return os.open(path, os.O_RDONLY)
        except OSError:
            if shared:
                # A home this process may not write, with no lock file it may read: the
                # read relies on DuckDB's own lock (and _connect's retry) instead.
                log.debug("reading %s without its lock file: %s", path, first)
                return -1
            raise StoreError(f"cannot lock {path}: {first}; this process may not write "
                             "the OSIRIS home") from first


def _writable(path: Path) -> bool:
    return os.access(path.parent, os.W_OK) and (not path.exists() or os.access(path, os.W_OK))


def lock_holders(path: Path) -> list[str]:
    """The processes holding a lock on ``path`` ("pid N (command) to write"), read from
    ``/proc/locks``; empty where that is unavailable."""
    from osiris.owner_wire import process_state

    try:
        stat = os.stat(path)
        with open("/proc/locks", encoding="ascii", errors="replace") as locks:
            lines = locks.read().splitlines()
    except OSError:
        return []
    wanted = (os.major(stat.st_dev), os.minor(stat.st_dev), stat.st_ino)
    holders: list[str] = []
    for line in lines:
        # "1: FLOCK  ADVISORY  WRITE 4711 fe:00:2164810 0 EOF"; waiters have "->" second.
        parts = line.split()
        if len(parts) < 6 or parts[1] == "->" or not parts[4].isdigit():
            continue
        try:
            major, minor, inode = parts[5].split(":")
            key = (int(major, 16), int(minor, 16), int(inode))
        except ValueError:
            continue
        if key == wanted:
            pid = int(parts[4])
            what = "to write" if parts[3] == "WRITE" else "to read"
            stopped = ", stopped: kill -CONT or end it" \
                if process_state(pid) in ("T", "t") else ""
            holders.append(f"pid {pid} ({_command_of(pid)}{stopped}) {what}")
    return sorted(set(holders))


def _command_of(pid: int) -> str:
    if pid == os.getpid():
        return "this process"
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "command unknown"
    command = raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()
    return command[:120] + ("…" if len(command) > 120 else "") or "command unknown"


def _release(fd: int) -> None:
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)


class _LockWaiter(threading.Thread):
    """Blocks in ``flock`` on behalf of a caller that may stop waiting."""

    def __init__(self, fd: int, mode: int) -> None:
        super().__init__(name="osiris-lock-waiter", daemon=True)
        self.fd, self.mode = fd, mode
        self.acquired = threading.Event()
        self.error: OSError | None = None
        self._state = threading.Lock()
        self._abandoned = False

    def run(self) -> None:
        try:
            fcntl.flock(self.fd, self.mode)
        except OSError as exc:
            self.error = exc
        with self._state:
            if self._abandoned:
                # The caller timed out and left the descriptor to us: release and close.
                if self.error is None:
                    fcntl.flock(self.fd, fcntl.LOCK_UN)
                os.close(self.fd)
                return
            self.acquired.set()

    def give_up(self) -> bool:
        """True (and the descriptor now belongs to this thread) when not yet acquired."""
        with self._state:
            if self.acquired.is_set():
                return False
            self._abandoned = True
            return True


def fetch_row(con: duckdb.DuckDBPyConnection, sql: str,
              params: list[Any] | dict[str, Any] | None = None) -> tuple[Any, ...]:
    """The one row of an aggregate query (never None)."""
    row = con.execute(sql, params or []).fetchone()
    if row is None:
        raise StoreError(f"query returned no row: {sql[:80]}")
    return tuple(row)


def rows_as_dicts(cursor: Any) -> list[dict[str, Any]]:
    """Rows of a DuckDB result as dictionaries keyed by column name."""
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
