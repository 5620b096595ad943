"""Talking to a home's store owner (:mod:`osiris.owner`): the socket, the frames,
starting the owner when none runs.

This module imports only the standard library (and :mod:`osiris.errors`): hooks and
``osiris run`` use it on every tool call, so it must cost a Python start-up and no more.
It works on path strings and the ``_socket`` module under ``socket`` (whose enum
conversions, like ``pathlib`` and ``typing``, cost milliseconds of every hook's start);
the sockets are the same objects.

Wire format, both ways: a frame is a 4-byte big-endian length and that many bytes of
UTF-8 JSON (an object). A reply may announce ``"binary": N``; N raw bytes follow it (a
ref's bytes, an Arrow IPC stream). A request is ``{"op": …, …}``; a reply is
``{"ok": true, "result": …}`` or ``{"ok": false, "error": {"type", "code", "message"}}``.

Bounds: every request gives up after its client's bound (``timeout_s``: connecting,
starting an owner and waiting for the answer, all counted), raising
:class:`OwnerTimeout`; an owner the kernel has stopped (SIGSTOP, a debugger) is given up
on at once. A client that starts an owner notices when it dies at start (its process
exits; it leaves ``owner.failed`` saying why) and says so; a start that failed on the
database's content is remembered in that file, so later clients do not each start an
owner that fails the same way (:func:`remembered_failure`).

Where the socket is: ``$OSIRIS_HOME/owner.sock`` when that path fits an ``AF_UNIX``
address (108 bytes), else ``/tmp/osiris-<uid>/<hash of the home>.sock`` in a directory
only this user may enter (checked before use). Either way the socket file is mode 0600
and the owner checks every peer's uid (``SO_PEERCRED``); this side checks the owner's.
"""

from __future__ import annotations

import _socket as socket
import errno
import os
import struct
import sys
import time

from osiris import errors

_quote: Any = None
_make_scanner: Any = None
try:  # the C half of the standard json module, without json's own imports (re, enum)
    import _json

    _quote, _make_scanner = _json.encode_basestring, _json.make_scanner
except (ImportError, AttributeError):  # without it the json module does the work
    pass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    PathLike = str | os.PathLike[str]

HEADER = struct.Struct(">I")
MAX_REQUEST_BYTES = 96 << 20
"""Largest frame the owner reads (a payload at OSIRIS_MAX_PAYLOAD_BYTES, JSON-escaped)."""
MAX_REPLY_BYTES = 1 << 30
DEFAULT_TIMEOUT_S = 30.0
"""``OSIRIS_OWNER_TIMEOUT_S``'s default, :data:`osiris.environ.DEFAULT_OWNER_TIMEOUT_S` (a
test keeps them equal: this module imports nothing of OSIRIS but its errors)."""
SOCKET_NAME = "owner.sock"
LOCK_NAME = "owner.lock"
FAILED_NAME = "owner.failed"
"""What an owner that could not open its store writes before it exits (JSON)."""
STORE_FILES = ("osiris.duckdb", "osiris.duckdb.wal")
"""The files whose content can make an owner's start fail (see :func:`store_fingerprint`)."""
REMEMBER_FAILURE_S = 300.0
"""A failed start is remembered at most this long: then one client tries again (a cause
that changed no file, such as freed disk space, costs one start per period)."""
STOPPED_GRACE_S = 0.2
"""A stopped owner is given up on once it has been seen stopped this long (a profiler's
ptrace stop lasts milliseconds)."""
_SUN_PATH_MAX = 107


class OwnerUnavailable(errors.StoreError):
    """No owner answers for this home and none could be started."""

    code = "owner_unavailable"


class OwnerLost(errors.StoreError):
    """The owner went away after the request was sent: it may or may not have run."""

    code = "owner_lost"


class OwnerTimeout(OwnerLost):
    """The owner did not answer within the client's bound: it is stopped, busy past the
    bound, or still starting. An :class:`OwnerLost` because its callers must treat it as
    one: the request may yet run, and it is not done again in the caller's process (the
    owner holds the database, or is about to)."""

    code = "owner_timeout"


class OwnerFailed(OwnerUnavailable):
    """The owner could not open the home's store as it started (a damaged database, one
    of a newer OSIRIS): now, or at a start remembered in ``owner.failed``."""

    code = "owner_failed"


def socket_path(home: PathLike) -> Path:
    """Where the owner of ``home`` listens (see the module docstring)."""
    from pathlib import Path

    return Path(socket_address(home))


def socket_address(home: PathLike) -> str:
    """:func:`socket_path` as a string (what the light clients use)."""
    direct = os.path.join(os.fspath(home), SOCKET_NAME)
    if len(os.fsencode(direct)) <= _SUN_PATH_MAX:
        return direct
    import hashlib

    digest = hashlib.sha256(os.fsencode(os.fspath(home))).hexdigest()[:24]
    return os.path.join(_private_dir(f"{digest}.sock"), f"{digest}.sock")


def _private_dir(name: str) -> str:
    """``$TMPDIR/osiris-<uid>`` — ``/tmp/osiris-<uid>`` when ``name`` in the former would be
    too long for a socket address (a TMPDIR deep in a workspace, as a client's sandbox
    sets it) — created 0700; refused when another user owns it or it is open to others
    (a socket there could be someone else's)."""
    import stat
    import tempfile

    base = os.path.join(tempfile.gettempdir(), f"osiris-{os.getuid()}")
    if len(os.fsencode(os.path.join(base, name))) > _SUN_PATH_MAX:
        base = os.path.join("/tmp", f"osiris-{os.getuid()}")  # noqa: S108 - see above
    try:
        try:  # noqa: SIM105 - contextlib would cost every hook's start its imports
            os.mkdir(base, 0o700)
        except FileExistsError:
            pass
        info = os.lstat(base)
    except OSError as exc:
        raise OwnerUnavailable(f"cannot create the owner socket directory {base}: {exc}") \
            from exc
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() \
            or info.st_mode & 0o077:
        raise OwnerUnavailable(
            f"{base} is not a directory private to this user (owner uid {info.st_uid}, "
            f"mode {stat.S_IMODE(info.st_mode):o}): remove it, or use a shorter OSIRIS_HOME "
            "so that the socket lives in the home itself")
    return base


class _ScanContext:
    """What the C scanner reads of a ``json.JSONDecoder()``: the same defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"),
                      "NaN": float("nan")}.__getitem__


_FLOAT_NAMES = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}
_scan: Any = _make_scanner(_ScanContext()) if _make_scanner is not None else None


def dumps(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, separators=(",", ":"))``, without importing
    ``json`` (and the ``re`` and ``enum`` it imports): a hook process starts about 10 ms
    sooner. JSON values only (objects with string keys); TypeError otherwise, as json."""
    json = sys.modules.get("json")  # loaded already (the owner, a server): its C encoder
    if json is None and _quote is None:
        import json
    if json is not None:
        return str(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    out: list[str] = []
    _encode(value, out)
    return "".join(out)


def _encode(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(_quote(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        text = float.__repr__(value)
        out.append(_FLOAT_NAMES.get(text, text))
    elif isinstance(value, dict):
        out.append("{")
        for index, (key, item) in enumerate(value.items()):
            if not isinstance(key, str):
                raise TypeError(f"keys must be str, not {type(key).__name__}")
            out.append("," + _quote(key) + ":" if index else _quote(key) + ":")
            _encode(item, out)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _encode(item, out)
        out.append("]")
    else:
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def loads(text: str) -> Any:
    """``json.loads(text)`` for one JSON value with no surrounding whitespace (what
    :func:`dumps` writes), without importing ``json``; ValueError when it is not."""
    if _scan is None:
        import json

        return json.loads(text)
    try:
        value, end = _scan(text, 0)
    except StopIteration as exc:
        raise ValueError(f"no JSON value at character {exc.value}") from None
    if end != len(text):
        raise ValueError(f"extra data at character {end}")
    return value


def send_frame(sock: socket.socket, doc: dict[str, Any], binary: bytes = b"") -> None:
    """One frame (and its binary tail, announced in the header)."""
    if binary:
        doc = {**doc, "binary": len(binary)}
    data = dumps(doc).encode("utf-8")
    sock.sendall(HEADER.pack(len(data)) + data)
    if binary:
        sock.sendall(binary)


def recv_exact(sock: socket.socket, size: int) -> bytes:
    """Exactly ``size`` bytes; ConnectionError when the peer closes first."""
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError(f"connection closed with {left} of {size} bytes unread")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def recv_frame(sock: socket.socket, limit: int) -> tuple[dict[str, Any], bytes]:
    """The next frame: its JSON object and binary tail. ValueError on a malformed frame,
    ConnectionError when the peer went away."""
    head = sock.recv(HEADER.size, socket.MSG_WAITALL)
    if not head:
        raise EOFError("connection closed")
    if len(head) < HEADER.size:
        raise ConnectionError("connection closed inside a frame header")
    (size,) = HEADER.unpack(head)
    if size > limit:
        raise ValueError(f"a frame of {size} bytes is over the limit of {limit}")
    try:
        doc = loads(recv_exact(sock, size).decode("utf-8"))
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise ValueError(f"a frame that is not UTF-8 JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise ValueError("a frame that is not a JSON object")
    binary = doc.pop("binary", 0)
    if not isinstance(binary, int) or binary < 0 or binary > limit:
        raise ValueError("a frame with a bad binary length")
    return doc, recv_exact(sock, binary) if binary else b""


def peer_uid(sock: socket.socket) -> int:
    """The uid of the process at the other end of a unix socket (Linux SO_PEERCRED)."""
    return peer_credentials(sock)[1]


def peer_credentials(sock: socket.socket) -> tuple[int, int]:
    """The pid and uid of the process at the other end of a unix socket."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _gid = struct.unpack("3i", creds)
    return int(pid), int(uid)


def process_state(pid: int) -> str:
    """The kernel's one-letter state of process ``pid`` (``R`` running, ``S`` asleep,
    ``T`` stopped, ``t`` stopped by a tracer, ``Z`` exited, …); ``""`` when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return ""
    fields = data.rpartition(b")")[2].split()  # the command name, in (), may hold spaces
    return fields[0].decode("ascii", "replace") if fields else ""


def _alive(pid: int) -> bool:
    return process_state(pid) not in ("", "Z", "X")


def error_of(doc: dict[str, Any]) -> errors.OsirisError:
    """The OSIRIS exception an error reply stands for (its class by name)."""
    kind = str(doc.get("type") or "StoreError")
    message = str(doc.get("message") or "the store owner failed")
    cls = getattr(errors, kind, None)
    if kind in ("OwnerUnavailable", "OwnerLost"):
        cls = OwnerUnavailable if kind == "OwnerUnavailable" else OwnerLost
    if not (isinstance(cls, type) and issubclass(cls, errors.OsirisError)):
        cls = errors.StoreError
    return cls(message)


class OwnerClient:
    """One connection to the owner of a home, opened (and the owner started) on first use.

    ``settings`` is the caller's settings as :func:`osiris.config.settings_to_wire` gives
    them: the owner runs the engine with them. A light client (a hook) that has not parsed
    its settings passes ``environment``, the variables of
    :func:`osiris.environ.settings_variables`, instead: the owner parses them.
    ``timeout_s``: the longest a request waits, starting the owner included (the
    caller's ``OSIRIS_HOOK_TIMEOUT_S`` or ``OSIRIS_OWNER_TIMEOUT_S``). Not thread-safe:
    one per thread.
    """

    def __init__(self, home: PathLike, settings: dict[str, Any] | None = None, *,
                 environment: dict[str, str] | None = None, spawn: bool = True,
                 env: dict[str, str] | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        if (settings is None) == (environment is None):
            raise TypeError("give the owner client settings or environment, not both")
        self.home = home
        self.settings_key = "settings" if environment is None else "environment"
        self.settings = settings if environment is None else environment
        self.spawn = spawn
        self.env = env
        self.timeout_s = timeout_s
        self._sock: socket.socket | None = None
        self._pid = 0  # the owner's, at the other end of _sock
        #: Seconds the last request took to connect (start of an owner included).
        self.connect_s = 0.0

    @property
    def owner_pid(self) -> int:
        """The pid of the owner this client last reached (0: none yet)."""
        return self._pid

    def close(self) -> None:
        """Close the connection (the owner stays)."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __del__(self) -> None:  # a client dropped without close() (a server's last call)
        sock, self._sock = getattr(self, "_sock", None), None
        if sock is not None:
            sock.close()

    def request(self, doc: dict[str, Any], *,
                timeout_s: float | None = None) -> tuple[Any, bytes]:
        """Send one request and return its result (and binary tail); raise the OSIRIS
        error of an error reply. A dead connection is re-opened, once, before the request
        is sent; a connection lost after sending raises :class:`OwnerLost`. Past
        ``timeout_s`` (default: the client's) it raises :class:`OwnerTimeout`, and the
        connection is closed (a query the owner runs for it is then cancelled)."""
        bound = self.timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + bound
        doc = {**doc, self.settings_key: self.settings}
        for attempt in (1, 2):
            sock = self._connected(deadline, bound)
            try:
                sock.settimeout(max(deadline - time.monotonic(), 0.001))
                send_frame(sock, doc)
            except TimeoutError as exc:  # only a part of the frame went: it cannot run
                self.close()
                raise OwnerTimeout(f"the store owner of {self.home} (pid {self._pid}) took "
                                   f"no request for {bound:g}s: {_what_to_do(self._pid)}"
                                   ) from exc
            except OSError:
                self.close()
                if attempt == 2:
                    raise OwnerUnavailable(f"the store owner of {self.home} closed the "
                                           "connection before the request was sent") from None
                continue
            try:
                reply, binary = self._answer(sock, deadline, bound)
            except OwnerTimeout:
                self.close()
                raise
            except (OSError, EOFError, ValueError) as exc:
                self.close()
                raise OwnerLost(
                    f"the store owner of {self.home} went away during the call ({exc}); it "
                    "may or may not have taken effect: check before repeating it (the next "
                    "call starts a new owner)") from exc
            if reply.get("ok"):
                return reply.get("result"), binary
            raise error_of(reply.get("error") or {})
        raise AssertionError("unreachable")

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """An engine method, run by the owner."""
        result, _ = self.request({"op": "call", "method": method, "args": list(args),
                                  "kwargs": kwargs})
        return result

    def _answer(self, sock: socket.socket, deadline: float,
                bound: float) -> tuple[dict[str, Any], bytes]:
        """The reply, waited for until ``deadline``; given up on as soon as the owner has
        been stopped (SIGSTOP, a debugger) for :data:`STOPPED_GRACE_S`: it cannot answer
        until someone continues it, and waiting would only spend the caller's bound."""
        step, stopped_since = 0.005, 0.0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise OwnerTimeout(
                    f"the store owner of {self.home} (pid {self._pid}) did not answer "
                    f"within {bound:g}s; the call may still run: "
                    f"{_what_to_do(self._pid)}")
            sock.settimeout(min(step, left))
            try:
                sock.recv(1, socket.MSG_PEEK)  # the answer, or the end of the connection
                break
            except TimeoutError:
                pass
            now = time.monotonic()
            if process_state(self._pid) in ("T", "t"):
                stopped_since = stopped_since or now
                if now - stopped_since >= STOPPED_GRACE_S:
                    raise OwnerTimeout(
                        f"the store owner of {self.home} (pid {self._pid}) is stopped "
                        "(SIGSTOP or a debugger): it answers nobody until it is continued "
                        f"(kill -CONT {self._pid}) or ended (kill {self._pid}; the next "
                        "call starts a new one)")
            else:
                stopped_since = 0.0
            step = min(step * 2, 0.1)
        sock.settimeout(bound)  # then at most the bound between two pieces of the reply
        return recv_frame(sock, MAX_REPLY_BYTES)

    # -- connecting ----------------------------------------------------------------

    def _connected(self, deadline: float, bound: float) -> socket.socket:
        if self._sock is not None:
            return self._sock
        started = time.monotonic()
        path = socket_address(self.home)
        sock = try_connect(path, timeout_s=max(deadline - started, 0.001))
        if sock is None:
            if not self.spawn:
                raise OwnerUnavailable(f"no store owner runs for {self.home}")
            sock = self._start_and_connect(path, deadline, bound)
        self._pid = peer_credentials(sock)[0]
        self.connect_s = time.monotonic() - started
        self._sock = sock
        return sock

    def _start_and_connect(self, path: str, deadline: float,
                           bound: float) -> socket.socket:
        remembered = remembered_failure(self.home)
        if remembered is not None:  # it would fail the same way: not again
            raise OwnerFailed(failure_message(self.home, remembered, remembered=True))
        pid = start_owner(self.home, self.env)
        delay = 0.002
        while True:
            sock = try_connect(path, timeout_s=max(deadline - time.monotonic(), 0.001))
            if sock is not None:
                return sock
            if pid and not _alive(pid):
                # It lost the race to an owner that serves (whose socket answers now),
                # or it died as it started: it says why in owner.failed when it can.
                sock = try_connect(path, timeout_s=max(deadline - time.monotonic(), 0.001))
                if sock is not None:
                    return sock
                failure = failed_start(self.home)
                if failure is not None and failure.get("pid") == pid:
                    cls = OwnerFailed if failure.get("remember") else OwnerUnavailable
                    raise cls(failure_message(self.home, failure, remembered=False))
                log_tail = _tail(os.path.join(self.home, "owner.log"))
                raise OwnerUnavailable(
                    f"the store owner of {self.home} exited as it started"
                    + (f"; its log ends: {log_tail}" if log_tail else "")
                    + ". Check that the home is writable, or set OSIRIS_STORE_OWNER=off to "
                    "open the database in each process")
            left = deadline - time.monotonic()
            if left <= 0:
                log_tail = _tail(os.path.join(self.home, "owner.log"))
                raise OwnerTimeout(
                    f"the store owner of {self.home} did not start within {bound:g}s (pid "
                    f"{pid} goes on starting: the next call uses it once it listens)"
                    + (f"; its log ends: {log_tail}" if log_tail else ""))
            time.sleep(min(delay, left))
            delay = min(delay * 1.5, 0.05)


def _what_to_do(pid: int) -> str:
    state = process_state(pid)
    if state in ("T", "t"):
        return f"it is stopped: continue it (kill -CONT {pid}) or end it (kill {pid})"
    return (f"it is busy or stuck (process state {state or 'gone'}): if this lasts, end it "
            f"(kill {pid}) and the next call starts a new one")


def try_connect(path: PathLike, *, timeout_s: float | None = None) -> socket.socket | None:
    """A connection to the owner at ``path``, checked to be this user's; None when no
    owner listens there (no socket, or a stale one). ``timeout_s`` bounds the connect: an
    owner that has stopped taking connections (its queue full) raises
    :class:`OwnerTimeout` instead of blocking."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if timeout_s is not None:
        sock.settimeout(timeout_s)
    try:
        sock.connect(os.fsencode(path))
    except OSError as exc:
        sock.close()
        if exc.errno in (errno.ENOENT, errno.ECONNREFUSED, errno.ENOTSOCK):
            return None
        if exc.errno == errno.EACCES:
            raise OwnerUnavailable(f"the store owner socket {path} is not this user's: "
                                   "remove it, or use a home of your own") from exc
        if isinstance(exc, TimeoutError) or exc.errno == errno.EAGAIN:
            raise OwnerTimeout(f"the store owner at {path} takes no connection (its queue "
                               "is full): it is stopped or stuck") from exc
        raise OwnerUnavailable(f"cannot connect to the store owner at {path}: {exc}") from exc
    if peer_uid(sock) != os.getuid():
        sock.close()
        raise OwnerUnavailable(f"the process listening at {path} is another user's: OSIRIS "
                               "will not send it anything; remove the socket")
    return sock


def start_owner(home: PathLike, env: dict[str, str] | None = None) -> int:
    """Start ``python -m osiris owner`` for ``home``, detached from this process (its own
    session, no terminal, stderr to ``owner.log``); return its pid (0 if unknown). Two
    starters race harmlessly: the second owner finds the lock taken and exits."""
    import subprocess

    os.makedirs(home, exist_ok=True)
    # Through a shell that starts it in the background and exits at once: the owner is
    # then nobody's child (no zombie when it dies, nothing for this process to reap). The
    # shell says its pid, so that its starter sees at once if it dies as it starts.
    with open(os.path.join(home, "owner.log"), "ab") as log:
        done = subprocess.run(  # our own interpreter and module
            ["/bin/sh", "-c", '"$@" >/dev/null & echo $!', "osiris-owner-start",
             sys.executable, "-m", "osiris", "owner", "--home", os.fspath(home)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
            start_new_session=True, close_fds=True, env=env, cwd="/", check=False)
    try:
        return int(done.stdout.split()[-1])
    except (ValueError, IndexError):
        return 0


# -- a start that failed ----------------------------------------------------------------

def store_fingerprint(home: PathLike) -> list[list[int] | None]:
    """What the store's files are now (inode, size, modification and change times of the
    database and its WAL): a failure remembered with them holds while they stay so."""
    out: list[list[int] | None] = []
    for name in STORE_FILES:
        try:
            st = os.stat(os.path.join(home, name))
        except OSError:
            out.append(None)
            continue
        out.append([st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns])
    return out


def record_failed_start(home: PathLike, *, pid: int, code: str, message: str,
                        remember: bool) -> None:
    """An owner that could not open its store says why, before it lets ``owner.lock`` go:
    its starter reads it as soon as it sees the owner gone, and, with ``remember``,
    later clients do not start an owner again while the store's files are unchanged
    (:func:`remembered_failure`)."""
    doc = {"pid": pid, "time": time.time(), "code": code,
           "message": message, "remember": remember,
           "database": os.path.join(os.fspath(home), STORE_FILES[0]),
           "store": store_fingerprint(home)}
    path = os.path.join(home, FAILED_NAME)
    temp = f"{path}.{pid}.tmp"
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(dumps(doc))
        os.replace(temp, path)
    except OSError:  # a home that cannot be written: each start fails (and says so) anew
        try:  # noqa: SIM105 - contextlib would cost every hook's start its imports
            os.unlink(temp)
        except OSError:
            pass


def failed_start(home: PathLike) -> dict[str, Any] | None:
    """What the last owner that could not start left in ``owner.failed`` (None: none)."""
    try:
        with open(os.path.join(home, FAILED_NAME), encoding="utf-8") as fh:
            doc = loads(fh.read())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def remembered_failure(home: PathLike) -> dict[str, Any] | None:
    """The failed start a new owner would repeat: one that said to remember it, less
    than :data:`REMEMBER_FAILURE_S` ago, with the store's files unchanged since (an
    upgrade of OSIRIS that would open them is tried at the latest after that time, or
    after ``osiris health``). None when an owner may be started."""
    failure = failed_start(home)
    if failure is None or not failure.get("remember"):
        return None
    at = failure.get("time")
    if not isinstance(at, int | float) or not 0 <= time.time() - at < REMEMBER_FAILURE_S:
        return None
    return failure if failure.get("store") == store_fingerprint(home) else None


def forget_failed_start(home: PathLike) -> bool:
    """Remove ``owner.failed`` (an owner started, or ``osiris health`` reported it); True
    when there was one."""
    try:
        os.unlink(os.path.join(home, FAILED_NAME))
    except OSError:
        return False
    return True


def failure_message(home: PathLike, failure: dict[str, Any], *, remembered: bool) -> str:
    """The one-line error for an owner that could not start."""
    when = " (remembered from an earlier start: no owner is started again while the " \
        "database is unchanged)" if remembered else ""
    return (f"the store owner of {home} could not open its database "
            f"{failure.get('database') or ''}{when}: "
            f"{str(failure.get('message')).rstrip('.!')}. Run "
            "`osiris health` for what to do; OSIRIS lets calls through unchecked meanwhile")


def _tail(path: str, limit: int = 400) -> str:
    try:
        with open(path, "rb") as fh:
            data = fh.read()[-limit:]
    except OSError:
        return ""
    return data.decode("utf-8", "replace").strip().replace("\n", " | ")
