"""The content-addressed ref store: ``mem://sha256:<hex>`` → verified bytes.

Blobs live under ``$OSIRIS_HOME/refs/sha256/<2 hex>/<64 hex>``, one file per
content, written atomically (temp file, fsync, rename). Every read re-hashes the
bytes (SHA-256 runs ~1.8 GB/s, so this is nearly free) and a mismatch raises
:class:`~osiris.errors.IntegrityError`: wrong bytes are never returned. There is
no delete path; pruning moves payloads here, it never destroys them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from osiris.core.hashing import digest_of_ref, ref_for_digest
from osiris.errors import IntegrityError, NotFoundError
from osiris.store.fsutil import atomic_write


@dataclass(frozen=True)
class BlobCheck:
    """Result of re-hashing one blob."""

    ref: str
    ok: bool
    problem: str | None = None


class RefStore:
    """Blob files of one OSIRIS home."""

    def __init__(self, root: Path) -> None:
        self.root = root / "sha256"

    def path_for(self, ref: str) -> Path:
        """File that holds (or would hold) the blob of ``ref``."""
        digest = digest_of_ref(ref)
        return self.root / digest[:2] / digest

    def put(self, data: bytes, *, durable: bool = True) -> tuple[str, bool]:
        """Store ``data`` once; return its ref and whether it was newly written.
        ``durable=False``: without fsyncs (see :func:`osiris.store.fsutil.atomic_write`)."""
        digest = hashlib.sha256(data).hexdigest()
        ref = ref_for_digest(digest)
        path = self.root / digest[:2] / digest
        if path.exists():
            try:
                self.get(ref)
                return ref, False
            except IntegrityError:
                pass  # a damaged copy: rewrite it with the bytes we were given
        atomic_write(path, data, durable=durable)
        return ref, True

    def get(self, ref: str) -> bytes:
        """The verified bytes of ``ref``."""
        path = self.path_for(ref)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise NotFoundError(f"{ref} is not in the ref store {self.root}") from None
        actual = hashlib.sha256(data).hexdigest()
        if actual != digest_of_ref(ref):
            raise IntegrityError(
                f"{ref} failed verification: its stored bytes hash to sha256:{actual[:16]}… "
                f"({len(data)} bytes); the blob was altered or truncated on disk"
            )
        return data

    def exists(self, ref: str) -> bool:
        """Whether a blob file exists for ``ref`` (not verified)."""
        return self.path_for(ref).exists()

    def check(self, ref: str) -> BlobCheck:
        """Re-hash one blob without raising."""
        try:
            self.get(ref)
        except (NotFoundError, IntegrityError) as exc:
            return BlobCheck(ref, False, str(exc))
        return BlobCheck(ref, True)

    def iter_refs(self) -> Iterator[str]:
        """Every blob file present, as refs."""
        if not self.root.exists():
            return
        for sub in sorted(self.root.iterdir()):
            if sub.is_dir():
                for blob in sorted(sub.iterdir()):
                    if len(blob.name) == 64 and not blob.name.startswith("."):
                        yield ref_for_digest(blob.name)
