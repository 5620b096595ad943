"""The sealed manifest: a deterministic block of about 120 tokens the agent carries.

::

    OSIRIS/1 task=<id> obj="<objective>" plan=<done>/<total> step="<active step>"
    inv=<n> files=<n> refs=<n> dec=<n> con=<n> budget=ok|warn|over drift=<verdict>
    SEAL=sha256:<64 hex>

The same state always renders the same bytes. Control characters in the objective
and the active step are shown as escapes (:mod:`osiris.core.display`); the seal is
computed over the task state, not over this text. The objective and the active step
are shortened (by tokens, with an ellipsis) so that the block never exceeds
:data:`MAX_TOKENS` however long they are.
"""

from __future__ import annotations

from osiris.core.budget import budget_state
from osiris.core.display import escape_controls
from osiris.core.prefix import SEAL_HEX, compute_zones
from osiris.core.task_state import TaskState
from osiris.core.tokens import TokenCounter

MAX_TOKENS = 160
OBJECTIVE_TOKENS = 48
STEP_TOKENS = 24


def _quote(text: str) -> str:
    # Whitespace (CR and tab included) collapses to one space; other controls are shown
    # as escapes after the quoting, so that their backslash is not doubled.
    return escape_controls(" ".join(text.split()).replace("\\", "\\\\").replace('"', '\\"'))


def _shorten(counter: TokenCounter, text: str, max_tokens: int) -> str:
    """``text`` cut to ``max_tokens`` tokens at a word boundary, with an ellipsis."""
    if counter.count(text) <= max_tokens:
        return text
    words = text.split(" ")
    low, high = 0, len(words)
    while low < high:  # the longest word prefix that fits, by bisection
        mid = (low + high + 1) // 2
        if counter.count(" ".join(words[:mid]) + "…") <= max_tokens:
            low = mid
        else:
            high = mid - 1
    if low == 0:  # one enormous word: cut characters instead
        cut = text
        while cut and counter.count(cut + "…") > max_tokens:
            cut = cut[: max(1, len(cut) * 3 // 4)] if len(cut) > 1 else ""
        return cut + "…"
    return " ".join(words[:low]) + "…"


def render_manifest(state: TaskState, counter: TokenCounter,
                    objective_tokens: int = OBJECTIVE_TOKENS,
                    step_tokens: int = STEP_TOKENS) -> str:
    """The manifest of ``state`` (at most :data:`MAX_TOKENS` tokens)."""
    done, total = state.plan.progress
    first = (f'OSIRIS/1 task={state.task_id} '
             f'obj="{_shorten(counter, _quote(state.objective), objective_tokens)}" '
             f"plan={done}/{total}")
    if state.plan.active is not None:
        step = _shorten(counter, _quote(state.plan.steps[state.plan.active]), step_tokens)
        first += f' step={state.plan.active + 1}:"{step}"'
    second = (f"inv={state.invariants} files={len(state.files)} refs={state.refs} "
              f"dec={len(state.decisions)} con={len(state.constraints)} "
              f"budget={budget_state(state.budget)} drift={state.drift}")
    text = f"{first}\n{second}\nSEAL=sha256:{compute_zones(state).seal}"
    if counter.count(text) > MAX_TOKENS and objective_tokens > 8:
        # Only a pathological id or step can get here; shrink the free text further.
        return render_manifest(state, counter, objective_tokens // 2, step_tokens // 2)
    return text


def seal_of_manifest(manifest: str) -> str | None:
    """The SEAL written in a manifest (or a bare ``sha256:…`` / hex string)."""
    for raw in manifest.strip().splitlines()[::-1]:
        candidate = raw.strip().removeprefix("SEAL=").removeprefix("sha256:")
        if SEAL_HEX <= len(candidate) <= 64 and all(c in "0123456789abcdef"
                                                    for c in candidate):
            return candidate[:SEAL_HEX]
    return None
