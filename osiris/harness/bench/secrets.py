"""How the secret scrubber behaves: findings and throughput on real agent sessions
(their outputs and the arguments of their calls), recall on the planted corpus, and
where a secret in each agent-supplied field of the engine ends up."""

from __future__ import annotations

import json
import re
import time
import tomllib
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, cast

from osiris.config import Settings
from osiris.contracts.handoff import HandoffAccepted, HandoffCreated
from osiris.contracts.plan import PlanStart
from osiris.core.hashing import canonical_json
from osiris.core.redaction import default_rules, scrub
from osiris.engine import Engine
from osiris.harness.importers.traces import find_traces, load_trace

TIMED_PASSES = 5
"""Warm passes over the traces after the first; the fastest gives the throughput."""


def scan_traces(traces_dir: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Scrub every tool output of every trace; return finding rows and a summary."""
    texts: list[tuple[str, Any, str]] = []  # (trace, step, field) and the text
    scanned: list[str] = []
    outputs = args_chars = 0
    for path in find_traces(traces_dir):
        trace = load_trace(path)
        rel = str(path.relative_to(traces_dir))
        for step in trace.steps:
            outputs += 1
            # The call's arguments are agent input too: the engine scrubs them on entry.
            args = canonical_json(step.args)
            args_chars += len(args)
            texts += [(rel, step, "output"), (rel, step, "args")]
            scanned += [step.output, args]
    # The findings come from a first pass, the throughput from the best of the passes
    # after it. RE2 builds its automata lazily, on the text it scans, and the rules compile
    # on first use: a first pass cost 4 times the next (0.11 s against 0.03 s), a cost an
    # owner pays once and a full run had already paid in earlier stages, so its figure was
    # neither cold nor warm. The best of several: on this shared 2-core machine one pass
    # took 0.03-0.08 s as other work came and went. The rules are passed explicitly: the
    # engine's cache of short texts would turn the later passes into look-ups.
    rules = default_rules()
    rows: list[dict[str, Any]] = []
    for (rel, step, field_name), text in zip(texts, scanned, strict=True):
        for finding in scrub(text, rules).findings:
            context = text[max(0, finding.start - 40):finding.start]
            rows.append({"trace": rel, "step": step.i, "tool": step.tool,
                         "field": field_name, "rule_id": finding.rule_id,
                         "kind": finding.kind,
                         "context_before": context.replace("\n", " ")[-40:],
                         "secret_chars": finding.end - finding.start})
    passes = []
    for _ in range(TIMED_PASSES):
        elapsed = 0.0
        for text in scanned:
            started = time.perf_counter()
            scrub(text, rules)
            elapsed += time.perf_counter() - started
        passes.append(elapsed)
    elapsed = min(passes)
    chars = sum(len(text) for text in scanned)
    summary = {"rules_version": rules.version, "outputs": outputs, "chars": chars,
               "args_chars": args_chars,
               "findings": len(rows), "scrub_s": elapsed,
               "mb_per_s": (chars / 1e6) / elapsed if elapsed else 0.0,
               "by_rule": dict(Counter(r["rule_id"] for r in rows))}
    return rows, summary


def corpus_recall(corpus_path: Path) -> list[dict[str, Any]]:
    """Each planted secret and clean look-alike of the corpus, and what the scrubber did."""
    corpus = tomllib.loads(corpus_path.read_text("utf-8"))
    rows = []
    for case in corpus["secret"]:
        result = scrub(case["context"].replace("{SECRET}", case["value"]))
        caught = case["value"] not in result.text and \
            f"[REDACTED:{case['kind']}:" in result.text
        rows.append({"case": case["name"], "expected": case["kind"], "kind": "secret",
                     "ok": caught, "rules": ",".join(f.rule_id for f in result.findings)})
    for case in corpus["clean"]:
        result = scrub(case["text"])
        rows.append({"case": case["name"], "expected": "untouched", "kind": "clean",
                     "ok": result.text == case["text"],
                     "rules": ",".join(f.rule_id for f in result.findings)})
    return rows


_PLAIN = re.compile(r"[A-Za-z0-9_.+/=:-]+")

# Each agent-supplied field, exercised through the engine facade with its own planted
# secret (a value the rules catch on its own, so every field is tested alike).
_Op = Callable[[Engine, dict[str, str], str], Mapping[str, Any]]


def _field_ops() -> list[tuple[str, _Op]]:
    def start(field_name: str) -> _Op:
        def op(e: Engine, ids: dict[str, str], secret: str) -> Mapping[str, Any]:
            values: dict[str, Any] = {"objective": "rotate keys", "steps": ["a"],
                                      "constraints": [], "decisions": [], "agent_id": "a"}
            values[field_name] = [secret] if isinstance(values[field_name], list) else \
                f"x {secret}"
            answer = cast(PlanStart, e.plan("start", **values))
            ids.setdefault("task", answer["task_id"])
            return answer
        return op

    def update(field_name: str) -> _Op:
        def op(e: Engine, ids: dict[str, str], secret: str) -> Mapping[str, Any]:
            values: dict[str, Any] = {field_name: [f"note {secret}"]}
            return e.plan("update", task_id=ids["task"], **values)
        return op

    def handoff_contract(e: Engine, ids: dict[str, str], s: str) -> Mapping[str, Any]:
        answer = cast(HandoffCreated, e.handoff("create", task_id=ids["task"], contract={
            "objective": f"check {s}", "constraints": [f"not {s}"]}))
        ids["handoff"] = answer["handoff_id"]
        ids["child"] = cast(HandoffAccepted, e.handoff(
            "accept", handoff_id=answer["handoff_id"]))["task_id"]
        return answer

    return [
        ("plan objective", start("objective")), ("plan steps", start("steps")),
        ("plan constraints", start("constraints")), ("plan decisions", start("decisions")),
        ("agent id", start("agent_id")),
        ("appended constraint", update("constraints")),
        ("appended decision", update("decisions")),
        ("memory entry", lambda e, ids, s: e.plan(
            "memory", task_id=ids["task"],
            memory=[{"kind": "fact", "key": f"k {s}", "value": {"v": s}}])),
        ("precheck tool name", lambda e, ids, s: e.precheck(ids["task"], f"mcp__x__ {s}")),
        ("precheck arguments", lambda e, ids, s: e.precheck(
            ids["task"], "Bash", args={"command": f"deploy {s}"}, path=f"/srv/{s}")),
        ("observe tool name", lambda e, ids, s: e.observe(
            ids["task"], "action", tool=f"tool {s}")),
        ("call arguments", lambda e, ids, s: e.observe(
            ids["task"], "result", tool="Bash", args={"command": f"echo {s}"},
            result="ok")),
        ("provider usage", lambda e, ids, s: e.observe(
            ids["task"], "action", tool="x", usage={"input_tokens": 10, "note": s})),
        ("payload", lambda e, ids, s: e.observe(
            ids["task"], "result", tool="cat", result=f"key {s}\n" * 200)),
        ("handoff contract", handoff_contract),
        ("handoff result", lambda e, ids, s: e.handoff(
            "complete", handoff_id=ids["handoff"], task_id=ids["child"],
            result={"summary": f"found {s}"})),
    ]


def _stored_text(engine: Engine) -> str:
    parts = []
    with engine.store.read() as con:
        tables = [t for (t,) in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'"
        ).fetchall()]
        for table in tables:
            rows = con.execute(f'SELECT * FROM "{table}"').fetchall()  # noqa: S608 - catalog
            parts.append(json.dumps(rows, default=str, ensure_ascii=False))
    parts += [p.read_bytes().decode("utf-8", "replace")
              for p in engine.store.refs.root.rglob("*") if p.is_file()]
    return "\n".join(parts)


def field_check(corpus_path: Path, home: Path) -> list[dict[str, Any]]:
    """Plant a secret in every agent-supplied field through the engine facade; report
    whether it came back in an answer or was stored anywhere (tables, journal, blobs)."""
    corpus = tomllib.loads(corpus_path.read_text("utf-8"))
    # Values the rules catch on their own, in characters that JSON never escapes (so a
    # stored copy is found by plain substring search).
    standalone = [c for c in corpus["secret"] if scrub(c["value"]).text != c["value"]
                  and _PLAIN.fullmatch(c["value"])]
    ops = _field_ops()
    rows: list[dict[str, Any]] = []
    ids: dict[str, str] = {}
    with Engine(Settings(home=home)) as engine:
        answers = []
        for index, (field_name, op) in enumerate(ops):
            case = standalone[index % len(standalone)]
            answers.append(json.dumps(op(engine, ids, case["value"]), default=str,
                                      ensure_ascii=False))
            rows.append({"field": field_name, "secret_kind": case["kind"],
                         "secret": case["value"]})
        stored = _stored_text(engine)
    for row, answer in zip(rows, answers, strict=True):
        secret = row.pop("secret")
        row["in_answer"] = secret in answer
        row["in_store"] = secret in stored
    return rows


def render(summary: dict[str, Any], rows: list[dict[str, Any]],
           corpus: list[dict[str, Any]] | None = None,
           fields: list[dict[str, Any]] | None = None) -> str:
    """Markdown of the scan, the corpus recall and the field check."""
    lines = [
        "# Secret scrubbing",
        "",
        "## On the real traces",
        "",
        f"Rules version `{summary['rules_version']}`; every tool output of the "
        f"{summary['outputs']} steps in `datasets/traces/`, and the arguments of every call "
        f"({summary['chars']:,} characters in all, {summary.get('args_chars', 0):,} of them "
        "arguments), was scrubbed as the engine scrubs agent input.",
        "",
        f"- findings: **{summary['findings']}**",
        f"- throughput: {summary['mb_per_s']:.1f} MB/s (total {summary['scrub_s']:.2f} s, "
        "one core, RE2 with keyword pre-filters; the fastest of "
        f"{TIMED_PASSES} passes after a first one, which compiles the rules and builds RE2's "
        "automata)",
        "",
        "These sessions are public (MIT) and contain no real credentials, so every finding "
        "here is a false positive.",
        "",
    ]
    if rows:
        lines += ["| trace | step | tool | field | rule | text before the match |",
                  "|---|---|---|---|---|---|"]
        for r in rows:
            before = r["context_before"].replace("|", "\\|")
            lines.append(f"| {r['trace']} | {r['step']} | {r['tool']} | {r.get('field', '')} "
                         f"| {r['rule_id']} | `{before}` |")
        lines.append("")
    if corpus:
        secrets = [r for r in corpus if r["kind"] == "secret"]
        clean = [r for r in corpus if r["kind"] == "clean"]
        lines += [
            "## The planted corpus",
            "",
            f"`datasets/secrets/secret_corpus.toml`: {sum(r['ok'] for r in secrets)} of "
            f"{len(secrets)} planted secrets caught with the right kind, "
            f"{sum(r['ok'] for r in clean)} of {len(clean)} clean look-alikes left untouched. "
            "The corpus was written alongside the rules, so it measures that each rule does "
            "what it was written for, not recall on secrets nobody anticipated.",
            "",
            "| case | expected | caught by | ok |", "|---|---|---|---|",
        ]
        lines += [f"| {r['case']} | {r['expected']} | {r['rules'] or '—'} | "
                  f"{'yes' if r['ok'] else '**no**'} |" for r in corpus]
        lines.append("")
    if fields:
        leaks = [r for r in fields if r["in_answer"] or r["in_store"]]
        lines += [
            "## Secrets in agent-supplied fields",
            "",
            "A planted secret in each field an agent can fill, sent through the real engine "
            "facade; then every answer of that call, every table of the database (journal, "
            "ledger, tasks, memory, handoffs, calls …) and every blob was searched for it. "
            f"Leaks: **{len(leaks)}** of {len(fields)} fields.",
            "",
            "| field | planted kind | in the answer | stored anywhere |", "|---|---|---|---|",
        ]
        lines += [f"| {r['field']} | {r['secret_kind']} | "
                  f"{'**yes**' if r['in_answer'] else 'no'} | "
                  f"{'**yes**' if r['in_store'] else 'no'} |" for r in fields]
        lines.append("")
    lines += [
        "History: rules version `2026.11.30-1` flagged 3 outputs of the Claude Code trace "
        "issue-121 (placeholders `\"sk-code...\"` and a shell reference `\"$CODEX_API_KEY\"` "
        "in quoted `*_API_KEY=` assignments). Version `2026.11.30-2` treats `...` and `$` in a "
        "generic assignment's value as placeholders. That change was made on this corpus, so "
        "the figure above is not an independent estimate of the false-positive rate. Version "
        "`2026.12.01-1` adds empty-user and `@`-in-password URLs, `Authorization` headers and "
        "command-line `-u user:password` / `--password=`, and lets prefixed tokens follow an "
        "underscore (`mcp__vault__ghp_…`); until then the engine scrubbed only payloads, so "
        "every field of the table above was stored as sent. Version `2026.12.03-1` adds "
        "unquoted YAML values (`password: X`), names that end in `_KEY` (`SECRET_KEY = "
        "\"…\"`), XML elements (`<password>X</password>`), `mysql -pX`, `sshpass -p X` and "
        "Databricks `dapi…` tokens, and runs the quoted assignment rule on `privateKey` and "
        "`private-key` (its keyword filter knew only `private_key`); a review had found such "
        "secrets in refs, the ledger and the WAL. A reference to a secret "
        "(`os.environ[\"API_KEY\"]`, `${VAR}`) is not one and stays.",
        "",
    ]
    return "\n".join(lines)
