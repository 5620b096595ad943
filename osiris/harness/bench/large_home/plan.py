"""Planning: which unit each copy is, where it is cut, its ids and its times (step 3)."""

from __future__ import annotations

import bisect
import json
import random
from dataclasses import dataclass, field

from osiris.errors import InvalidInputError
from osiris.harness.bench.large_home.common import DAY_US
from osiris.harness.bench.large_home.compile import _Unit

AGENTS = ("claude-code", "claude-code", "claude-code", "codex", "codex", "cursor-agent",
          "aider", "gemini-cli", "openhands", "goose")
PROJECTS = ("shop-web", "billing-api", "search-service", "mobile-app", "infra-terraform",
            "data-pipeline", "auth-gateway", "design-system", "notifications", "ml-ranking",
            "admin-console", "docs-site", "payments-core", "inventory", "support-bot",
            "analytics-etl", "edge-proxy", "email-worker", "cli-tools", "kube-operators")
_VERBS = ("Fix", "Add", "Refactor", "Migrate", "Speed up", "Document", "Review", "Investigate",
          "Remove", "Upgrade", "Harden", "Port", "Split", "Simplify", "Test")
_THINGS = ("the login rate limiter", "invoice PDF rendering", "the search index rebuild",
           "CSV export", "the retry policy", "webhook signature checks",
           "the nightly backup job", "cart totals rounding", "feature flag evaluation",
           "the GraphQL schema", "session expiry", "image thumbnails", "the payments client",
           "audit logging", "the settings page", "the onboarding emails",
           "database connection pooling", "the OpenAPI spec", "error reporting",
           "the deploy pipeline", "currency conversion", "the cache warmer",
           "push notification batching", "the permissions model", "pagination of orders")
_PLACES = ("in the billing service", "in the web app", "for the mobile API",
           "in the worker pool", "across the monorepo", "in the admin dashboard",
           "behind the API gateway", "in the data pipeline", "for enterprise tenants", "")


def _objective(rng: random.Random) -> str:
    text = f"{rng.choice(_VERBS)} {rng.choice(_THINGS)} {rng.choice(_PLACES)}".strip()
    if rng.random() < 0.4:
        text += f" (#{rng.randint(100, 9999)})"
    if json.dumps(text, ensure_ascii=False)[1:-1] != text:  # rendered into JSON unescaped
        raise AssertionError(f"objective {text!r} would need JSON escaping")
    return text


@dataclass
class _Copy:
    """One generated task (or parent/child pair): a unit cut after ``calls`` calls."""

    unit: int
    want: float
    """Desired number of events before scaling (the cut is fitted to it)."""
    calls: int = 0
    start_us: int = 0
    pace: float = 1.0
    values: dict[str, str] = field(default_factory=dict)
    seqs: list[int] = field(default_factory=list)


def _cut_for(unit: _Unit, want: float) -> int:
    """The fewest calls (at least ``min_calls``) whose events reach ``want``."""
    k = bisect.bisect_left(unit.upto["events"], want)
    return max(unit.min_calls, min(k, unit.calls))


def _fit_cuts(units: list[_Unit], copies: list[_Copy], events: int,
              rng: random.Random) -> None:
    """Cut every copy so that the journal holds exactly ``events`` events (when it can)."""
    lo = sum(units[c.unit].events_after(units[c.unit].min_calls) for c in copies)
    hi = sum(units[c.unit].events_after(units[c.unit].calls) for c in copies)
    if not lo <= events <= hi:
        raise InvalidInputError(
            f"cannot make {events:,} events from {len(copies):,} tasks: these templates give "
            f"between {lo:,} and {hi:,} (at most ~{hi // max(len(copies), 1):,} per task)")

    def total(scale: float) -> int:
        return sum(units[c.unit].events_after(_cut_for(units[c.unit], c.want * scale))
                   for c in copies)

    low, high = 0.0, 1.0
    while total(high) < events:
        high *= 2
    for _ in range(60):
        mid = (low + high) / 2
        if total(mid) < events:
            low = mid
        else:
            high = mid
    for c in copies:
        c.calls = _cut_for(units[c.unit], c.want * high)
    diff = events - sum(units[c.unit].events_after(c.calls) for c in copies)
    order = list(range(len(copies)))
    while diff:
        rng.shuffle(order)
        moved = False
        for i in order:
            c, unit = copies[i], units[copies[i].unit]
            if diff > 0 and c.calls < unit.calls:
                step = unit.events_after(c.calls + 1) - unit.events_after(c.calls)
                if step <= diff:
                    c.calls, diff, moved = c.calls + 1, diff - step, True
            elif diff < 0 and c.calls > unit.min_calls:
                step = unit.events_after(c.calls) - unit.events_after(c.calls - 1)
                if step <= -diff:
                    c.calls, diff, moved = c.calls - 1, diff + step, True
            if not diff:
                break
        if not moved:
            break


def _plan_copies(units: list[_Unit], tasks: int, events: int, *, handoff_share: float,
                 days: float, end_us: int, rng: random.Random) -> list[_Copy]:
    """Choose each copy's unit, cut, ids, agent, project, objective, start and pace."""
    pairs = [i for i, u in enumerate(units) if len(u.task_markers) == 2]
    singles = [i for i, u in enumerate(units) if len(u.task_markers) == 1]
    n_pairs = round(tasks * handoff_share / 2) if pairs else 0
    per_task = events / tasks
    copies = []
    for _ in range(tasks - 2 * n_pairs):  # singles: a length drawn long-tailed, then a unit
        want = per_task * rng.lognormvariate(-0.5, 1.0)
        fits = [i for i in singles if units[i].events_after(units[i].calls) >= want]
        if not fits:
            fits = [max(singles, key=lambda i: units[i].calls)]
        pick = rng.choices(fits, weights=[units[i].weight for i in fits])[0]
        copies.append(_Copy(pick, want))
    copies += [_Copy(rng.choice(pairs), 2 * per_task * rng.lognormvariate(-0.5, 1.0))
               for _ in range(n_pairs)]
    rng.shuffle(copies)
    _fit_cuts(units, copies, events, rng)
    span = int(days * DAY_US)
    for c in copies:
        unit = units[c.unit]
        c.pace = rng.lognormvariate(0.0, 0.35)
        duration = int((unit.call_ts[c.calls - 1] - unit.call_ts[0]) * c.pace)
        c.start_us = end_us - duration - rng.randrange(max(span - duration, 1))
        project = rng.choice(PROJECTS)
        for marker, (kind, _literal) in unit.markers.items():
            if kind == "task":
                c.values[marker] = f"t_{rng.getrandbits(96):024x}"
            elif kind == "handoff":
                c.values[marker] = f"h_{rng.getrandbits(64):016x}"
            elif kind == "objective":
                c.values[marker] = _objective(rng)
            elif kind == "agent":
                c.values[marker] = rng.choice(AGENTS)
            else:
                c.values[marker] = project
    return copies


def _number_events(units: list[_Unit], copies: list[_Copy]) -> int:
    """Interleave every copy's events by time and give them their sequence numbers."""
    keys: list[tuple[int, int, int]] = []
    for i, c in enumerate(copies):
        unit = units[c.unit]
        t0, start, pace = unit.call_ts[0], c.start_us, c.pace
        times = unit.append["events"].data["ts_us"][:unit.events_after(c.calls)]
        keys.extend((start + int((t - t0) * pace), i, j) for j, t in enumerate(times))
        c.seqs = [0] * len(times)
    keys.sort()
    for seq, (_ts, i, j) in enumerate(keys, start=1):
        copies[i].seqs[j] = seq
    return len(keys)
