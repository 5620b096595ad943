"""The event journal: append-only and hash-chained, with a witness outside the database.

Every event carries a sequence number, a time, the task id, the actor (the
caller's identity), a kind, a JSON body, the previous event's hash and its own
hash (:func:`osiris.core.hashing.journal_event_hash`). One chain spans the whole
home, so a deleted event anywhere breaks it.

The hash encodes each field as a netstring (its UTF-8 byte length, then its text), so
two different events never share the material that is hashed. Homes created before
that encoding (chain version 1, fields joined with ``|``) keep verifying: the
``journal_chain`` table records the first event of version 2, earlier events are
checked with the v1 formula (and keep its blind spot: a ``|`` moved between two of
their fields goes unseen). :func:`verify_chain` recomputes every event's hash inside
DuckDB, one query for the whole chain.

DuckDB drops a torn WAL tail silently after a crash. That is caught by the
*witness*: ``journal.witness`` beside the database holds the sequence number and hash
of the last committed event. It is replaced atomically (temp file, fsync, rename) right
after each commit, while the writer still holds the store's lock, so it never runs
ahead of the database. It lags when the witness write fails after a commit or a crash
cuts it short; the audit reports that lag, and the next commit closes it.

What this proves, and what it does not: the chain and the witness detect accidents
and partial edits — a damaged or edited event, a deleted one, a lost tail, a rewritten
last event whose witness was left alone. They are not a signature: the witness is not
keyed, so someone who can rewrite both the database and the witness file (anyone with
write access to the home) can recompute a consistent chain, and no check here can tell.
Keep a copy of the witness elsewhere (or the home on storage you trust) when that matters.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from osiris.core.hashing import (
    GENESIS_HASH,
    JOURNAL_HASH_TAG,
    canonical_json,
    journal_event_hash,
)
from osiris.store import statements
from osiris.store.db import fetch_row
from osiris.store.fsutil import atomic_write

WITNESS_NAME = "journal.witness"


@dataclass(frozen=True)
class JournalEvent:
    """One journal record, as stored."""

    seq: int
    """Position in the home's single chain, from 1, without gaps."""
    ts_us: int
    """Wall-clock time of the append, microseconds since the Unix epoch."""
    task_id: str | None
    """Task the event belongs to (None for home-wide events)."""
    actor: str
    """Who caused it: an agent id, a token identity, ``cli`` or ``system``."""
    kind: str
    """What happened, e.g. ``task.start``, ``payload.externalize``, ``precheck``."""
    body: str
    """Canonical JSON text of the event's facts (hashed exactly as stored)."""
    prev_hash: str
    """Hash of event ``seq - 1`` (64 zeros for the first event)."""
    hash: str
    """:func:`journal_event_hash` of all the fields above."""

    def body_json(self) -> Any:
        """The body parsed."""
        return json.loads(self.body)


@dataclass
class JournalCursor:
    """The tail of the chain as seen inside one write transaction."""

    seq: int
    hash: str
    appended: list[JournalEvent] = field(default_factory=list)


def read_tail(con: duckdb.DuckDBPyConnection) -> JournalCursor:
    """The last event's sequence number and hash (0 and genesis on an empty journal)."""
    row = con.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
    if row is None:
        return JournalCursor(0, GENESIS_HASH)
    return JournalCursor(int(row[0]), str(row[1]))


def append_event(con: duckdb.DuckDBPyConnection, cursor: JournalCursor, *, ts_us: int,
                 task_id: str | None, actor: str, kind: str,
                 body: dict[str, Any]) -> JournalEvent:
    """Insert the next event of the chain (inside the caller's write transaction)."""
    text = canonical_json(body)
    seq = cursor.seq + 1
    digest = journal_event_hash(seq, ts_us, task_id, actor, kind, text, cursor.hash)
    con.execute(statements.EVENT.sql,
                [seq, ts_us, task_id, actor, kind, text, cursor.hash, digest])
    event = JournalEvent(seq, ts_us, task_id, actor, kind, text, cursor.hash, digest)
    cursor.seq, cursor.hash = seq, digest
    cursor.appended.append(event)
    return event


def write_witness(home: Path, seq: int, digest: str) -> None:
    """Record the last committed event outside the database."""
    atomic_write(home / WITNESS_NAME,
                 json.dumps({"seq": seq, "hash": digest}).encode("utf-8"))


def read_witness(home: Path) -> dict[str, Any] | None:
    """The witness, or None when no event was ever committed in this home."""
    path = home / WITNESS_NAME
    try:
        data = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        return None
    except (ValueError, OSError) as exc:
        return {"error": f"unreadable witness {path}: {exc}"}
    if not isinstance(data, dict):
        return {"error": f"unreadable witness {path}: not an object"}
    return data


@dataclass(frozen=True)
class ChainReport:
    """What journal verification found."""

    ok: bool
    events: int
    head_seq: int
    head_hash: str
    violations: tuple[str, ...]
    witness_seq: int | None = None
    """The last event the witness vouches for (None without a readable witness)."""
    v2_from_seq: int = 1
    """First event hashed with chain version 2 (the ones before it are v1)."""
    notes: tuple[str, ...] = ()
    """Conditions that are not violations but limit what was proven (a lagging witness)."""

    @property
    def witness_lag(self) -> int:
        """Events committed after the one the witness vouches for."""
        return self.head_seq - self.witness_seq if self.witness_seq is not None else 0


def _netstring_sql(column: str) -> str:
    # The SQL twin of core.hashing._field: strlen counts UTF-8 bytes, as Python's encode.
    return (f"CASE WHEN {column} IS NULL THEN '~' ELSE"
            f" strlen({column})::VARCHAR || ':' || {column} || ',' END")


_FIELDS = ("seq::VARCHAR", "ts_us::VARCHAR", "task_id", "actor", "kind", "prev_hash", "body")

# The SQL twins of core.hashing.journal_event_hash (v2) and journal_event_hash_v1: keep
# them in step. Events before journal_chain's v2 first_seq were written with v1.
_V2_SQL = (f"sha256(concat('{JOURNAL_HASH_TAG}', "
           + ", ".join(_netstring_sql(c) for c in _FIELDS) + "))")
_V1_SQL = ("sha256(concat_ws('|', seq::VARCHAR, ts_us::VARCHAR, coalesce(task_id, ''),"
           " actor, kind, prev_hash, body))")

_VERIFY_SQL = f"""
WITH e AS (
    SELECT seq, hash, prev_hash,
           lag(hash) OVER (ORDER BY seq) AS expected_prev,
           lag(seq) OVER (ORDER BY seq) AS prev_seq,
           CASE WHEN seq < $v2_from THEN {_V1_SQL} ELSE {_V2_SQL} END AS computed
    FROM events
)
SELECT seq,
       computed <> hash AS bad_hash,
       prev_hash <> coalesce(expected_prev, $genesis) AS bad_link,
       seq <> coalesce(prev_seq, 0) + 1 AS gap
FROM e
WHERE computed <> hash
   OR prev_hash <> coalesce(expected_prev, $genesis)
   OR seq <> coalesce(prev_seq, 0) + 1
ORDER BY seq
LIMIT 50
"""  # noqa: S608 (built from the constants above, no input)


def v2_first_seq(con: duckdb.DuckDBPyConnection) -> int:
    """The first event hashed with chain version 2 (1 in a home created with it)."""
    row = con.execute("SELECT first_seq FROM journal_chain WHERE version = 2").fetchone()
    # Without the row, every event is checked as v2: a deleted row shows as edits.
    return int(row[0]) if row is not None else 1


def verify_chain(con: duckdb.DuckDBPyConnection, home: Path) -> ChainReport:
    """Check every event's hash and link, and the tail against the witness."""
    violations: list[str] = []
    notes: list[str] = []
    v2_from = v2_first_seq(con)
    rows = con.execute(_VERIFY_SQL, {"genesis": GENESIS_HASH, "v2_from": v2_from}).fetchall()
    for seq, bad_hash, bad_link, gap in rows:
        if gap:
            violations.append(f"event {seq}: sequence gap (an event before it was deleted)")
        if bad_hash:
            violations.append(f"event {seq}: content does not match its hash (edited)")
        elif bad_link:
            violations.append(f"event {seq}: prev_hash does not match the event before it")
    count, head_seq = fetch_row(con, "SELECT count(*), coalesce(max(seq), 0) FROM events")
    head_hash = GENESIS_HASH
    if head_seq:
        head_hash = fetch_row(con, "SELECT hash FROM events WHERE seq = ?", [head_seq])[0]
    witness = read_witness(home)
    witness_seq: int | None = None
    if witness is not None:
        if "error" in witness:
            violations.append(str(witness["error"]))
        else:
            w_seq, w_hash = int(witness.get("seq", 0)), str(witness.get("hash", ""))
            if w_seq > head_seq:
                violations.append(
                    f"journal tail lost: the witness saw event {w_seq} committed but the "
                    f"database ends at {head_seq}")
            else:
                row = con.execute("SELECT hash FROM events WHERE seq = ?", [w_seq]).fetchone()
                if row is None or row[0] != w_hash:
                    violations.append(
                        f"event {w_seq}: hash differs from the witness (rewritten after commit)")
                else:
                    witness_seq = w_seq
    elif head_seq:
        violations.append(f"no witness file but the journal holds {head_seq} events")
    if witness_seq is not None and witness_seq < head_seq:
        # A commit whose witness write failed (or was cut short by a crash): the events
        # are there and chained, but a lost tail after event witness_seq would go unseen
        # until the next commit, which moves the witness to the head again.
        notes.append(
            f"the journal witness lags: it vouches for event {witness_seq}, the journal "
            f"ends at {head_seq} ({head_seq - witness_seq} event(s) not yet witnessed; a "
            "witness write failed or was interrupted after its commit); the next commit "
            "brings it up to date")
    return ChainReport(ok=not violations, events=int(count), head_seq=int(head_seq),
                       head_hash=str(head_hash), violations=tuple(violations),
                       witness_seq=witness_seq, v2_from_seq=v2_from, notes=tuple(notes))


def remove_stale_temp_files(home: Path) -> None:
    """Delete witness temp files left by a process killed mid-write.

    Only those of dead processes (the writer's pid is in the name): a live writer may be
    between writing its temp file and renaming it, without the store lock held here."""
    for path in home.glob(f".{WITNESS_NAME}.*.tmp"):
        pid = path.name.removeprefix(f".{WITNESS_NAME}.").split(".", 1)[0]
        if pid.isascii() and pid.isdigit() and _alive(int(pid)):
            continue
        with contextlib.suppress(OSError):
            os.unlink(path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True
