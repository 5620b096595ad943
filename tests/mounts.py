"""A small file system of its own for a command: full, or read-only (``unshare``).

A full disk and a read-only home cannot be made with permissions when the tests run as
root (root writes anyway), so the command runs in a private mount namespace (``unshare
-rm``: a user namespace, no root needed where the kernel allows it) with a 256 KiB tmpfs
at ``root``, filled to the last byte or remounted read-only. Nothing outside the command
sees the mount; it ends with the command.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

_SETUP = {
    "full": ("mount -t tmpfs -o size=256k tmpfs {root} && mkdir -p {home} && "
             "(head -c 4000000 /dev/zero > {root}/filler 2>/dev/null || true)"),
    "read-only": ("mount -t tmpfs -o size=256k tmpfs {root} && mkdir -p {home} && "
                  "mount -o remount,ro {root}"),
}


def in_small_fs(kind: str, root: Path, argv: list[str], *, stdin: str | bytes | None = None,
                env: dict[str, str] | None = None, timeout: float = 120,
                ) -> subprocess.CompletedProcess[bytes]:
    """``argv`` run with a ``kind`` ("full" or "read-only") file system at ``root``,
    whose ``home`` folder exists; skipped (failed under ``TEST_REQUIRE_NAMESPACES=1``,
    as in CI) where mount namespaces are not allowed."""
    if shutil.which("unshare") is None or subprocess.run(
            ["unshare", "-rm", "true"], capture_output=True, check=False).returncode != 0:
        message = "unshare -rm is not allowed here (no user or mount namespaces)"
        if os.environ.get("TEST_REQUIRE_NAMESPACES") == "1":
            pytest.fail(message)
        pytest.skip(message)
    root.mkdir(parents=True, exist_ok=True)
    setup = _SETUP[kind].format(root=shlex.quote(str(root)),
                                home=shlex.quote(str(root / "home")))
    script = f"{setup} && exec \"$@\""
    data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
    return subprocess.run(["unshare", "-rm", "sh", "-c", script, "sh", *argv], input=data,
                          capture_output=True, env={**os.environ, **(env or {})},
                          timeout=timeout, check=False)
