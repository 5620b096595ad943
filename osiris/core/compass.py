"""The tool compass: which of the agent's tools fit the active plan step.

OSIRIS cannot hide other servers' tools; it can recommend. The agent reports the
tools it has (``observe(kind="contract")``): a JSON list of tool definitions, a
``{"tools": [...]}`` object, or bare names (descriptions of well-known client tools
fill in). Each tool is scored deterministically: text relevance of its name and
description to the step (term overlap weighted by rarity across the tool list) plus
the task's history with it (its success rate). Tools whose definitions are costly
are named with their token counts.
"""

from __future__ import annotations

import functools
import json
import math
import re
import tomllib
from collections import Counter
from dataclasses import dataclass
from importlib import resources
from typing import Any

from osiris.core.tokens import TokenCounter

_WORD = re.compile(r"[a-z][a-z0-9]{2,}")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_STOP = frozenset({"the", "and", "for", "with", "from", "this", "that", "your", "you", "are",
                   "use", "using", "into", "onto", "when", "then", "than", "its", "can",
                   "will", "all", "any", "one", "two", "get", "set", "tool", "tools"})
COSTLY_TOKENS = 400


@dataclass(frozen=True)
class ToolInfo:
    """A tool the agent has."""

    name: str
    description: str
    tokens: int


@dataclass(frozen=True)
class Recommendation:
    """A ranked tool."""

    name: str
    score: float
    why: str


@functools.lru_cache(maxsize=1)
def known_descriptions() -> dict[str, str]:
    """Descriptions of well-known client tools (bundled data)."""
    text = resources.files("osiris.core").joinpath("data/known_tools.toml").read_text("utf-8")
    return dict(tomllib.loads(text)["tools"])


def stem(word: str) -> str:
    """A crude English stem, enough to match 'tests' with 'test' and 'searching' with
    'search' (deterministic, no data files)."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("ing") and len(word) > 5:
        return word[:-3]
    if word.endswith("ed") and len(word) > 4:
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def terms(text: str) -> list[str]:
    """Stemmed lowercase content words (camelCase and snake_case split)."""
    spaced = _CAMEL.sub(" ", text).replace("_", " ").replace(".", " ").replace("-", " ")
    return [stem(w) for w in _WORD.findall(spaced.lower()) if w not in _STOP]


def parse_tool_list(text: str, counter: TokenCounter) -> list[ToolInfo]:
    """Tools from a reported contract (JSON definitions, names, or ``name: description``)."""
    try:
        data: Any = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        data = data.get("tools", [])
    items: list[Any] = data if isinstance(data, list) else [
        line for line in text.splitlines() if line.strip()]
    known = known_descriptions()
    tools: list[ToolInfo] = []
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            name = item["name"]
            description = str(item.get("description") or known.get(name, ""))
            definition = json.dumps(item, separators=(",", ":"))
        elif isinstance(item, str) and item.strip():
            name, _, rest = item.strip().partition(":")
            name = name.strip()
            description = rest.strip() or known.get(name, "")
            definition = json.dumps({"name": name, "description": description})
        else:
            continue
        tools.append(ToolInfo(name, description, counter.count(definition)))
    return tools


def rank(tools: list[ToolInfo], step: str, history: dict[str, tuple[int, int]],
         limit: int = 3) -> list[Recommendation]:
    """Tools ranked for ``step``; ``history`` maps a tool to (successes, attempts)."""
    if not tools:
        return []
    docs = {t.name: set(terms(t.name + " " + t.description)) for t in tools}
    frequency = Counter(term for words in docs.values() for term in words)
    query = set(terms(step))
    out = []
    for tool in tools:
        matched = sorted(query & docs[tool.name])
        relevance = sum(math.log(1 + len(tools) / frequency[t]) for t in matched)
        successes, attempts = history.get(tool.name, (0, 0))
        record = successes / attempts if attempts else 0.0
        score = round(relevance + 0.5 * record, 4)
        if score <= 0:
            continue
        why = f"matches {', '.join(matched[:4])}" if matched else "worked before"
        if attempts:
            why += f"; {successes}/{attempts} successful here"
        out.append(Recommendation(tool.name, score, why))
    out.sort(key=lambda r: (-r.score, r.name))
    return out[:limit]


def costly(tools: list[ToolInfo], threshold: int = COSTLY_TOKENS) -> list[dict[str, Any]]:
    """Tools whose definitions cost more than ``threshold`` tokens, most expensive first."""
    heavy = sorted((t for t in tools if t.tokens > threshold), key=lambda t: (-t.tokens, t.name))
    return [{"name": t.name, "tokens": t.tokens} for t in heavy]
