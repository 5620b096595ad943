"""DuckDB's progress bar never reaches stdout (it is the JSON-RPC channel, and the JSON
of ``osiris audit`` and ``osiris health``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from osiris.store.state import Store

# A query that runs for several seconds on one thread: a table scan (DuckDB reports
# progress for scans) with a chain of md5s per row. DuckDB draws its bar on stdout once
# a query passes 2 s, when the Python client believes the session interactive, which
# it does for `python -c` (no __main__.__file__): the same holds for an MCP server or a
# notebook started that way.
SLOW_READ = """
import json, sys
from pathlib import Path
from osiris.config import Settings
from osiris.store.state import Store
store = Store(Settings(home=Path(sys.argv[1])))
expr = "i::VARCHAR"
for _ in range(10):
    expr = f"md5({expr})"
with store.read() as con:
    con.execute("SET threads = 1")
    (count,) = con.execute(f"SELECT count(*) FROM big WHERE {expr} LIKE '%abc%'").fetchone()
store.close()
sys.stdout.write(json.dumps({"count": count}) + "\\n")
"""


@pytest.mark.slow
def test_a_slow_query_writes_nothing_to_stdout(store: Store, osiris_home: Path) -> None:
    with store.db.write() as con:
        con.execute("CREATE TABLE big AS SELECT i FROM range(3000000) t(i)")
    result = subprocess.run([sys.executable, "-c", SLOW_READ, str(osiris_home)],
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("\n") == 1, result.stdout[:300]
    assert set(json.loads(result.stdout)) == {"count"}


def test_every_connection_osiris_opens_has_the_progress_bar_off(
        store: Store, tmp_path: Path) -> None:
    from osiris.store.db import connect_duckdb

    setting = "SELECT current_setting('enable_progress_bar')"
    with store.db.write() as con:
        assert con.execute(setting).fetchone() == (False,)
    with store.read() as con:
        assert con.execute(setting).fetchone() == (False,)
    other = connect_duckdb(tmp_path / "other.duckdb")  # what the benchmark's tables use
    try:
        assert other.execute(setting).fetchone() == (False,)
    finally:
        other.close()
