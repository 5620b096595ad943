"""Which sessions OSIRIS's thresholds and constants were chosen on, and which it never saw.

The routing constants (:mod:`osiris.core.routing`, :mod:`osiris.core.payoff`) were chosen
by playing sessions through the real clients: the tielec sessions and the half of
the corpus's sessions (that have a workspace) named here. The other half is reported
apart as *unseen*: its figures are what a user whose sessions OSIRIS was not tuned on
should expect. The Claude Code halves were fixed before any of the unseen half was played
with the new routing (2026-12-04), by size: each half holds a large, a medium and a
small session. Codex's thresholds (``shell_preview_tokens``, ``sized_preview_tokens``,
``shell_log_tokens``) were chosen on agentv-ci-node24 and the tielec Codex sessions;
agentv-spark was never tuned on.
"""

from __future__ import annotations

TUNING = frozenset({"corpus/claude-code/context-evaluator",
                    "corpus/claude-code/imessage-mail",
                    "corpus/claude-code/strato",
                    "corpus/codex/agentv-ci-node24"})
UNSEEN = frozenset({"corpus/claude-code/cipherbox-sharing",
                    "corpus/claude-code/entire-cli-go",
                    "corpus/claude-code/mclaude-worktree-2.0.72",
                    "corpus/codex/agentv-spark"})


def half_of(session: str) -> str | None:
    """``tuning`` or ``unseen`` for a corpus session with a workspace, else None."""
    if session in TUNING:
        return "tuning"
    if session in UNSEEN:
        return "unseen"
    return None
