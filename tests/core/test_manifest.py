"""The sealed manifest: golden text, deterministic, never over 160 tokens."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from osiris.core import task_state as ts
from osiris.core.manifest import MAX_TOKENS, render_manifest, seal_of_manifest
from osiris.core.prefix import compute_zones
from osiris.core.task_state import Budget, TaskState
from osiris.core.tokens import default_counter

COUNTER = default_counter()


def _state(objective: str = "fix PowerShell profile bug") -> TaskState:
    state = TaskState(task_id="t_7c3f", objective=objective, created_us=0)
    return replace(state,
                   plan=ts.set_plan(state.plan, ["reproduce", "find the cause", "fix",
                                                  "add a test", "run the suite", "document",
                                                  "commit"], 3),
                   constraints=ts.append_pinned((), ["PowerShell 5.1 compatible", "no admin",
                                                     "keep $PROFILE path", "no new modules"]),
                   decisions=ts.append_pinned((), ["patch the profile in place",
                                                   "log to ~/profile.log"]),
                   invariants=4, refs=9)


def test_golden_manifest() -> None:
    manifest = render_manifest(_state(), COUNTER)
    seal = compute_zones(_state()).seal
    assert manifest == (
        'OSIRIS/1 task=t_7c3f obj="fix PowerShell profile bug" plan=3/7 step=4:"add a test"\n'
        "inv=4 files=0 refs=9 dec=2 con=4 budget=ok drift=none\n"
        f"SEAL=sha256:{seal}")
    assert seal == "dd605c98b2595fcdf588fb99"  # the first 96 bits of the stable-zone digest
    assert seal_of_manifest(manifest) == seal


def test_golden_manifest_with_budget_warning_and_long_objective() -> None:
    state = replace(_state("Investigate why the nightly integration pipeline fails only on "
                           "ARM runners after the dependency bump, find the root cause in the "
                           "native extension build, fix it without pinning the compiler, and "
                           "add a regression test that runs on both architectures, then "
                           "document the workaround for the release notes and tell the "
                           "platform team"),
                    budget=Budget(token_limit=1000, tokens_consumed=850))
    manifest = render_manifest(state, COUNTER)
    first, second, _ = manifest.split("\n")
    assert first.endswith('…" plan=3/7 step=4:"add a test"')
    assert "budget=warn" in second
    assert COUNTER.count(manifest) <= MAX_TOKENS


def test_about_120_tokens_for_a_typical_task() -> None:
    assert 50 <= COUNTER.count(render_manifest(_state(), COUNTER)) <= 130


@settings(max_examples=60, deadline=None)
@given(objective=st.text(min_size=1, max_size=3000).filter(lambda s: s.strip()),
       step=st.text(min_size=1, max_size=500).filter(lambda s: s.strip()))
def test_never_over_160_tokens_and_byte_identical(objective: str, step: str) -> None:
    state = TaskState(task_id="t_0123456789abcdef01234567", objective=objective.strip(),
                      created_us=0)
    state = replace(state, plan=ts.set_plan(state.plan, [step], 0))
    first = render_manifest(state, COUNTER)
    assert COUNTER.count(first) <= MAX_TOKENS
    assert render_manifest(TaskState.from_dict(state.as_dict()), COUNTER) == first


def test_one_enormous_word_is_cut() -> None:
    state = TaskState(task_id="t_1", objective="x" * 20_000, created_us=0)
    assert COUNTER.count(render_manifest(state, COUNTER)) <= MAX_TOKENS
