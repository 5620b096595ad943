"""What every stage of the large-home build shares: the template clock and the progress
callback."""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``: called as the build advances (never prints)."""

TEMPLATE_T0_US = 1_600_000_000_000_000
"""The template clock starts here: every template time is a 16-digit number near it."""
TEMPLATE_SEQ_BASE = 97_300_000
"""The template journal's first event is ``TEMPLATE_SEQ_BASE + 1``: 8-digit numbers."""
_TIME_SPAN_US = 30 * 86_400 * 1_000_000  # a template time is within 30 days of T0
DAY_US = 86_400 * 1_000_000
