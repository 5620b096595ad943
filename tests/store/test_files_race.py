"""The file sandbox under a real race: a directory swapped for a symlink while OSIRIS reads.

Another process swaps ``root/d`` (a real directory) and a symlink to a directory outside
the roots that holds a file of the same name, as fast as it can; this process reads
``d/f.txt`` in a loop. Every read must either return the inside content or be refused:
never the outside one. The loop is bounded in time and stops at the first escape.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from osiris.errors import SandboxError
from osiris.store.files import read_text_file

INSIDE = "inside the roots\n"
SECRET = "top secret, outside the roots\n"

# Renames in a tight loop: d (directory) <-> d (symlink to outside/d). Each half-swap
# leaves d missing for a moment, which readers see as "does not exist": allowed.
_SWAPPER = """
import os, sys
root = sys.argv[1]
d, real, link = (os.path.join(root, n) for n in ("d", "d.real", "d.link"))
print("ready", flush=True)
while True:
    os.rename(d, real)
    os.rename(link, d)
    os.rename(d, link)
    os.rename(real, d)
"""


@pytest.mark.slow
def test_a_directory_swapped_for_a_symlink_never_leaks_a_file_outside_the_roots(
        tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "d").mkdir(parents=True)
    (root / "d" / "f.txt").write_text(INSIDE)
    outside = tmp_path / "outside" / "d"
    outside.mkdir(parents=True)
    (outside / "f.txt").write_text(SECRET)
    (root / "d.link").symlink_to(outside, target_is_directory=True)
    roots = (root.resolve(),)

    with subprocess.Popen([sys.executable, "-c", _SWAPPER, str(root)],
                          stdout=subprocess.PIPE, text=True) as swapper:
        try:
            assert swapper.stdout is not None
            assert swapper.stdout.readline().strip() == "ready"
            reads = refusals = 0
            deadline = time.monotonic() + 3.0
            while time.monotonic() < deadline:
                try:
                    text = read_text_file("d/f.txt", roots, 4096).text
                except SandboxError:
                    refusals += 1
                    continue
                reads += 1
                assert text == INSIDE, (
                    f"read {reads + refusals} returned a file outside the roots")
        finally:
            swapper.kill()
    # The race really ran: some reads landed inside, some met the swap.
    assert reads > 0
    assert refusals > 0


def test_symlinks_that_stay_inside_the_roots_are_still_followed(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "mod.py").write_text(INSIDE)
    (root / "alias").symlink_to(root / "src", target_is_directory=True)
    (root / "src" / "link.py").symlink_to("pkg/mod.py")
    roots = (root.resolve(),)
    for raw in ("alias/pkg/mod.py", "src/link.py", "alias/link.py",
                str(root / "alias" / "pkg" / ".." / "link.py")):
        read = read_text_file(raw, roots, 4096)
        assert read.text == INSIDE
        assert read.path == (root / "src" / "pkg" / "mod.py").resolve()
    with pytest.raises(SandboxError, match="not a regular file"):
        read_text_file(str(root), roots, 4096)
