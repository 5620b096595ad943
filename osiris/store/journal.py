"""The event journal: append-only and hash-chained, with a witness outside the database.

Every event carries a sequence number, a time, the task id, the actor (the
caller's identity), a kind, a JSON body, the previous event's hash and its own
hash (:func:`osiris.core.hashing.journal_event_hash`). One chain spans the whole
home, so a deleted event anywhere breaks it.

DuckDB drops a torn WAL tail silently after a crash, and an attacker who edits
the last event can recompute its hash. Both are caught by the *witness*:
``journal.witness`` beside the database holds the sequence number and hash of the
last committed event. It is replaced atomically (temp file, fsync, rename) right
after each commit, while the writer still holds the store's lock, so it never runs
ahead of the database; it can only lag by the one commit a crash interrupted.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from osiris.core.hashing import GENESIS_HASH, canonical_json, journal_event_hash
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
    con.execute(
        "INSERT INTO events (seq, ts_us, task_id, actor, kind, body, prev_hash, hash) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [seq, ts_us, task_id, actor, kind, text, cursor.hash, digest],
    )
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


# The SQL twin of core.hashing.journal_event_hash: keep both in step.
_VERIFY_SQL = """
WITH e AS (
    SELECT seq, hash, prev_hash,
           lag(hash) OVER (ORDER BY seq) AS expected_prev,
           lag(seq) OVER (ORDER BY seq) AS prev_seq,
           sha256(concat_ws('|', seq::VARCHAR, ts_us::VARCHAR, coalesce(task_id, ''),
                            actor, kind, prev_hash, body)) AS computed
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
"""


def verify_chain(con: duckdb.DuckDBPyConnection, home: Path) -> ChainReport:
    """Check every event's hash and link, and the tail against the witness."""
    violations: list[str] = []
    rows = con.execute(_VERIFY_SQL, {"genesis": GENESIS_HASH}).fetchall()
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
    elif head_seq:
        violations.append(f"no witness file but the journal holds {head_seq} events")
    return ChainReport(ok=not violations, events=int(count), head_seq=int(head_seq),
                       head_hash=str(head_hash), violations=tuple(violations))


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
