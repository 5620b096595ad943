"""What the dashboard reads, in DuckDB, one short read-only connection per call.

SQL text is only ever assembled from this module's constant clauses; every value
arrives as a bound parameter. Every query is bounded: lists are paginated by keyset
(``seq`` or ``updated_us`` below a cursor) or a small ``LIMIT``, time series are
bucketed in SQL, and nothing loads a table into Python. Reads take the store's shared
lock (``Store.read``), so MCP servers writing to the same home wait at most for one of
these queries.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from osiris.engine.context import check_ref_visible
from osiris.engine.reads import Reader, fetch_row, rows_as_dicts
from osiris.errors import NotFoundError

PAGE = 50
# The event filters read the journal body's fields (DuckDB's JSON functions), never its
# text: any drift verdict but "none"; a precheck that did not simply allow, or that
# LoopGuard informed; an observe that LoopGuard flagged.
_DRIFT = "coalesce(json_extract_string(body, '$.drift.verdict'), 'none') <> 'none'"
_VERDICT = ("kind = 'precheck' AND (coalesce(json_extract_string(body, '$.verdict'), '')"
            " <> 'allow' OR starts_with(coalesce(json_extract_string(body, '$.sources[0]'),"
            " ''), 'loopguard'))")
_LOOP = ("starts_with(kind, 'observe.') AND"
         " coalesce(json_array_length(body, '$.loop'), 0) > 0")
WINDOW = 20_000  # journal events searched first for a page of events
FILTERS = {"all": "TRUE", "drift": _DRIFT, "verdicts": _VERDICT, "loopguard": _LOOP}


@dataclass(frozen=True)
class Page:
    """One page of a keyset-paginated list (``next_cursor``: where the next page starts)."""

    rows: list[dict[str, Any]]
    next_cursor: str | None


def parse_cursor(raw: str | None) -> tuple[int, str] | None:
    """``"<microseconds>:<id>"`` (a time and the id that breaks ties), or None."""
    if not raw:
        return None
    us, sep, key = raw.partition(":")
    if not sep or not us.isdigit() or len(key) > 200:
        raise ValueError(f"bad page cursor {raw[:40]!r}: follow the page's own 'next' link")
    return int(us), key


class Queries:
    """The dashboard's reads over one OSIRIS home."""

    def __init__(self, store: Reader) -> None:
        self.store = store

    # -- overview -----------------------------------------------------------------------

    def head_seq(self) -> int:
        """The journal head (0 for an empty home): what every write moves."""
        with self.store.read() as con:
            return int(fetch_row(con, "SELECT coalesce(max(seq), 0) FROM events")[0])

    def counts(self) -> dict[str, Any]:
        """Totals of the home and of its ledger."""
        with self.store.read() as con:
            tasks, active = fetch_row(con, "SELECT count(*), count(*) FILTER "
                                      "(WHERE status = 'active') FROM tasks")
            events, head = fetch_row(con, "SELECT count(*), coalesce(max(seq), 0) FROM events")
            refs, ref_bytes = fetch_row(con, "SELECT count(*), coalesce(sum(size_bytes), 0)"
                                        " FROM refs")
            ledger = rows_as_dicts(con.execute(
                "SELECT coalesce(sum(tokens), 0) AS tokens,"
                " coalesce(sum(saved_claimed), 0) AS saved_claimed,"
                " coalesce(sum(saved_proven), 0) AS saved_proven,"
                " coalesce(sum(overhead_tokens), 0) AS overhead_tokens,"
                " coalesce(sum(cost_usd), 0) AS cost_usd FROM ledger"))[0]
        return {"tasks": int(tasks), "active_tasks": int(active), "events": int(events),
                "head_seq": int(head), "refs": int(refs), "ref_bytes": int(ref_bytes),
                "ledger": {k: (float(v) if k == "cost_usd" else int(v))
                           for k, v in ledger.items()}}

    def ledger_series(self, task_id: str | None = None,
                      buckets: int = 48) -> list[dict[str, Any]]:
        """Ledger sums over time (``buckets`` equal slices of the span), for one task or
        the whole home: tokens into the context, savings claimed and proven, overhead,
        cost."""
        where, params = ("WHERE task_id = ?", [task_id]) if task_id else ("", [])
        with self.store.read() as con:
            lo, hi = fetch_row(con, f"SELECT min(ts_us), max(ts_us) FROM ledger {where}",
                               params)
            if lo is None:
                return []
            width = max((int(hi) - int(lo)) // buckets + 1, 1)
            rows = con.execute(
                f"SELECT (ts_us - ?) // ? AS b, sum(context_tokens), sum(saved_claimed),"
                f" sum(saved_proven), sum(overhead_tokens), sum(cost_usd)"
                f" FROM ledger {where} GROUP BY b ORDER BY b",
                [int(lo), width, *params]).fetchall()
        return [{"t_us": int(lo) + int(b) * width, "context_tokens": int(c or 0),
                 "saved_claimed": int(sc or 0), "saved_proven": int(sp or 0),
                 "overhead_tokens": int(o or 0), "cost_usd": float(usd or 0)}
                for b, c, sc, sp, o, usd in rows]

    def pressure_leaders(self, limit: int = 10) -> list[dict[str, Any]]:
        """Tasks holding the most tokens in their agent's context (by OSIRIS's ledger)."""
        with self.store.read() as con:
            return rows_as_dicts(con.execute(
                "SELECT l.task_id, t.objective, t.status, sum(l.context_tokens) AS context_tokens"
                " FROM ledger l JOIN tasks t USING (task_id) WHERE t.status = 'active'"
                " GROUP BY l.task_id, t.objective, t.status"
                " ORDER BY context_tokens DESC LIMIT ?", [limit]))

    # -- tasks --------------------------------------------------------------------------

    def tasks(self, *, cursor: str | None = None, query: str = "",
              limit: int = PAGE) -> Page:
        """Tasks, newest activity first, optionally filtered by id or objective text."""
        clauses: list[str] = ["TRUE"]
        params: list[Any] = []
        after = parse_cursor(cursor)
        if after is not None:
            clauses.append("(updated_us < ? OR (updated_us = ? AND task_id > ?))")
            params += [after[0], after[0], after[1]]
        if query:
            clauses.append("(task_id = ? OR contains(lower(objective), lower(?)))")
            params += [query, query]
        with self.store.read() as con:
            # The page's ids first, then the plan counts of those rows only: parsing the
            # JSON state of every task before the LIMIT costs ~0.4 s on 10,000 tasks.
            rows = rows_as_dicts(con.execute(
                "WITH page AS (SELECT task_id FROM tasks"
                f" WHERE {' AND '.join(clauses)}"
                " ORDER BY updated_us DESC, task_id LIMIT ?)"
                " SELECT task_id, objective, status, project_id, agent_id, created_us,"
                " updated_us, json_array_length(state, '$.plan.steps') AS steps,"
                " json_array_length(state, '$.plan.completed') AS completed"
                " FROM tasks JOIN page USING (task_id) ORDER BY updated_us DESC, task_id",
                [*params, limit + 1]))
        more = len(rows) > limit
        rows = rows[:limit]
        return Page(rows, f"{rows[-1]['updated_us']}:{rows[-1]['task_id']}"
                    if more and rows else None)

    def task_ledger(self, task_id: str) -> list[dict[str, Any]]:
        """The task's ledger by kind."""
        with self.store.read() as con:
            return rows_as_dicts(con.execute(
                "SELECT kind, count(*) AS rows, sum(tokens) AS tokens,"
                " sum(context_tokens) AS context_tokens, sum(saved_claimed) AS saved_claimed,"
                " sum(saved_proven) AS saved_proven, sum(overhead_tokens) AS overhead_tokens,"
                " sum(cost_usd) AS cost_usd FROM ledger WHERE task_id = ?"
                " GROUP BY kind ORDER BY kind", [task_id]))

    def task_refs(self, task_id: str, limit: int = PAGE) -> list[dict[str, Any]]:
        """Refs the task holds, newest first."""
        with self.store.read() as con:
            return rows_as_dicts(con.execute(
                "SELECT r.ref, r.size_bytes, r.tokens, r.media_type, tr.via, tr.created_us"
                " FROM task_refs tr JOIN refs r USING (ref) WHERE tr.task_id = ?"
                " ORDER BY tr.created_us DESC LIMIT ?", [task_id, limit]))

    # -- the journal --------------------------------------------------------------------

    def events(self, *, kind: str = "all", task_id: str | None = None,
               before_seq: int | None = None, limit: int = PAGE) -> Page:
        """Journal events, newest first: all, drift, precheck verdicts or LoopGuard."""
        if kind not in FILTERS:
            raise ValueError(f"unknown event filter {kind!r}: use one of {sorted(FILTERS)}")
        clauses: list[str] = [FILTERS[kind]]
        params: list[Any] = []
        if task_id:
            clauses.append("task_id = ?")
            params.append(task_id)
        with self.store.read() as con:
            top = before_seq if before_seq is not None else int(fetch_row(
                con, "SELECT coalesce(max(seq), 0) + 1 FROM events")[0])
            # Newest first over a window that doubles until the page is full: a filter on
            # the JSON body would otherwise scan the whole journal for ten rows.
            window, rows = WINDOW, []
            while True:
                low = max(top - window, 0)
                rows = rows_as_dicts(con.execute(
                    "SELECT seq, ts_us, task_id, actor, kind, body FROM events"
                    f" WHERE {' AND '.join(clauses)} AND seq < ? AND seq >= ?"
                    " ORDER BY seq DESC LIMIT ?", [*params, top, low, limit + 1]))
                if len(rows) > limit or low == 0:
                    break
                window *= 4
        more = len(rows) > limit
        rows = [_with_facts(r) for r in rows[:limit]]
        return Page(rows, str(rows[-1]["seq"]) if more and rows else None)

    # -- refs ---------------------------------------------------------------------------

    def refs(self, *, cursor: str | None = None, limit: int = PAGE) -> Page:
        """Refs, newest first."""
        after = parse_cursor(cursor)
        clause, params = ("WHERE created_us < ? OR (created_us = ? AND ref > ?)",
                          [after[0], after[0], after[1]]) if after else ("", [])
        with self.store.read() as con:
            rows = rows_as_dicts(con.execute(
                "WITH page AS (SELECT ref, size_bytes, tokens, media_type, created_us,"
                f" redactions FROM refs {clause} ORDER BY created_us DESC, ref LIMIT ?)"
                " SELECT page.*, (SELECT count(*) FROM task_refs tr WHERE tr.ref = page.ref)"
                " AS tasks FROM page ORDER BY created_us DESC, ref", [*params, limit + 1]))
        more = len(rows) > limit
        rows = rows[:limit]
        return Page(rows, f"{rows[-1]['created_us']}:{rows[-1]['ref']}"
                    if more and rows else None)

    def ref_meta(self, ref: str, principal: str | None = None) -> dict[str, Any] | None:
        """One ref's metadata and the tasks that hold it; None when it is unknown, or
        not ``principal``'s (a bearer identity sees only refs its tasks hold, and only
        those tasks: the rule of recall, :func:`~osiris.engine.context.check_ref_visible`)."""
        with self.store.read() as con:
            try:
                check_ref_visible(con, ref, principal)
            except NotFoundError:
                return None
            rows = rows_as_dicts(con.execute(
                "SELECT ref, size_bytes, tokens, encoding, media_type, created_us,"
                " redaction_version, redactions FROM refs WHERE ref = ?", [ref]))
            if not rows:
                return None
            holders = [r[0] for r in con.execute(
                "SELECT tr.task_id FROM task_refs tr JOIN tasks t USING (task_id)"
                " WHERE tr.ref = ? AND (CAST(? AS VARCHAR) IS NULL OR t.owner = ?)"
                " ORDER BY tr.created_us LIMIT 20", [ref, principal, principal]).fetchall()]
        return {**rows[0], "tasks": holders}


def _with_facts(row: dict[str, Any]) -> dict[str, Any]:
    """An event row with the facts a reader wants pulled out of its body."""
    try:
        body = json.loads(row["body"])
    except ValueError:
        body = {}
    drift = body.get("drift") if isinstance(body.get("drift"), dict) else {}
    prefill = drift.get("prefill") if isinstance(drift.get("prefill"), dict) else None
    return {**row, "facts": body,
            "verdict": body.get("verdict") if row["kind"] == "precheck" else None,
            "reasons": body.get("reasons") or [],
            "loop": body.get("loop") or [],
            "drift": drift.get("verdict") if drift.get("verdict") not in (None, "none")
            else None,
            "drift_detail": drift.get("detail"), "prefill": prefill,
            "ref": body.get("ref")}
