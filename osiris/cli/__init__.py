"""The ``osiris`` command line (and the ``mcp-osiris`` entry point):
:mod:`osiris.cli.main`."""

from __future__ import annotations

from osiris.cli.main import main, serve_stdio_main

__all__ = ["main", "serve_stdio_main"]
