"""``osiris run -- COMMAND``: run a shell command, keep its output, show a preview.

A command of its own, for a shell user or an agent loop that acts through a shell: the
client hooks do not use it (OSIRIS never rewrites a client's shell call; see
:mod:`osiris.clients.shell_output`). The command string is run as ``SHELL -c COMMAND``
(``--shell``, default ``$SHELL`` when it is bash, zsh or sh, else ``bash``) in the
current directory and environment, with stdin inherited; stdout and stderr are merged in
the order the command wrote them and streamed to a spool file in ``$OSIRIS_HOME/spool``
(bounded memory, however large). Signals that would stop the command (INT, TERM, HUP,
QUIT) are passed on to it; ``osiris run`` exits with the command's status, and a command
killed by a signal (``kill -9 $$`` included) kills ``osiris run`` with the same signal.
Where util-linux's ``setpriv`` is (Linux), the command's shell dies with ``osiris run``
(a SIGKILL of the runner leaves no orphan).

The first ``--threshold`` bytes are written to stdout as they come, so a client that kills
a command that ran too long still shows what it printed first. Then, when the whole output
is at most ``--threshold`` tokens (``[routing] shell_preview_tokens`` by default), the
rest is printed verbatim; a larger one is stored whole, scrubbed of secrets, as a ref of
the session's task, and a preview of it is printed after the head — error lines and the
summary for a failing command, else an outline or the head and tail — with one line
naming the ref and how to recall any part. Whatever goes wrong on OSIRIS's side (no
spool, a full disk, a busy or broken home, output that is not UTF-8 or over
``OSIRIS_MAX_PAYLOAD_BYTES``) the output is printed verbatim, and one line goes to
``$OSIRIS_HOME/hooks.log`` where it can: a command never breaks because of OSIRIS. A
closed stdout or stderr (``osiris run -- CMD 1>&-``) is the command's to see: it then runs
uncaptured.

Until the command has finished this module imports nothing but ``os``, ``sys``,
``_signal`` and :mod:`osiris.environ` (``signal``'s enum conversions alone cost
milliseconds), so the command starts within a bare Python start-up of being asked; run it
as ``PYTHON -S -P …/osiris/launch.py run`` (:mod:`osiris.launch`) for the fastest start.
"""

from __future__ import annotations

import os
import sys

from osiris.environ import process_environment

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal as _signal
    from collections.abc import Sequence
    from typing import IO, Any
else:
    import _signal

FORWARDED = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP, _signal.SIGQUIT)
SHELLS = ("bash", "zsh", "sh")
CHUNK = 1 << 16
EXIT_USAGE = 2
OPTIONS = ("--shell", "--session", "--client", "--home", "--roots", "--threshold")
"""``--threshold N``: print outputs of at most N tokens verbatim (the hook passes the
``[routing] shell_preview_tokens`` in force)."""
PRIVATE_DIR = 0o700
""":data:`osiris.store.fsutil.PRIVATE_DIR` (a test keeps them equal; importing the store
would cost every command its start)."""
DEFAULT_THRESHOLD = 1_500
"""Without ``--threshold``: :attr:`RoutingConfig.shell_preview_tokens`'s default (a test
keeps them equal; importing ``core.routing`` costs every command its ``re``)."""


def default_shell(env: dict[str, str]) -> str:
    """``$SHELL`` when it is bash, zsh or sh (as Claude Code picks), else bash."""
    shell = env.get("SHELL", "")
    return shell if os.path.basename(shell) in SHELLS and os.access(shell, os.X_OK) \
        else "bash"


def _parse(argv: Sequence[str]) -> tuple[dict[str, str], str] | str:
    """Options and the command, or a usage message."""
    options: dict[str, str] = {}
    args = list(argv)
    while args and args[0] != "--":
        if not args[0].startswith("--"):
            break
        key = args.pop(0)
        if key not in OPTIONS or not args:
            return (f"osiris run: unknown option {key!r}; usage: osiris run [--shell SH] "
                    "[--session ID] [--client NAME] [--home DIR] [--roots PATHS] [--threshold N] "
                    "-- COMMAND")
        options[key[2:]] = args.pop(0)
    if not args or args[0] != "--" or len(args) < 2:
        return "osiris run: give the command after --, e.g. osiris run -- 'pytest -q'"
    command = args[1] if len(args) == 2 else " ".join(args[1:])
    return options, command


def main(argv: Sequence[str]) -> int:
    """Entry point of ``osiris run``."""
    parsed = _parse(argv)
    if isinstance(parsed, str):
        sys.stderr.write(parsed + "\n")
        return EXIT_USAGE
    options, command = parsed
    env = process_environment()
    shell = options.get("shell") or default_shell(env)
    home = os.path.expanduser(options.get("home") or env.get("OSIRIS_HOME") or "~/.osiris")
    if not (_is_open(1) and _is_open(2)):
        # A closed stdout or stderr is the command's to see (``1>&-``, ``2>&-``): merging
        # it into a pipe would change where its output goes. Run it as it is.
        os.execvp(shell, [shell, "-c", command])  # noqa: S606 - the command, as asked
    try:
        spool_dir = os.path.join(home, "spool")
        _private_dir(home)
        _private_dir(spool_dir)
        spool = _spool_file(spool_dir)
    except OSError as exc:  # nowhere to keep the output: run the command untouched
        _log(home, f"no spool ({exc}); ran uncaptured")
        os.execvp(shell, [shell, "-c", command])  # noqa: S606 - the command, as asked
    threshold = int(options.get("threshold") or DEFAULT_THRESHOLD)
    with spool:
        run = _run(shell, command, spool, env, echo_bytes=threshold, home=home)
        if run.spooled:
            _show(spool, run, command, options, home, env)
    return _exit(run.status)


class _Run:
    """What :func:`_run` did: the command's status, and where its output went."""

    def __init__(self) -> None:
        self.status = 0
        self.shown = 0
        """Bytes already written to stdout as they came (the head of the output)."""
        self.spooled = True
        """False once the spool failed (a full disk): the rest went to stdout directly."""


def _run(shell: str, command: str, spool: IO[bytes], env: dict[str, str], *,
         echo_bytes: int, home: str) -> _Run:
    """Run the command; stream its output to ``spool``, and its first ``echo_bytes`` to
    stdout as they come (a client that kills the command still shows what it printed
    first). If the spool fails (a full disk), what it held beyond the head and all that
    follows goes to stdout unchanged: the output is never lost."""
    done = _Run()
    read_end, write_end = os.pipe()  # both close-on-exec; the child's dup2 copies are not
    try:
        pid = _spawn(shell, command, env, write_end)
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)
    previous = {}
    for sig in FORWARDED:
        try:
            previous[sig] = _signal.signal(sig, lambda number, _frame: _forward(pid, number))
        except (OSError, ValueError):  # not settable here (not the main thread)
            pass
    try:
        with os.fdopen(read_end, "rb", buffering=0) as pipe:
            while chunk := pipe.read(CHUNK):  # EINTR is retried (PEP 475)
                if done.spooled:
                    written = _write_some(spool.fileno(), chunk)
                    if written < len(chunk):
                        done.spooled = False
                        _log(home, "spool failed (the disk is full or the home broken); "
                                   "output passed through")
                        _pass_through(spool, done.shown)  # all the spool holds, then
                        _to_stdout(chunk[written:])       # what it could not take
                        continue
                    if done.shown < echo_bytes:
                        head = chunk[:echo_bytes - done.shown]
                        _to_stdout(head)
                        done.shown += len(head)
                else:
                    _to_stdout(chunk)
        _, status = os.waitpid(pid, 0)
        done.status = os.waitstatus_to_exitcode(status)
        return done
    finally:
        for sig, handler in previous.items():
            try:
                _signal.signal(sig, handler)
            except (OSError, ValueError):
                pass


SETPRIV = ("/usr/bin/setpriv", "/bin/setpriv")
"""util-linux's ``setpriv``, whose ``--pdeathsig KILL`` sets PR_SET_PDEATHSIG and execs
the shell (no ``ctypes`` in this process: it would cost every command milliseconds)."""


def _spawn(shell: str, command: str, env: dict[str, str], output: int) -> int:
    """Start ``SHELL -c COMMAND`` with stdout and stderr on ``output``. Where util-linux's
    ``setpriv`` is (Linux), the shell is killed when ``osiris run`` dies, so a SIGKILL of
    the runner leaves no orphan behind; elsewhere the shell is a plain child."""
    argv = [shell, "-c", command]
    setpriv = next((p for p in SETPRIV if os.access(p, os.X_OK)), None)
    if setpriv is not None:
        argv = [setpriv, "--pdeathsig", "KILL", "--", *argv]
    return os.posix_spawnp(argv[0], argv, env, file_actions=[
        (os.POSIX_SPAWN_DUP2, output, 1), (os.POSIX_SPAWN_DUP2, output, 2)])


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _write_some(fd: int, data: bytes) -> int:
    """Write ``data`` to ``fd``; how much was written before an error (a full disk)."""
    view, done = memoryview(data), 0
    try:
        while done < len(data):
            done += os.write(fd, view[done:])
    except OSError:
        pass
    return done


def _to_stdout(data: bytes) -> None:
    """Write to stdout; a reader that went away (EPIPE) or a closed stdout loses only
    what OSIRIS would have shown, never the command's run."""
    try:
        _write_all(1, data)
    except OSError:
        pass


def _pass_through(spool: IO[bytes], shown: int) -> None:
    """The spool's bytes not shown yet, to stdout (the spool has failed)."""
    try:
        end = spool.seek(0, os.SEEK_END)
        spool.seek(shown)
        while shown < end and (chunk := spool.read(min(CHUNK, end - shown))):
            _to_stdout(chunk)
            shown += len(chunk)
    except OSError:  # what could not be read back was shown as far as it was echoed
        pass


def _private_dir(path: str) -> None:
    """``path`` made if missing, private to its owner either way (the home holds what
    commands printed; :mod:`osiris.store.fsutil` keeps the rest of it private)."""
    os.makedirs(path, PRIVATE_DIR, exist_ok=True)
    if os.stat(path).st_mode & 0o077:
        os.chmod(path, PRIVATE_DIR)


def _forward(pid: int, number: int) -> None:
    try:
        os.kill(pid, number)
    except ProcessLookupError:  # it has just ended
        pass


def _spool_file(directory: str) -> IO[bytes]:
    """An unnamed file in ``directory`` (gone when closed, or when this process dies).
    ``O_TMPFILE`` first: ``tempfile`` costs a few ms of imports on every command."""
    flag = getattr(os, "O_TMPFILE", 0)
    if flag:
        try:
            return os.fdopen(os.open(directory, flag | os.O_RDWR, 0o600), "w+b",
                             buffering=0)
        except OSError:  # a file system without unnamed files
            pass
    import tempfile

    return tempfile.TemporaryFile(dir=directory, buffering=0)


def _exit(status: int) -> int:
    """The command's exit status; a command killed by a signal kills us with it."""
    if status < 0:
        try:
            _signal.signal(-status, _signal.SIG_DFL)
        except (OSError, ValueError):  # SIGKILL and SIGSTOP have no handler to reset
            pass
        os.kill(os.getpid(), -status)
        return 128 - status  # if the signal does not end us (it is ignored or stopped)
    return status


def _show(spool: IO[bytes], run: _Run, command: str, options: dict[str, str],
          home: str, env: dict[str, str]) -> None:
    """Show the rest of the output verbatim, or store it and show its preview (see the
    module docstring); the head already shown stays as it was."""
    size = spool.seek(0, os.SEEK_END)
    if size <= run.shown:
        return
    try:
        preview = _stored_preview(spool, size, run.status, command, options, home, env)
    except Exception as exc:
        _log(home, f"output shown verbatim: {type(exc).__name__}: {exc}")
        preview = None
    if preview is None:
        _pass_through(spool, run.shown)
        return
    spool.seek(max(run.shown - 1, 0))
    at_line_start = run.shown == 0 or spool.read(1) == b"\n"
    _to_stdout(("" if at_line_start else "\n").encode() + preview.encode("utf-8"))


def _stored_preview(spool: IO[bytes], size: int, status: int, command: str,
                    options: dict[str, str], home: str, env: dict[str, str]) -> str | None:
    threshold = int(options.get("threshold") or DEFAULT_THRESHOLD)
    if size <= threshold:
        return None  # small (a token is at least a byte): no need to load anything
    from osiris.clients.sitepath import full_path

    full_path()  # the heavy part starts here, after the command
    from osiris.config import Settings
    from osiris.core.routing import run_footer

    overrides = {"OSIRIS_HOME": home}
    if "roots" in options:
        overrides["OSIRIS_ROOTS"] = options["roots"]
    settings = Settings.from_env({**env, **overrides})
    if size > settings.max_payload_bytes:
        return None  # over what OSIRIS holds
    spool.seek(0)
    text = spool.read().decode("utf-8")  # not UTF-8: shown verbatim (lossless)
    session = options.get("session")
    task = f"session:{session}" if session else "session:osiris-run"
    client = options.get("client", "client")
    call: dict[str, Any] = {"tool": "Bash", "args": {"command": command}, "failed": status != 0,
            "cwd": os.getcwd(), "client": client, "threshold": threshold}
    answer = None
    if settings.store_owner:
        from osiris.engine.remote import RemoteEngine
        from osiris.errors import OsirisError
        from osiris.owner_wire import OwnerLost

        try:
            with RemoteEngine(settings) as remote:
                answer = remote.route_output(task, text, **call)
            owner_served = True
        except OwnerLost:
            raise  # it may have stored the output: shown verbatim, logged, not repeated
        except OsirisError:  # no owner could serve: store it from this process
            owner_served = False
    if not settings.store_owner or not owner_served:
        from osiris.engine import Engine

        with Engine(settings) as engine:
            answer = engine.route_output(task, text, **call)
    if answer is None:
        return None
    body = answer["preview"].rstrip("\n")
    return (body + "\n" if body else "") + run_footer(
        exit_code=status, lines=int(answer["lines"]), tokens=int(answer["tokens"]),
        ref=str(answer["ref"])) + "\n"


def _log(home: str, problem: str) -> None:
    import json
    import time

    line = json.dumps({"ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       "client": "osiris-run", "event": "run", "problem": problem})
    try:
        _private_dir(home)
        fd = os.open(os.path.join(home, "hooks.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                     0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
    except OSError:  # the log is a courtesy: the output has been shown
        pass

