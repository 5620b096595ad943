"""Small filesystem helpers with crash-safe semantics."""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def atomic_write(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write ``data`` to ``path`` so that readers see either the old or the new bytes.

    Temp file in the same directory, fsync, rename over the target, fsync the
    directory: after a crash the file is whole or absent, never torn. ``durable=False``
    leaves out both fsyncs (the caller keeps another durable copy, and calls
    :func:`fsync_file` before dropping it): a process crash still leaves the file whole
    or absent, a power loss may not.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
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
