"""Reversible session compaction: what leaves the context, with refs and a summary.

A client compacts or clears its own context (``/compact``, ``/clear``); OSIRIS
prepares it so nothing is lost:

* ``trim`` — older payloads (zone D) leave; the working set stays;
* ``compact`` — every payload leaves; a summary block stands in for them;
* ``clear`` — everything OSIRIS holds leaves, head and contract included.

Each item that leaves is listed with its ref and a one-line summary; ``restore``
gives back its exact bytes. The snapshot of the task state is split into parts
stored as separate blobs, so a snapshot that changed one part stores one part.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from osiris.core.hashing import canonical_json
from osiris.core.prune import ContextItem, assign_zones
from osiris.errors import InvalidInputError

COMPACTION_MODES = ("trim", "compact", "clear")
SNAPSHOT_PARTS = ("constraints", "decisions", "plan", "files", "tool_results", "failures",
                  "lessons", "handoffs", "seals", "zones", "budget", "flags")


@dataclass(frozen=True)
class CompactionPlan:
    """Items that leave the context and the block the agent keeps instead."""

    mode: str
    leaving: tuple[ContextItem, ...]
    staying: tuple[ContextItem, ...]

    @property
    def tokens_leaving(self) -> int:
        """Tokens the agent's context sheds."""
        return sum(i.tokens for i in self.leaving)


def plan_compaction(mode: str, items: list[ContextItem], working_set: int = 3,
                    ) -> CompactionPlan:
    """Which items leave under ``mode``."""
    if mode not in COMPACTION_MODES:
        raise InvalidInputError(f"compaction mode must be one of {', '.join(COMPACTION_MODES)}")
    zoned = assign_zones(items, working_set)
    if mode == "trim":
        leaving = [i for i in zoned if i.zone == "D"]
    elif mode == "compact":
        leaving = [i for i in zoned if i.zone in "CD"]
    else:
        leaving = list(zoned)
    staying = [i for i in zoned if i not in leaving]
    return CompactionPlan(mode, tuple(leaving), tuple(staying))


def summary_block(plan: CompactionPlan, manifest: str, checkpoint_id: str,
                  summaries: dict[str, str]) -> str:
    """The text the agent keeps in place of what leaves."""
    lines = [manifest, "",
             f"[OSIRIS {plan.mode}: {len(plan.leaving)} payloads "
             f"({plan.tokens_leaving} tokens) left the context as refs; "
             f"checkpoint {checkpoint_id}]"]
    for item in plan.leaving:
        label = f"{item.tool} " if item.tool else ""
        lines.append(f"- {item.ref[13:25]}… {label}{item.kind} {item.tokens} tok: "
                     f"{summaries.get(item.ref, '')}")
    lines.append(f"Restore: checkpoint(mode='restore', checkpoint_id='{checkpoint_id}') or "
                 "recall(ref) for one payload.")
    return "\n".join(lines)


def split_state(state: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """A state dict split into its core and the canonical JSON of each part."""
    core = {k: v for k, v in state.items() if k not in SNAPSHOT_PARTS}
    parts = {name: canonical_json(state.get(name)) for name in SNAPSHOT_PARTS}
    return core, parts


def join_state(core: dict[str, Any], parts: dict[str, Any]) -> dict[str, Any]:
    """Inverse of :func:`split_state` (parts already parsed)."""
    return {**core, **parts}
