"""Named, append-only migrations: older databases are upgraded, newer ones refused."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from osiris.errors import SchemaError
from osiris.store.db import Database
from osiris.store.migrations import MIGRATIONS, Migration, table_columns
from tests.conftest import run_cli


def test_fresh_database_gets_every_migration(osiris_home: Path) -> None:
    db = Database(osiris_home / "osiris.duckdb")
    assert db.migrate() == [m.name for m in MIGRATIONS]
    assert db.migrate() == []
    assert db.applied_migrations() == [m.name for m in MIGRATIONS]


def test_the_table_registry_is_the_migrated_schema(osiris_home: Path) -> None:
    db = Database(osiris_home / "osiris.duckdb")
    db.migrate()
    with db.write() as con:
        for (table,) in con.execute("SELECT table_name FROM information_schema.tables"
                                    " WHERE table_schema = 'main' AND table_name <>"
                                    " 'schema_migrations'").fetchall():  # the migrator's own
            live = [c for (c,) in con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ?"
                " ORDER BY ordinal_position", [table]).fetchall()]
            assert list(table_columns(table, with_sequences=True)) == live, table
    assert "id" in table_columns("ledger", with_sequences=True)
    assert "id" not in table_columns("ledger")  # a sequence fills it
    assert table_columns("events")[:2] == ("seq", "ts_us")
    with pytest.raises(KeyError):
        table_columns("no_such_table")


def test_older_database_is_upgraded_in_place_without_losing_rows(osiris_home: Path) -> None:
    osiris_home.mkdir(parents=True)
    old = Database(osiris_home / "osiris.duckdb", migrations=MIGRATIONS[:1])
    old.migrate()
    with old.write() as con:
        con.execute("INSERT INTO refs (ref, size_bytes, tokens, encoding, media_type,"
                    " created_us) VALUES (?, 1, 1, 'cl100k_base', 'text/plain', 0)",
                    ["mem://sha256:" + "a" * 64])
    result = run_cli("health")
    assert result.returncode == 0, result.stdout + result.stderr
    doc = json.loads(result.stdout)
    assert doc["schema"]["applied"] == [m.name for m in MIGRATIONS]
    assert doc["refs"]["count"] == 1
    con = duckdb.connect(str(osiris_home / "osiris.duckdb"), read_only=True)
    assert con.execute("SELECT redactions FROM refs").fetchone() == (0,)
    con.close()


def test_database_from_a_newer_osiris_is_refused(osiris_home: Path) -> None:
    osiris_home.mkdir(parents=True)
    newer = (*MIGRATIONS, Migration("9999_from_the_future", ("CREATE TABLE future (x INT)",)))
    Database(osiris_home / "osiris.duckdb", migrations=newer).migrate()
    with pytest.raises(SchemaError, match="newer or different OSIRIS"):
        Database(osiris_home / "osiris.duckdb").migrate()
    result = run_cli("health")
    assert result.returncode == 1
    assert "newer or different OSIRIS" in json.loads(result.stdout)["problems"][0]


def test_failed_migration_is_rolled_back(osiris_home: Path) -> None:
    osiris_home.mkdir(parents=True)
    broken = (*MIGRATIONS, Migration("0100_broken", ("CREATE TABLE ok_table (x INT)",
                                                       "THIS IS NOT SQL")))
    with pytest.raises(duckdb.ParserException):
        Database(osiris_home / "osiris.duckdb", migrations=broken).migrate()
    db = Database(osiris_home / "osiris.duckdb")
    assert db.applied_migrations() == [m.name for m in MIGRATIONS]
    with db.read() as con:
        tables = {r[0] for r in con.execute(
            "SELECT table_name FROM information_schema.tables").fetchall()}
    assert "ok_table" not in tables
