"""The README's first table (what a user pays) from the committed real-client rows: the
words say which way each figure goes, and the spread names the worst session."""

from __future__ import annotations

import re

import polars as pl

from osiris.harness.real_clients.configs import SESSION_CONFIGURATIONS
from osiris.harness.reports.bill import bill_tables, saved, source_of
from tests.conftest import REPO

ROWS = REPO / "reports" / "data" / "clients_sessions.parquet"


def test_saved_and_more_cannot_be_misread() -> None:
    assert saved(0.4354) == "43.54% saved"
    assert saved(-0.0819) == "8.19% more"
    assert saved(0.00001) == "same" and saved(None) == "—"


def test_the_first_table_bills_each_client_and_source_against_the_bare_client() -> None:
    rows = pl.read_parquet(ROWS).to_dicts()
    text = "\n".join(bill_tables(rows, SESSION_CONFIGURATIONS))
    # No bare signed percentage anywhere: every comparison is in words.
    assert not re.search(r"\| [+-]\d+\.\d+% \|", text)
    sections = 0
    for client, model in (("claude-code", "anthropic-5m"), ("codex", "openai-auto")):
        everything = [r for r in rows if r["client"] == client and r["status"] == "ok"]
        for source in sorted({source_of(r) for r in everything}):
            mine = [r for r in everything if source_of(r) == source]
            bare = sum(r[f"billed_cost_{model}"] for r in mine if r["configuration"] == "bare")
            osiris = sum(r[f"billed_cost_{model}"] for r in mine
                         if r["configuration"] == "osiris")
            section = text.split(f"**{client}, {source}** ")[1].split("\n\n**")[0]
            line = next(x for x in section.splitlines() if x.startswith("| osiris |"))
            cells = [c.strip() for c in line.strip("|").split("|")]
            assert cells[1] == f"${osiris:,.4f}"
            assert cells[2] == saved(1 - osiris / bare)
            # The worst session is named, and no session does worse than it.
            per_session = {r["session"]: r[f"billed_cost_{model}"] for r in mine
                           if r["configuration"] == "osiris"}
            base = {r["session"]: r[f"billed_cost_{model}"] for r in mine
                    if r["configuration"] == "bare"}
            worst = min(per_session, key=lambda s: 1 - per_session[s] / base[s])
            assert cells[4] == (f"{saved(1 - per_session[worst] / base[worst])} "
                                f"({'/'.join(worst.split('/')[1:3])})")
            sections += 1
    # Each client has the corpus and tielec apart, never pooled together.
    assert sections >= 4
    # Every cache model is there, the bare client's bill in dollars, the rest in words.
    assert "| codex | tielec-ai-workflow-agent | bare | $" in text
    assert re.search(r"\| claude-code \| [\w-]+ \| osiris \| \d+\.\d\d% (saved|more) \|", text)


def test_each_clients_corpus_is_reported_as_the_half_tuned_on_and_the_unseen_half(
        ) -> None:
    from osiris.harness.tuning import TUNING, UNSEEN

    rows = pl.read_parquet(ROWS).to_dicts()
    played = {r["session"] for r in rows if r["status"] == "ok"
              and str(r["session"]).startswith("corpus/")}
    assert not TUNING & UNSEEN and played == TUNING | UNSEEN
    text = "\n".join(bill_tables(rows, SESSION_CONFIGURATIONS))
    for client in ("claude-code", "codex"):
        for half, sessions in (("tuning", TUNING), ("unseen", UNSEEN)):
            mine = [s for s in sessions if s.startswith(f"corpus/{client}/")]
            assert mine, (client, half)
            assert f"**{client}, corpus, {half} half** ({len(mine)} session" in text
