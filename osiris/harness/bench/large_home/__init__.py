"""A large but valid OSIRIS home, built fast: realism from the real engine, volume by copy.

``build_large_home(home, tasks=10_000, events=1_000_000)`` fills an empty home with
what a busy month of agents would leave behind, so that the dashboard (and anything
else that reads a home) can be measured at scale. How:

1. **Templates, from the real engine.** A few scripted agent sessions run through
   :class:`osiris.engine.Engine` in a scratch home: plans with steps, prechecks
   (allowed, warned, blocked by an invariant and by LoopGuard, approval required and
   confirmed), tool results of every size (bystander to full engagement, an HTML page
   with ``<script>alert(1)</script>``, a payload with a secret that gets redacted),
   repeated errors (failures, lessons, LoopGuard patterns), recalls, drop receipts,
   provider usage, plan updates with drift, a system head observed twice with a
   changed date (a critical drift and its PrefillPlan), a contract change, a handoff
   to a child task, memory writes and a checkpoint report. After every engine call
   the capture notes how far each table had grown and snapshots the mutable rows, so
   any prefix of a session ("cut after call k") is itself a session the engine wrote.
2. **Compilation.** Every text the store holds (event bodies, task states, ledger
   details, ...) is split around what must change in a copy: task, handoff, agent and
   project ids, objectives, times, journal sequence numbers, and the hashes that
   depend on them (state hashes, seals and zone-B hashes, memory entry ids). The
   template journal starts at :data:`TEMPLATE_SEQ_BASE` and its clock at
   :data:`TEMPLATE_T0_US`, so sequence numbers and times are recognisable in any text.
3. **Replication.** Each generated task (or parent/child pair) is one template
   session cut after some call, with fresh ids, a fresh objective, an agent and a
   project, and its times moved into the last ``days`` days at its own pace. Cuts are
   chosen so that the journal holds the requested number of events. Events of all
   tasks are interleaved by time and numbered; the state of a task after each call is
   rendered and hashed exactly as :meth:`TaskState.state_hash` would, seals are
   recomputed for the new objective, and the hash chain is computed in order with
   :func:`osiris.core.hashing.journal_event_hash`.
4. **Bulk insert.** Blobs are content-addressed, so the few template blobs are copied
   once and shared by every task. Rows go in as Arrow tables through DuckDB's
   ``INSERT … SELECT`` in one write transaction of the store (its lock held); the
   journal witness is written after the commit, as :class:`~osiris.store.state.Store`
   does.

Run it as ``python -m osiris.harness.bench.large_home HOME --tasks 10000 --events 1000000``.

The stages are modules: ``payloads`` and ``templates`` (1), ``compile`` (2), ``plan``
and ``render`` (3), ``build`` (4, and the summary, the verification and the command
line); ``common`` holds what they share.
"""

from __future__ import annotations

from osiris.harness.bench.large_home.build import (
           build_large_home,
           main,
           summarize_home,
           verify_large_home,
)
from osiris.harness.bench.large_home.common import TEMPLATE_SEQ_BASE, TEMPLATE_T0_US, Progress

__all__ = ["TEMPLATE_SEQ_BASE", "TEMPLATE_T0_US", "Progress", "build_large_home", "main",
           "summarize_home", "verify_large_home"]
