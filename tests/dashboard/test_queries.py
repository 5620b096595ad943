"""The dashboard's event filters select by the journal's fields: each equals the same
rule evaluated in Python over every event of a real home."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from osiris.config import Settings
from osiris.dashboard.queries import FILTERS, Queries
from osiris.store.state import Store
from tests.dashboard.test_http import _populate

RULES: dict[str, Callable[[str, dict[str, Any]], bool]] = {
    "all": lambda kind, body: True,
    "drift": lambda kind, body: (body.get("drift") or {}).get("verdict", "none")
    not in (None, "none"),
    "verdicts": lambda kind, body: kind == "precheck" and (
        body.get("verdict") != "allow"
        or str((body.get("sources") or [""])[0]).startswith("loopguard")),
    "loopguard": lambda kind, body: kind.startswith("observe.") and bool(body.get("loop")),
}


def test_every_filter_is_its_rule_over_the_whole_journal(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _populate(home, tasks=3)
    store = Store(Settings(home=home))
    try:
        queries = Queries(store)
        with store.read() as con:
            journal = con.execute("SELECT seq, kind, body FROM events ORDER BY seq DESC"
                                  ).fetchall()
        assert set(FILTERS) == set(RULES)
        for name, rule in RULES.items():
            expected = [seq for seq, kind, body in journal if rule(kind, json.loads(body))]
            shown = [row["seq"] for row in queries.events(kind=name, limit=500).rows]
            assert shown == expected, name
            assert expected, f"the home has no {name} event: the test would prove nothing"
            if name != "all":
                assert len(expected) < len(journal), name
    finally:
        store.close()
