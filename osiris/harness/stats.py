"""Small statistics for reports: medians and percentiles, never single timings."""

from __future__ import annotations

import statistics
from collections.abc import Sequence


def percentile(values: Sequence[float], q: int) -> float:
    """The q-th percentile (an integer 0-100) by linear interpolation between the closest
    ranks (``statistics.quantiles``' inclusive method, numpy's default); 0.0 for no
    values."""
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} is not between 0 and 100")
    if not values:
        return 0.0
    if len(values) == 1 or q in (0, 100):
        return float(min(values) if q == 0 else max(values))
    return float(statistics.quantiles(values, n=100, method="inclusive")[q - 1])


def median(values: Sequence[float]) -> float:
    """Median, 0.0 for no values."""
    return float(statistics.median(values)) if values else 0.0


def ms(seconds: float) -> str:
    """Seconds as milliseconds with sensible precision."""
    value = seconds * 1000
    return f"{value:.2f}" if value < 10 else f"{value:.1f}" if value < 100 else f"{value:,.0f}"
