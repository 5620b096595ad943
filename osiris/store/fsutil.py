"""Small filesystem helpers: crash-safe writes, and a home private to its owner.

Privacy. The home holds what agents saw (scrubbed, but a scrubber misses things) in
refs, DuckDB's database and write-ahead log, the owner's log and the hook logs. It is
private to the user who runs OSIRIS, whatever the umask: every directory OSIRIS makes
there is 0700 and every file 0600. A directory of 0700 is what really keeps others out
(they cannot reach anything below it, whoever created it and with whatever mode); the
file modes are a second line. DuckDB creates its own files (the database, its WAL, again
after every checkpoint, and its temporary directory) with the process umask: the store
owner runs with :data:`PRIVATE_UMASK`, and a process that opens the database directly
makes them private after creating them (:mod:`osiris.store.db`). A home made before
this, or by a process with a looser umask, is tightened where it is opened
(:func:`tighten_home`).
"""

from __future__ import annotations

import logging
import os
import pwd
import secrets
import stat
from pathlib import Path

log = logging.getLogger(__name__)

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
PRIVATE_UMASK = 0o077
"""The umask of OSIRIS's own processes (the store owner, a hook): what they create,
DuckDB's files included, is theirs alone."""
_OTHERS = 0o077


def atomic_write(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write ``data`` to ``path`` so that readers see either the old or the new bytes.

    Temp file in the same directory, fsync, rename over the target, fsync the
    directory: after a crash the file is whole or absent, never torn. ``durable=False``
    leaves out both fsyncs (the caller keeps another durable copy, and calls
    :func:`fsync_file` before dropping it): a process crash still leaves the file whole
    or absent, a power loss may not.
    """
    make_private_dirs(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        if durable:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    os.replace(tmp, path)
    if durable:
        fsync_dir(path.parent)


def fsync_file(path: Path) -> None:
    """Make a file's bytes durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    """Make a rename in ``path`` durable."""
    fsync_file(path)  # a directory is opened and fsynced like a file


def make_private_dirs(path: Path) -> None:
    """Create ``path`` and its missing parents, each 0700 (``Path.mkdir`` gives the
    parents the umask's mode); one ``mkdir`` call when it exists."""
    try:
        os.mkdir(path, PRIVATE_DIR)
    except FileExistsError:
        if not path.is_dir():
            raise
    except FileNotFoundError:
        make_private_dirs(path.parent)
        try:
            os.mkdir(path, PRIVATE_DIR)
        except FileExistsError:  # made meanwhile by another process
            if not path.is_dir():
                raise


def keep_private(path: Path) -> None:
    """Take group and other permissions off a file this process may have created with
    its umask's mode (DuckDB's); nothing when it is absent or already private."""
    try:
        _tighten(path)
    except FileNotFoundError:
        pass
    except OSError as exc:  # a read-only home: the home's own mode still holds
        log.debug("cannot make %s private: %s", path, exc)


def tighten_home(home: Path) -> list[Path]:
    """Make the home and what it holds private to this user; return what was changed.

    The home and each of its entries lose group and other permissions (owner bits stay).
    A subdirectory is walked only when it was open to others itself: what OSIRIS makes
    inside a private directory is private, so only a home made before this (or by hand)
    needs the walk, once, and later starts cost one ``scandir`` of the home. Symlinks are
    neither followed nor changed, nor is anything another user owns. Never raises: a home
    on a read-only disk is used as it is. Refused for the user's own home directory and
    for ``/`` (``OSIRIS_HOME=~`` would otherwise make every folder there private).
    """
    changed: list[Path] = []
    try:
        # The home itself may be a symlink (configuration, trusted as it stands).
        info = os.stat(home)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            return changed
        resolved = home.resolve()
        if resolved == Path("/") or resolved == Path(pwd.getpwuid(os.getuid()).pw_dir).resolve():
            log.warning("OSIRIS_HOME is %s, not a directory of OSIRIS's own: its "
                        "permissions are left as they are", home)
            return changed
        _tighten(home, changed, follow_symlinks=True)
    except (OSError, KeyError) as exc:  # KeyError: a uid without a passwd entry
        log.debug("cannot tighten %s: %s", home, exc)
        return changed
    folders = [home]
    while folders:
        folder = folders.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            log.debug("cannot list %s: %s", folder, exc)
            continue
        for entry in entries:
            try:
                was_open = _tighten(Path(entry.path), changed)
                if was_open and entry.is_dir(follow_symlinks=False):
                    folders.append(Path(entry.path))
            except OSError as exc:  # gone meanwhile, or not ours to change
                log.debug("cannot tighten %s: %s", entry.path, exc)
    if changed:
        log.info("made %d entries of %s private to their owner", len(changed), home)
    return changed


def _tighten(path: Path, changed: list[Path] | None = None, *,
             follow_symlinks: bool = False) -> bool:
    """Take group and other permissions off ``path``; True when it had any (and is this
    user's, and no symlink unless followed)."""
    info = os.stat(path, follow_symlinks=follow_symlinks)
    if stat.S_ISLNK(info.st_mode) or info.st_uid != os.getuid() \
            or not info.st_mode & _OTHERS:
        return False
    os.chmod(path, stat.S_IMODE(info.st_mode) & ~_OTHERS)
    if changed is not None:
        changed.append(path)
    return True
