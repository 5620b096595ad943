"""Context pressure: how full the agent's window is, and how much of that OSIRIS knows.

* measured: tokens OSIRIS counted itself and believes are in the agent's context
  (payloads passed through, previews, answers, manifests), minus what the agent
  confirmed it dropped;
* declared: the prompt size the agent reported (provider usage, or a number);
* unknown: what the agent holds that OSIRIS never saw (declared minus measured:
  system prompt, other tools' output, the agent's own messages).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

LEVELS = ((0.5, "ok"), (0.75, "elevated"), (0.9, "high"))


@dataclass(frozen=True)
class Pressure:
    """The breakdown returned by ``plan(mode="status")``."""

    window_tokens: int
    measured_tokens: int
    declared_tokens: int | None
    unknown_tokens: int
    used_tokens: int
    ratio: float
    level: str
    prune_threshold_tokens: int
    prune_due: bool
    measured_by_source: dict[str, int]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def compute_pressure(measured_by_source: dict[str, int], declared: int | None,
                     window: int, prune_threshold: int) -> Pressure:
    """Pressure from OSIRIS's own counts and the agent's declaration."""
    measured = max(sum(measured_by_source.values()), 0)
    unknown = max(declared - measured, 0) if declared is not None else 0
    used = max(measured, declared or 0)
    ratio = used / window if window else 0.0
    level = next((name for limit, name in LEVELS if ratio < limit), "critical")
    return Pressure(window_tokens=window, measured_tokens=measured, declared_tokens=declared,
                    unknown_tokens=unknown, used_tokens=used, ratio=round(ratio, 4),
                    level=level, prune_threshold_tokens=prune_threshold,
                    prune_due=used >= prune_threshold,
                    measured_by_source={k: v for k, v in sorted(measured_by_source.items())
                                        if v})
