"""The prompt-cache simulator against hand-computed bills for each cost model."""

from __future__ import annotations

import pytest

from osiris.core.cache_sim import Prompt, Segment, simulate
from osiris.core.cost_models import default_cost_models

MODELS = default_cost_models()
SYS = Segment("sys", 2000, breakpoint=True)
U1, U2, U3 = Segment("u1", 500), Segment("u2", 300), Segment("u3", 200)


def _bills(model: str, prompts: list[Prompt]) -> list[tuple[int, int, int]]:
    return [(t.uncached_tokens, t.cache_write_tokens, t.cache_read_tokens)
            for t in simulate(prompts, MODELS.get(model))]


def test_anthropic_5m_hit_expiry_and_change_in_the_middle() -> None:
    prompts = [Prompt(0, (SYS, U1)), Prompt(60, (SYS, U1, U2)),
               Prompt(361, (SYS, U1, U2, U3)),  # TTL (300 s from the hit at 60) expired
               Prompt(400, (SYS, Segment("u1-edited", 500), U2, U3))]
    turns = simulate(prompts, MODELS.get("anthropic-5m"))
    assert [(t.uncached_tokens, t.cache_write_tokens, t.cache_read_tokens) for t in turns] == [
        (0, 2500, 0), (0, 300, 2500), (0, 3000, 0), (0, 1000, 2000)]
    # 3 $/MTok; writes 1.25x, reads 0.1x.
    assert [round(t.cost_usd, 8) for t in turns] == [
        0.009375, 0.001875, 0.01125, 0.00435]


def test_anthropic_1h_keeps_the_cache_past_five_minutes() -> None:
    prompts = [Prompt(0, (SYS, U1)), Prompt(60, (SYS, U1, U2)), Prompt(361, (SYS, U1, U2, U3))]
    turns = simulate(prompts, MODELS.get("anthropic-1h"))
    assert [(t.cache_write_tokens, t.cache_read_tokens) for t in turns] == [
        (2500, 0), (300, 2500), (200, 2800)]
    assert round(turns[0].cost_usd, 8) == round(2500 * 2.0 * 3e-6, 8)
    assert round(turns[2].cost_usd, 8) == round((200 * 2.0 + 2800 * 0.1) * 3e-6, 8)


def test_below_the_minimum_prefix_nothing_is_cached() -> None:
    small = Segment("small", 800, breakpoint=True)
    for name in ("anthropic-5m", "anthropic-1h", "openai-auto"):
        assert _bills(name, [Prompt(0, (small,)), Prompt(1, (small,))]) == [
            (800, 0, 0), (800, 0, 0)]
    turns = simulate([Prompt(0, (small,))], MODELS.get("anthropic-5m"))
    assert round(turns[0].cost_usd, 8) == round(800 * 3e-6, 8)


def test_openai_caches_any_prefix_in_128_token_steps() -> None:
    sys_plain = Segment("sys", 2000)
    turns = simulate([Prompt(0, (sys_plain, U1)), Prompt(10, (sys_plain, U1, U2)),
                      Prompt(20, (sys_plain, Segment("other", 500)))],
                     MODELS.get("openai-auto"))
    # 2500 tokens: cached length 1024 + 128*11 = 2432; no write surcharge.
    assert (turns[0].uncached_tokens, turns[0].cache_write_tokens) == (68, 2432)
    assert round(turns[0].cost_usd, 10) == round(2500 * 1.25e-6, 10)
    # 2800 tokens: reads 2432, the next step ends at 2688.
    assert (turns[1].uncached_tokens, turns[1].cache_write_tokens,
            turns[1].cache_read_tokens) == (112, 256, 2432)
    assert round(turns[1].cost_usd, 10) == round((112 + 256 + 243.2) * 1.25e-6, 10)
    # A change after the system segment still hits its 1920-token prefix.
    assert turns[2].cache_read_tokens == 1920


def test_no_cache_bills_every_token_at_the_input_price() -> None:
    turns = simulate([Prompt(0, (SYS, U1)), Prompt(1, (SYS, U1))], MODELS.get("no-cache"))
    assert [(t.uncached_tokens, t.cache_read_tokens) for t in turns] == [(2500, 0), (2500, 0)]
    assert turns[1].cost_usd == pytest.approx(2500 * 3e-6)


def test_cost_models_are_versioned_data() -> None:
    assert MODELS.version
    assert set(MODELS.names) >= {"anthropic-5m", "anthropic-1h", "openai-auto", "no-cache"}
    for model in MODELS.models:
        assert model.version == MODELS.version
        assert model.input_usd_per_mtok > 0


def test_every_bundled_cost_model_prices_output_tokens() -> None:
    """What a user pays includes what the model writes (issue 37): each bundled model has
    its list output price, and a million output tokens cost exactly that."""
    for model in default_cost_models().models:
        assert model.output_usd_per_mtok > model.input_usd_per_mtok, model.name
        assert model.output_cost(1_000_000) == model.output_usd_per_mtok
