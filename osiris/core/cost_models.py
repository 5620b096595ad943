"""Provider cost models (versioned data in ``data/cost_models.toml``)."""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Any

from osiris.errors import ConfigError

DEFAULT_COST_MODEL = "anthropic-5m"


@dataclass(frozen=True)
class CostModel:
    """How one provider bills prompt tokens."""

    name: str
    provider: str
    representative: str
    input_usd_per_mtok: float
    write_multiplier: float
    read_multiplier: float
    min_cacheable_tokens: int
    granularity_tokens: int
    ttl_s: int
    matching: str
    """``breakpoints`` (cache entries at marked boundaries and the prompt's end),
    ``any_prefix`` (any segment boundary, rounded down to the granularity) or ``none``."""
    version: str = ""
    output_usd_per_mtok: float = 0.0
    """The price of an output token (what the model writes: the same in every
    configuration of a replayed session but for extra calls, so part of what a user
    pays, not of what a configuration saves)."""

    def token_cost(self, tokens: int, multiplier: float = 1.0) -> float:
        """USD for ``tokens`` input tokens at ``multiplier`` × the input price."""
        return tokens * self.input_usd_per_mtok * multiplier / 1_000_000

    def output_cost(self, tokens: int) -> float:
        """USD for ``tokens`` output tokens."""
        return tokens * self.output_usd_per_mtok / 1_000_000


@dataclass(frozen=True)
class CostModels:
    """All cost models of one data version."""

    version: str
    models: tuple[CostModel, ...]

    def get(self, name: str) -> CostModel:
        """The model called ``name``; ConfigError listing the known names otherwise."""
        for model in self.models:
            if model.name == name:
                return model
        raise ConfigError(f"unknown cost model {name!r}: use one of "
                          + ", ".join(m.name for m in self.models))

    @property
    def names(self) -> tuple[str, ...]:
        """Names in file order."""
        return tuple(m.name for m in self.models)


def parse_cost_models(document: dict[str, Any]) -> CostModels:
    """Cost models from a parsed TOML document."""
    version = str(document["version"])
    models = tuple(CostModel(**{**raw, "version": version}) for raw in document["model"])
    return CostModels(version=version, models=models)


@functools.lru_cache(maxsize=1)
def default_cost_models() -> CostModels:
    """The cost models bundled with this version of OSIRIS."""
    text = resources.files("osiris.core").joinpath("data/cost_models.toml").read_text("utf-8")
    return parse_cost_models(tomllib.loads(text))
