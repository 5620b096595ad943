"""Reproduce the benchmark: ``python bench/run_bench.py [--quick] [--stage NAME]``.

Same as ``osiris bench`` and ``nox -s bench``; regenerates ``reports/``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from osiris.cli import main

if __name__ == "__main__":
    repo = Path(__file__).resolve().parent.parent
    sys.exit(main(["bench", "--repo", str(repo), *sys.argv[1:]]))
