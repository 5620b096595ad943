"""Sandboxed file reads for ``observe(kind="file")``: inside OSIRIS_ROOTS only.

A path is resolved (symlinks followed) and must then lie inside one of the roots,
so neither ``..`` nor a symlink can escape; symlinks that stay inside the roots work.
The resolved path holds no symlinks, so the file is then opened by walking its
components from a descriptor of the root, each with ``O_NOFOLLOW``: if anything on
the way was swapped for a symlink after the check (a directory replaced by a link
to somewhere else), the walk meets it and refuses, so no interleaving of the check
and the open can reach a file outside the roots. Opening only the full path with
``O_NOFOLLOW`` guarded the last component alone, and lost that race. The file must
be a regular file, at most ``max_bytes`` long, and text: binary content is refused
with a clear error rather than stored as mojibake.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from osiris.errors import SandboxError

_BINARY_SNIFF = 8192


@dataclass(frozen=True)
class FileRead:
    """A file read inside the sandbox."""

    path: Path
    """The resolved path."""
    root: Path
    text: str
    size: int
    mtime_ns: int


def resolve_in_roots(raw: str, roots: tuple[Path, ...]) -> tuple[Path, Path]:
    """The resolved path and the root that contains it; SandboxError otherwise."""
    if not roots:
        raise SandboxError("file inspection is disabled: OSIRIS_ROOTS is empty; set it to the "
                           "project directories OSIRIS may read")
    if not isinstance(raw, str) or not raw.strip() or "\x00" in raw:
        raise SandboxError("path must be a non-empty file path")
    candidate = Path(raw.strip()).expanduser()
    bases = [candidate] if candidate.is_absolute() else [root / candidate for root in roots]
    for base in bases:
        try:
            resolved = base.resolve(strict=True)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except (OSError, RuntimeError) as exc:  # symlink loops, permission errors
            raise SandboxError(f"cannot resolve {raw!r}: {exc}") from None
        for root in roots:
            if resolved == root or resolved.is_relative_to(root):
                return resolved, root
        raise SandboxError(
            f"{raw!r} resolves to {resolved}, outside OSIRIS_ROOTS "
            f"({'; '.join(str(r) for r in roots)}); OSIRIS reads only inside its roots")
    raise SandboxError(f"{raw!r} does not exist inside OSIRIS_ROOTS "
                       f"({'; '.join(str(r) for r in roots)})")


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def open_below_root(resolved: Path, root: Path) -> int:
    """A descriptor of ``resolved`` reached from ``root`` without following any symlink.

    ``resolved`` comes from :func:`resolve_in_roots`, so none of its components is a
    symlink; meeting one here (ELOOP, or ENOTDIR for a link to a file) means the tree
    changed since the check, and the read is refused rather than followed.
    """
    parts = resolved.relative_to(root).parts
    try:
        # The root itself is configuration, trusted as it stands (symlinks included).
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise SandboxError(f"cannot open the root {root}: {exc.strerror}") from None
    try:
        for i, name in enumerate(parts):
            last = i == len(parts) - 1
            try:
                child = os.open(name, _FILE_FLAGS if last else _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in {errno.ELOOP, errno.ENOTDIR, errno.ENOENT}:
                    raise SandboxError(
                        f"{resolved} changed while OSIRIS opened it (a part of the path "
                        "was moved or replaced by a symlink); observe it again") from None
                raise SandboxError(f"cannot open {resolved}: {exc.strerror}") from None
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_text_file(raw: str, roots: tuple[Path, ...], max_bytes: int) -> FileRead:
    """Read a text file inside the roots, with every check of the module docstring."""
    resolved, root = resolve_in_roots(raw, roots)
    fd = open_below_root(resolved, root)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SandboxError(f"{resolved} is not a regular file")
        if info.st_size > max_bytes:
            raise SandboxError(
                f"{resolved} is {info.st_size:,} bytes, over the {max_bytes:,}-byte limit "
                "(OSIRIS_MAX_FILE_BYTES); read a part of it with your own tools")
        chunks = []
        remaining = max_bytes + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > max_bytes:  # it grew while we read it
        raise SandboxError(f"{resolved} is over the {max_bytes:,}-byte limit")
    if b"\x00" in data[:_BINARY_SNIFF]:
        raise SandboxError(f"{resolved} is a binary file; OSIRIS holds text only")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SandboxError(f"{resolved} is not UTF-8 text; OSIRIS holds text only") from None
    return FileRead(path=resolved, root=root, text=text, size=len(data),
                    mtime_ns=info.st_mtime_ns)
