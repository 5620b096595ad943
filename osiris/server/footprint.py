"""What OSIRIS's tool definitions cost a client, counted with cl100k.

The measure is the model-facing shape of each listed tool — ``{name, description,
input_schema}`` — serialised as compact JSON. Clients differ in how they render tool
definitions into the prompt; the pretty-printed total is reported beside it.
"""

from __future__ import annotations

import json
from typing import Any

from osiris.core.operating_context import DOCTRINE
from osiris.core.tokens import default_counter
from osiris.server.definitions import model_facing

BUDGET_TOKENS = 800
SEED_TOKENS = 1_019


def footprint(dotted: bool = False) -> dict[str, Any]:
    """Per-tool and total tokens of the six tools, the dispatch tool and the doctrine."""
    counter = default_counter()
    tools = [{"name": d["name"],
              "tokens": counter.count(json.dumps(d, separators=(",", ":")))}
             for d in model_facing(dotted=dotted)]
    dispatch = model_facing(dispatch_only=True)[0]
    return {
        "encoding": counter.encoding_name,
        "measure": "compact JSON of {name, description, input_schema} per tool",
        "tools": tools,
        "total_tokens": sum(t["tokens"] for t in tools),
        "pretty_json_total_tokens": sum(counter.count(json.dumps(d))
                                        for d in model_facing(dotted=dotted)),
        "dispatch_only_tokens": counter.count(json.dumps(dispatch, separators=(",", ":"))),
        "instructions_tokens": counter.count(DOCTRINE),
        "instructions_chars": len(DOCTRINE),
        "budget_tokens": BUDGET_TOKENS,
        "seed_tokens": SEED_TOKENS,
    }
