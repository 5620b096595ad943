"""Peers driven through their real interfaces (installed by ``.ci/install-peers``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from osiris.core.tokens import default_counter
from osiris.harness.bench.tokens import run_matrix
from osiris.harness.replay.turns import RawSystem
from osiris.harness.replay.workloads import SweepWorkload, TraceWorkload
from osiris.harness.reports import report
from osiris.harness.systems import peers
from tests.conftest import REPO, TRACES

PEERS_PYTHON = REPO / ".tools" / "peers-venv" / "bin" / "python"


def _require_peers_venv() -> None:
    if PEERS_PYTHON.exists():
        return
    message = f"{PEERS_PYTHON} missing: run .ci/install-peers cw"
    if os.environ.get("TEST_REQUIRE_PEERS") == "1":
        pytest.fail(message)
    pytest.skip(message)


def test_contextweaver_end_to_end_on_the_quick_workload(tmp_path: Path) -> None:
    _require_peers_venv()
    ready, missing = peers.build_peers(REPO, tmp_path, ("contextweaver",))
    assert missing == []
    (peer,) = ready
    assert peer.version == "0.18.2"  # type: ignore[attr-defined]
    counter = default_counter()
    sessions = [*SweepWorkload(TRACES, counter, sizes=(200, 2_000)).sessions(),
                *TraceWorkload(TRACES, only=("swe-agent__test-repo",)).sessions()]
    rows = run_matrix(sessions, [RawSystem(), peer], counter=counter,
                      retrievals=("visible", "paging"))
    by = {(r["session"], r["system"], r["retrieval"]): r for r in rows}
    small = by[("sweep-200", "contextweaver", "visible")]
    large, paged = (by[("sweep-2000", "contextweaver", m)] for m in ("visible", "paging"))
    raw_large = by[("sweep-2000", "raw", "paging")]
    # Its tool definition is in its fixed cost, counted with the same encoding.
    assert small["fixed_overhead_tokens"] > 0
    # Large payloads are firewalled; contextweaver cannot search, so the needs cut away
    # are found with the client's own search (visible) or paged back with its tool_view
    # (paging), every call charged — here the pages cost more than the payloads saved.
    assert json.loads(large["modes"])["compressed"] >= 1
    assert json.loads(small["modes"]) == {"unchanged": 5}
    assert large["extra_calls"] > 0 and paged["extra_calls"] > 0
    assert paged["final_context_tokens"] > raw_large["final_context_tokens"]
    assert paged["overhead_tokens"] > paged["fixed_overhead_tokens"]
    assert large["needs_found"] == large["needs_total"] == paged["needs_found"] == 10
    assert {r["system"] for r in rows} == {"raw", "contextweaver"}
    assert all(r["encoding"] == counter.encoding_name for r in rows)


def test_a_peer_that_is_not_installed_is_reported_with_the_exact_error(
        tmp_path: Path) -> None:
    ready, missing = peers.build_peers(tmp_path / "not-a-clone", tmp_path / "work")
    assert ready == []
    assert [m.name for m in missing] == list(peers.PEER_NAMES)
    assert all("run .ci/install-peers" in m.error for m in missing)
    rows = peers.status_rows(ready, missing)
    assert {r["status"] for r in rows} == {"unavailable"}
    section = "\n".join(report.peers_section(rows))
    for m in missing:
        assert m.error.replace("|", "\\|") in section
    assert "measured |" not in section


def test_a_worker_that_dies_reports_its_own_error(tmp_path: Path) -> None:
    _require_peers_venv()
    with pytest.raises(RuntimeError, match=r"no-such-peer worker exited with code 1: .*KeyError"):
        peers.WorkerPeer("no-such-peer", PEERS_PYTHON, tmp_path)
