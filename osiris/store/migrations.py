"""Named, append-only schema migrations of the state database.

Each migration is applied once, in order, inside its own transaction, and its
name is recorded in ``schema_migrations``. Never edit or reorder a released
migration: add a new one at the end. A database whose recorded names are not a
prefix of :data:`MIGRATIONS` was written by another OSIRIS and is refused.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass


@dataclass(frozen=True)
class Migration:
    """One schema step."""

    name: str
    statements: tuple[str, ...]


MIGRATIONS: tuple[Migration, ...] = (
    Migration("0001_initial", (
        # Tasks: one row per task; `state` is the whole TaskState as canonical JSON.
        """CREATE TABLE tasks (
            task_id VARCHAR PRIMARY KEY,
            created_us BIGINT NOT NULL,
            updated_us BIGINT NOT NULL,
            objective VARCHAR NOT NULL,
            project_id VARCHAR,
            agent_id VARCHAR,
            parent_task_id VARCHAR,
            status VARCHAR NOT NULL DEFAULT 'active',
            state JSON NOT NULL,
            state_hash VARCHAR NOT NULL
        )""",
        # The append-only, hash-chained event journal (see osiris.store.journal).
        """CREATE TABLE events (
            seq BIGINT PRIMARY KEY,
            ts_us BIGINT NOT NULL,
            task_id VARCHAR,
            actor VARCHAR NOT NULL,
            kind VARCHAR NOT NULL,
            body VARCHAR NOT NULL,
            prev_hash VARCHAR NOT NULL,
            hash VARCHAR NOT NULL
        )""",
        "CREATE INDEX events_task ON events (task_id)",
        # Metadata of content-addressed blobs; the bytes live under $OSIRIS_HOME/refs.
        """CREATE TABLE refs (
            ref VARCHAR PRIMARY KEY,
            size_bytes BIGINT NOT NULL,
            tokens BIGINT NOT NULL,
            encoding VARCHAR NOT NULL,
            media_type VARCHAR NOT NULL,
            created_us BIGINT NOT NULL
        )""",
        # Which task holds which ref (created it, or received it by handoff).
        """CREATE TABLE task_refs (
            task_id VARCHAR NOT NULL,
            ref VARCHAR NOT NULL,
            created_us BIGINT NOT NULL,
            via VARCHAR NOT NULL,
            PRIMARY KEY (task_id, ref)
        )""",
        "CREATE SEQUENCE ledger_id START 1",
        # One row per event that moves tokens or money.
        """CREATE TABLE ledger (
            id BIGINT PRIMARY KEY DEFAULT nextval('ledger_id'),
            ts_us BIGINT NOT NULL,
            task_id VARCHAR,
            event_seq BIGINT,
            kind VARCHAR NOT NULL,
            ref VARCHAR,
            tokens BIGINT NOT NULL DEFAULT 0,
            encoding VARCHAR NOT NULL,
            saved_claimed BIGINT NOT NULL DEFAULT 0,
            saved_proven BIGINT NOT NULL DEFAULT 0,
            overhead_tokens BIGINT NOT NULL DEFAULT 0,
            detail JSON
        )""",
        "CREATE INDEX ledger_task ON ledger (task_id)",
        # Typed, scoped, content-addressed memory entries.
        """CREATE TABLE memory (
            entry_id VARCHAR PRIMARY KEY,
            scope VARCHAR NOT NULL,
            scope_id VARCHAR NOT NULL,
            kind VARCHAR NOT NULL,
            key VARCHAR NOT NULL,
            value JSON NOT NULL,
            task_id VARCHAR,
            created_us BIGINT NOT NULL
        )""",
        """CREATE TABLE checkpoints (
            checkpoint_id VARCHAR PRIMARY KEY,
            task_id VARCHAR NOT NULL,
            created_us BIGINT NOT NULL,
            mode VARCHAR NOT NULL,
            state_ref VARCHAR NOT NULL,
            body JSON NOT NULL
        )""",
        """CREATE TABLE handoffs (
            handoff_id VARCHAR PRIMARY KEY,
            parent_task_id VARCHAR NOT NULL,
            child_task_id VARCHAR,
            status VARCHAR NOT NULL,
            contract JSON NOT NULL,
            result JSON,
            created_us BIGINT NOT NULL,
            updated_us BIGINT NOT NULL
        )""",
        """CREATE TABLE failures (
            task_id VARCHAR NOT NULL,
            signature VARCHAR NOT NULL,
            tool VARCHAR NOT NULL,
            last_args_hash VARCHAR NOT NULL,
            attempts INTEGER NOT NULL,
            first_us BIGINT NOT NULL,
            last_us BIGINT NOT NULL,
            resolved BOOLEAN NOT NULL DEFAULT false,
            lesson VARCHAR,
            PRIMARY KEY (task_id, signature)
        )""",
    )),
    Migration("0002_ref_provenance", (
        # Which redaction rules scrubbed the payload before it was hashed.
        "ALTER TABLE refs ADD COLUMN redaction_version VARCHAR",
        "ALTER TABLE refs ADD COLUMN redactions INTEGER DEFAULT 0",
    )),
    Migration("0003_costs_and_usage", (
        # Cost of each ledger row under the named cost model (versioned data).
        "ALTER TABLE ledger ADD COLUMN cost_model VARCHAR",
        "ALTER TABLE ledger ADD COLUMN cost_usd DOUBLE DEFAULT 0",
        # Tokens this event put into (+) or took out of (-) the agent's context.
        "ALTER TABLE ledger ADD COLUMN context_tokens BIGINT DEFAULT 0",
        "CREATE SEQUENCE usage_id START 1",
        # Provider-reported usage: ground truth, stored beside OSIRIS's estimate.
        """CREATE TABLE usage_reports (
            id BIGINT PRIMARY KEY DEFAULT nextval('usage_id'),
            ts_us BIGINT NOT NULL,
            task_id VARCHAR NOT NULL,
            event_seq BIGINT NOT NULL,
            provider VARCHAR NOT NULL,
            prompt_tokens BIGINT NOT NULL,
            cache_read_tokens BIGINT NOT NULL,
            cache_write_tokens BIGINT NOT NULL,
            output_tokens BIGINT NOT NULL,
            estimated_prompt_tokens BIGINT,
            raw JSON NOT NULL
        )""",
    )),
    Migration("0004_tool_results", (
        # The tool_results cache of every task (TaskState keeps only the newest entries):
        # cache_key = sha256(tool ‖ canonical args ‖ content digest).
        """CREATE TABLE tool_results (
            task_id VARCHAR NOT NULL,
            cache_key VARCHAR NOT NULL,
            tool VARCHAR NOT NULL,
            args_hash VARCHAR NOT NULL,
            ref VARCHAR NOT NULL,
            size_bytes BIGINT NOT NULL,
            tokens BIGINT NOT NULL,
            ttl_s INTEGER NOT NULL,
            created_us BIGINT NOT NULL,
            hits INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (task_id, cache_key)
        )""",
        "CREATE INDEX tool_results_args ON tool_results (task_id, tool, args_hash)",
    )),
    Migration("0005_governance", (
        # Every observed call, as LoopGuard needs it (fingerprints, errors, novelty).
        """CREATE TABLE calls (
            task_id VARCHAR NOT NULL,
            seq BIGINT NOT NULL,
            ts_us BIGINT NOT NULL,
            tool VARCHAR NOT NULL,
            args_hash VARCHAR NOT NULL,
            family VARCHAR NOT NULL,
            fingerprint VARCHAR NOT NULL,
            result_digest VARCHAR,
            ref VARCHAR,
            is_error BOOLEAN NOT NULL,
            error_signature VARCHAR,
            error_text VARCHAR,
            mutating BOOLEAN NOT NULL,
            novel BOOLEAN NOT NULL,
            targets VARCHAR NOT NULL DEFAULT '',
            PRIMARY KEY (task_id, seq)
        )""",
        # The last invariants file of each root that parsed: in force while a newer
        # version of the file is malformed, in every process.
        """CREATE TABLE rule_sets (
            path VARCHAR PRIMARY KEY,
            root VARCHAR NOT NULL,
            digest VARCHAR NOT NULL,
            text VARCHAR NOT NULL,
            loaded_us BIGINT NOT NULL
        )""",
        "ALTER TABLE failures ADD COLUMN error_text VARCHAR",
    )),
    Migration("0006_task_owner", (
        # The HTTP bearer identity that created a task: with tokens in force, no other
        # identity may use the task (stdio and in-process callers have no identity).
        "ALTER TABLE tasks ADD COLUMN owner VARCHAR",
    )),
    Migration("0007_call_paths", (
        # Full paths a call's arguments name (what a handoff's path checks look at).
        "ALTER TABLE calls ADD COLUMN paths VARCHAR DEFAULT ''",
    )),
    Migration("0008_client_sessions", (
        # A client's session (Claude Code's session_id, seen by its hooks) and the task
        # OSIRIS created for it on first sight: a session that never called plan is
        # still governed and measured.
        """CREATE TABLE client_sessions (
            session_id VARCHAR PRIMARY KEY,
            client VARCHAR NOT NULL,
            task_id VARCHAR NOT NULL,
            cwd VARCHAR,
            created_us BIGINT NOT NULL
        )""",
    )),
    Migration("0009_journal_hash_v2", (
        # Where each version of the journal's hash encoding starts (see
        # osiris.core.hashing): events before `first_seq` of version 2 were hashed with
        # the '|'-joined v1 formula and keep verifying with it; every later one is v2.
        """CREATE TABLE journal_chain (
            version INTEGER PRIMARY KEY,
            first_seq BIGINT NOT NULL,
            recorded_us BIGINT NOT NULL
        )""",
        "INSERT INTO journal_chain SELECT 2, coalesce(max(seq), 0) + 1,"
        " epoch_us(current_timestamp) FROM events",
    )),
    Migration("0010_owner_log", (
        # How far the store owner's log (osiris.store.owner_log) is applied: the owner
        # acknowledges a call once its log record is on disk and writes the rows here
        # later, in batches; whoever opens the store next applies the records after this.
        """CREATE TABLE owner_log (
            id INTEGER PRIMARY KEY,
            applied_lsn BIGINT NOT NULL
        )""",
        "INSERT INTO owner_log VALUES (1, 0)",
    )),
)


@functools.cache
def _schema() -> dict[str, tuple[tuple[str, bool], ...]]:
    """Every table's columns in order, each with whether a sequence fills it, as the
    migrations leave them (applied to an in-memory database, once per process)."""
    import duckdb

    con = duckdb.connect(":memory:")
    try:
        for migration in MIGRATIONS:
            for statement in migration.statements:
                con.execute(statement)
        tables: dict[str, list[tuple[str, bool]]] = {}
        for table, column, default in con.execute(
                "SELECT table_name, column_name, column_default FROM information_schema.columns"
                " ORDER BY table_name, ordinal_position").fetchall():
            tables.setdefault(table, []).append(
                (column, str(default or "").startswith("nextval(")))
    finally:
        con.close()
    return {table: tuple(columns) for table, columns in tables.items()}


def table_columns(table: str, *, with_sequences: bool = False) -> tuple[str, ...]:
    """The columns of ``table`` in schema order: the one registry of what the migrations
    create (columns a sequence fills left out unless ``with_sequences``). KeyError for a
    table the migrations do not create."""
    return tuple(name for name, sequenced in _schema()[table]
                 if with_sequences or not sequenced)
