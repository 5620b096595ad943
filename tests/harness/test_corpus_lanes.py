"""How the benchmark's corpus workers share the sessions (no client needed)."""

from __future__ import annotations

from pathlib import Path

from osiris.harness.real_clients.corpus import CORPUS_CONFIGURATIONS, CorpusSession
from osiris.harness.real_clients.sessions import corpus_lanes


def _session(name: str) -> CorpusSession:
    return CorpusSession(Path(f"corpus/claude-code/{name}.jsonl"), "claude-code",
                         Path(f"{name}.tar.gz"))


def test_a_session_never_runs_beside_itself_and_the_lanes_are_the_same_every_run() -> None:
    """Two configurations of one session at once meet on the same localhost ports (a dev
    server one starts answers the other's health check): each session's configurations
    run on one worker, one after the other."""
    calls = {"big": 500, "mid": 250, "mid2": 240, "small": 80, "tiny": 70}
    jobs = [(_session(n), c) for n in calls for c in CORPUS_CONFIGURATIONS]
    lanes = corpus_lanes(jobs, 2, lambda e: calls[e.path.stem])
    assert sorted(map(str, (j for lane in lanes for j in lane))) == sorted(map(str, jobs))
    for lane in lanes:
        names = [e.name for e, _ in lane]
        for name in set(names):  # consecutive, in the configurations' order
            first = names.index(name)
            assert names[first:first + len(CORPUS_CONFIGURATIONS)] == [name] * 3
            assert [c for e, c in lane if e.name == name] == list(CORPUS_CONFIGURATIONS)
    in_lane = [{e.path.stem for e, _ in lane} for lane in lanes]
    assert not in_lane[0] & in_lane[1]
    # Heaviest first onto the lighter lane: the big session alone against the rest.
    assert in_lane == [{"big", "tiny"}, {"mid", "mid2", "small"}]
    assert corpus_lanes(list(reversed(jobs)), 2, lambda e: calls[e.path.stem])[0][0][0].name \
        == lanes[0][0][0].name
