"""Adaptive engagement: how much OSIRIS does with one payload, and why.

* ``bystander`` — small payloads pass through untouched: a ref and a preview would
  cost more than the payload itself.
* ``light`` — externalize with a short preview.
* ``standard`` — externalize with a preview chosen for the content (error lines of a
  log, the outline of code, head and tail).
* ``full`` — externalize with a structural preview sized for very large payloads.

Thresholds are settings (OSIRIS_ENGAGE_*_TOKENS); a fixed mode can be forced (the
benchmark's ``osiris-fixed`` system does, to show what adaptivity buys).
"""

from __future__ import annotations

from dataclasses import dataclass

from osiris.errors import InvalidInputError

MODES = ("bystander", "light", "standard", "full")
PREVIEW_TOKENS = {"bystander": 0, "light": 60, "standard": 150, "full": 260}
"""Preview budget of each mode, in tokens (never more than a quarter of the payload)."""


@dataclass(frozen=True)
class Thresholds:
    """Payload sizes (tokens) at which each mode starts."""

    light: int = 300
    standard: int = 1_500
    full: int = 8_000


@dataclass(frozen=True)
class Engagement:
    """The chosen mode, its reason and its preview budget."""

    mode: str
    reason: str
    preview_tokens: int

    @property
    def externalized(self) -> bool:
        """Whether the payload leaves the context for a ref."""
        return self.mode != "bystander"


def choose_engagement(tokens: int, thresholds: Thresholds,
                      fixed_mode: str | None = None) -> Engagement:
    """Pick the mode for a payload of ``tokens`` tokens."""
    if fixed_mode is not None:
        if fixed_mode not in MODES:
            raise InvalidInputError(f"mode must be one of {', '.join(MODES)}")
        return Engagement(fixed_mode, f"fixed mode {fixed_mode}",
                          _budget(fixed_mode, tokens))
    if tokens < thresholds.light:
        return Engagement("bystander", f"{tokens} tokens < {thresholds.light}: a ref and a "
                          "preview would cost more than they save; keep it inline", 0)
    if tokens < thresholds.standard:
        mode = "light"
        reason = f"{tokens} tokens: short preview, the rest by recall"
    elif tokens < thresholds.full:
        mode = "standard"
        reason = f"{tokens} tokens: preview chosen for the content, the rest by recall"
    else:
        mode = "full"
        reason = f"{tokens} tokens ≥ {thresholds.full}: structural preview, recall to dig in"
    return Engagement(mode, reason, _budget(mode, tokens))


def _budget(mode: str, tokens: int) -> int:
    return min(PREVIEW_TOKENS[mode], max(tokens // 4, 0))
