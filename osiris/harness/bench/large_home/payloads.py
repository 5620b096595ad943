"""What the template sessions' tools return: sources, test runs, diffs, pages, logs
(step 1)."""

from __future__ import annotations

import random
from importlib import resources

from osiris.core.hashing import canonical_json

_MODULES = ("auth/session", "auth/tokens", "billing/invoice", "billing/tax", "api/routes",
            "api/schemas", "db/models", "ui/cart", "utils/retry", "workers/email",
            "search/index", "payments/stripe_client", "notifications/push", "core/config")
_WORDS = ("order", "invoice", "customer", "session", "token", "cart", "item", "price",
          "retry", "cache", "index", "payload", "tenant", "user", "event", "queue")

# A project's guard rails, each kind of rule once (shared with the governance tests).
_RULES = (resources.files("osiris.harness") / "data" / "invariants.toml").read_text("utf-8")

_HEAD = ("You are a coding agent working in a git repository. Today's date is {date}. "
         "Session 8f3c2a1b-9d4e-4f6a-b7c8-1234567890ab.\n"
         + "".join(f"Rule {i}: keep changes small, run the tests, explain what you did.\n"
                   for i in range(1, 41)))
_CONTRACT = {"tools": [{"name": n, "description": f"The {n} tool."} for n in
                       ("Bash", "Read", "Edit", "Write", "Grep", "Glob", "WebFetch")]}


def _py_source(rng: random.Random, module: str, lines: int) -> str:
    """A plausible Python module of about ``lines`` lines."""
    name = module.rsplit("/", 1)[-1]
    package = module.partition("/")[0]
    out = [f'"""{name.replace("_", " ").capitalize()}: part of the {package} package."""',
           "", "from __future__ import annotations", "", "import logging",
           "from dataclasses import dataclass", "", "log = logging.getLogger(__name__)", ""]
    n = 0
    while len(out) < lines:
        word, other = rng.choice(_WORDS), rng.choice(_WORDS)
        n += 1
        if n % 4 == 1:
            out += ["", "@dataclass", f"class {word.capitalize()}{other.capitalize()}{n}:",
                    f'    """A {word} of a {other}."""', "", f"    {word}_id: str",
                    f"    {other}_count: int = 0", ""]
        else:
            out += ["", f"def {word}_{other}_{n}(value: int, *, strict: bool = False) -> int:",
                    f'    """Compute the {word} for one {other}."""',
                    "    if strict and value < 0:",
                    f'        raise ValueError("negative {word}: %d" % value)',
                    f"    log.debug('{word}_{other}_{n} %s', value)",
                    f"    return value * {rng.randint(2, 97)} + {rng.randint(0, 9999)}"]
    return "\n".join(out[:lines]) + "\n"


def _grep_output(rng: random.Random, pattern: str, hits: int) -> str:
    return "".join(f"src/{rng.choice(_MODULES)}.py:{rng.randint(1, 900)}:    "
                   f"{pattern}({rng.choice(_WORDS)}_id, strict=True)\n" for _ in range(hits))


def _pytest_pass(rng: random.Random, module: str, tests: int) -> str:
    name = module.replace("/", "_")
    lines = [f"tests/test_{name}.py::test_{rng.choice(_WORDS)}_{i} PASSED "
             f"[{100 * (i + 1) // tests:3d}%]" for i in range(tests)]
    return ("============================= test session starts ==============================\n"
            "platform linux -- Python 3.11.7, pytest-8.3.2, pluggy-1.5.0\n"
            f"collected {tests} items\n\n" + "\n".join(lines)
            + f"\n\n============================== {tests} passed in "
              f"{rng.uniform(0.5, 30):.2f}s ==============================\n")


def _pytest_fail(rng: random.Random, module: str, tests: int, error: str) -> str:
    name = module.replace("/", "_")
    passed = "\n".join(f"tests/test_{name}.py::test_case_{i} PASSED" for i in range(tests - 1))
    return (f"collected {tests} items\n\n{passed}\n"
            f"tests/test_{name}.py::test_edge_case FAILED\n\n"
            "=================================== FAILURES ===================================\n"
            "________________________________ test_edge_case ________________________________\n"
            "\n    def test_edge_case():\n>       assert compute(3) == 42\n"
            f"E       {error}\n\ntests/test_{name}.py:{rng.randint(10, 300)}: {error}\n"
            "=========================== short test summary info ============================\n"
            f"FAILED tests/test_{name}.py::test_edge_case - {error}\n"
            f"========================= 1 failed, {tests - 1} passed in "
            f"{rng.uniform(0.5, 9):.2f}s =========================\n")


def _html_page(rng: random.Random) -> str:
    rows = "".join(f"<tr><td>{rng.choice(_WORDS)}</td><td>{rng.randint(1, 999)}</td></tr>\n"
                   for _ in range(60))
    return ("<!doctype html>\n<html><head><title>Release notes</title>\n"
            "<script>alert(1)</script>\n</head><body>\n<h1>Release notes</h1>\n"
            f"<p>Changes &amp; fixes.</p>\n<table>\n{rows}</table>\n"
            "<img src=x onerror=\"alert('xss')\">\n</body></html>\n")


def _env_dump(rng: random.Random) -> str:
    names = [f"APP_{w.upper()}_{i}={rng.randint(1, 10 ** 6)}" for i, w in enumerate(_WORDS)]
    return "\n".join([*names, "AWS_ACCESS_KEY_ID=AKIA" + "Z" * 16,
                      "GITHUB_TOKEN=ghp_" + "a1B2c3D4e5" * 4, "PATH=/usr/local/bin:/usr/bin"]
                     ) + "\n"


def _jsonl_log(rng: random.Random, records: int) -> str:
    levels = ("INFO", "INFO", "INFO", "WARN", "ERROR")
    return "".join(canonical_json({
        "level": rng.choice(levels), "ms": rng.randint(1, 4000),
        "msg": f"{rng.choice(_WORDS)} {rng.choice(('created', 'updated', 'failed'))}",
        "route": f"/api/{rng.choice(_WORDS)}s/{rng.randint(1, 99)}"}) + "\n"
        for _ in range(records))


def _git_diff(rng: random.Random, module: str) -> str:
    body = "".join(f"-    return value * {rng.randint(2, 9)}\n+    return value * "
                   f"{rng.randint(10, 99)}\n" for _ in range(rng.randint(2, 12)))
    return (f"diff --git a/src/{module}.py b/src/{module}.py\nindex 3f2a1b4..9c8d7e6 100644\n"
            f"--- a/src/{module}.py\n+++ b/src/{module}.py\n@@ -10,7 +10,7 @@\n{body}")
