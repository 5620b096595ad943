"""Loading the operating-context sidecar, again whenever the operator edits it.

The hard layer (registry, ``@auto``) follows the file's mtime: an edit applies on the
next call. The soft layer (the MCP ``instructions``) is read once when a server is
built and stays fixed for the life of the process: an HTTP server must be restarted
to serve an edited summary; stdio servers pick it up at their next start.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from osiris.core.operating_context import (
    OperatingContext,
    OperatingContextError,
    parse_operating_context,
    size_findings,
)

log = logging.getLogger(__name__)


@dataclass
class OperatingContextLoader:
    """The sidecar of one process (None path: switched off)."""

    path: Path | None
    _stat: tuple[int, int] | None = None
    _context: OperatingContext | None = None
    _problems: list[str] = field(default_factory=list)

    def load(self) -> tuple[OperatingContext | None, list[str]]:
        """The context in force (None when dormant, off or malformed) and findings."""
        if self.path is None:
            return None, []
        try:
            info = self.path.stat()
        except FileNotFoundError:
            self._stat, self._context, self._problems = None, None, []
            return None, []
        except OSError as exc:
            return None, [f"operating_context_parse: cannot read {self.path}: {exc.strerror}"]
        stat = (info.st_mtime_ns, info.st_size)
        if stat != self._stat:
            self._stat = stat
            try:
                self._context = parse_operating_context(self.path.read_text("utf-8"))
                self._problems = []
            except (OSError, UnicodeDecodeError, OperatingContextError) as exc:
                # A typo in the operator's file must never stop the server: the feature
                # goes dormant and health reports it.
                self._context = None
                self._problems = [f"operating_context_parse: {self.path} is malformed: {exc}; "
                                  "the operating context is off until it is fixed"]
                log.warning("%s", self._problems[0])
        return self._context, list(self._problems)

    def findings(self) -> list[str]:
        """Parse and size findings for ``osiris health``."""
        context, problems = self.load()
        return problems + size_findings(context)
