"""How the scripted agent gets a need back: only with what it could know at that moment.

A need (a string of an earlier output that a later call uses) may no longer be in the
prompt: a system kept only a ref and a preview, the client persisted the output to a
file or cut it, or compacted the history. The scripted agent must then retrieve it, and
a real agent can only query with what is in its context — the task prompt, the
previews, outlines and refs it was shown, its own earlier messages — never with the
string it is looking for. Three retrieval models, the same for every system:

* ``visible`` (the headline): search with the **longest substring of the need, at least
  four characters, that is visible in the prompt** the agent has just received; if no
  such substring exists or the search does not bring the need back, page through the
  output in fixed windows from the start;
* ``paging`` (a lower bound): page from the start, never search;
* ``exact`` (an upper bound, labelled as such): search for the need itself — what an
  agent that already knew the answer would do.

A search whose answer was cut by its bounds is followed to its next matches before any
paging (an agent reads on when told there is more).

Searching and paging go through the system's own means when it has them (OSIRIS:
``recall`` grep and range; context-mode: ``ctx_search``; contextweaver: its paging) and
through the client's own tools otherwise (Claude Code: ``Grep`` and ``Read`` with
offset/limit on a file; a shell: the command again, piped through ``grep -n`` or
``sed -n``). Every call and answer is charged to the system. A need counts as
preserved only when its exact string comes back; a batch of needs of one output gets
at most :data:`MAX_CALLS` calls, then the rest are lost.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

RETRIEVAL_MODELS = ("visible", "paging", "exact")
MIN_QUERY_CHARS = 4
WINDOW_LINES = 200
MAX_CALLS = 10


@dataclass(frozen=True)
class Exchange:
    """One retrieval call as the model sees it, and what it brought back."""

    call: str
    answer: str
    overhead: bool
    """The call used the system's own tool (its tokens are the system's overhead)."""
    content: str | None = None
    """The part of the answer that can hold a need (default: all of it); a search that
    echoes its queries does not find a need by echoing it."""
    more: Callable[[], Exchange | None] | None = None
    """The continuation of a search cut by its bounds (the next matches), if any: an
    agent follows it before paging from the start."""

    @property
    def found_in(self) -> str:
        """Where a need counts as found."""
        return self.answer if self.content is None else self.content


def longest_visible(need: str, visible: str, minimum: int = MIN_QUERY_CHARS) -> str | None:
    """The longest substring of ``need`` (at least ``minimum`` characters) that occurs in
    ``visible``; None when there is none.

    Two pointers over ``need``: if ``need[i:j]`` occurs, so does every substring of it, so
    the window only ever moves right — at most ``2·len(need)`` substring searches."""
    best = ""
    j = 0
    for i in range(len(need)):
        j = max(j, i)
        while j < len(need) and need[i:j + 1] in visible:
            j += 1
        if j - i > len(best):
            best = need[i:j]
    return best if len(best) >= minimum else None


def query_for(need: str, visible: str, model: str) -> str | None:
    """What the agent searches for under ``model`` (None: it pages instead)."""
    if model == "exact":
        return need
    if model == "visible":
        return longest_visible(need, visible)
    if model == "paging":
        return None
    raise ValueError(f"unknown retrieval model {model!r}: use one of "
                     + ", ".join(RETRIEVAL_MODELS))


def window(k: int) -> tuple[int, int]:
    """The 1-based inclusive line range of page ``k`` (from 0)."""
    return k * WINDOW_LINES + 1, (k + 1) * WINDOW_LINES
