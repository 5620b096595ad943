"""The recall filters on real agent payloads (datasets/traces)."""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from osiris.core import outline as outlines
from osiris.core import query
from osiris.core import records as record_filters
from osiris.core.outline import Symbol
from osiris.core.query import QueryResult
from osiris.core.tokens import default_counter
from osiris.errors import InvalidInputError
from osiris.harness.importers.traces import load_trace
from tests.conftest import TRACES

COUNTER = default_counter()
CLAUDE = "claude-code__tielec-ai-workflow-agent"
CODEX_JSONL = TRACES / "codex-cli__tielec-ai-workflow-agent/issue-119/04_implementation/execute" \
    / "agent_log_raw.txt"


@functools.cache
def _output(trace: str, step: int) -> str:
    return load_trace(TRACES / trace).steps[step].output


def rollback_ts() -> str:
    """Claude Code ``Read`` of src/commands/rollback.ts (arrow-numbered lines)."""
    return _output(f"{CLAUDE}/issue-271/04_implementation/execute/agent_log_raw.txt", 4)


def analyzer_test_read_from_427() -> str:
    """A ``Read`` that starts at line 427 of a TypeScript test file."""
    return _output(f"{CLAUDE}/issue-127/06_testing/revise/agent_log_raw.txt", 5)


def jest_log() -> str:
    """``npm test`` output with one failing test."""
    return _output(f"{CLAUDE}/issue-127/06_testing/revise/agent_log_raw.txt", 73)


def readme_md() -> str:
    return _output(f"{CLAUDE}/issue-121/07_documentation/execute/agent_log_raw.txt", 3)


def metadata_json() -> str:
    return _output(f"{CLAUDE}/issue-18/04_implementation/execute/agent_log_raw.txt", 4)


def pytest_log() -> str:
    """A failing pytest run (mini-swe-agent, with its elision markers)."""
    return _output("mini-swe-agent__gruckion-fork/pytest-dev__pytest-5840.traj.json", 27)


def pylint_log() -> str:
    """``pylint --recursive=y``: hundreds of messages ending in ``(symbol)``."""
    return _output("mini-swe-agent__gruckion-fork/pylint-dev__pylint-6528.traj.json", 4)


def expand_modules_py() -> str:
    """``cat pylint/lint/expand_modules.py``."""
    return _output("mini-swe-agent__gruckion-fork/pylint-dev__pylint-6528.traj.json", 12)


def ls_recursive() -> str:
    """``ls -R`` of a repository: 220 KB, 14,855 lines."""
    return _output("codex-cli__tielec-ai-workflow-agent/issue-119/01_requirements/review/"
                   "agent_log_raw.txt", 1)


def checked(result: QueryResult, max_tokens: int) -> QueryResult:
    """Every answer keeps its budget and reports its own token count."""
    assert result.tokens == COUNTER.count(result.text) <= max_tokens
    assert result.truncated or result.next is None
    return result


def body(result: QueryResult) -> list[str]:
    """The payload rows of an answer (its closing note removed)."""
    rows = result.text.split("\n")
    return rows[:-1] if rows and rows[-1].startswith("… ") else rows


def follow(op: Callable[..., QueryResult], data: bytes, **args: Any) -> list[QueryResult]:
    """Call ``op`` and then every ``next`` it hands back, until the answer is complete."""
    pages = []
    while True:
        page = checked(op(data, counter=COUNTER, **args), args["max_tokens"])
        pages.append(page)
        if page.next is None:
            return pages
        assert len(pages) < 500
        following = dict(page.next)
        assert following.pop("op") in (op.__name__, "range")
        args = {**args, **following}


def payload_lines(text: str) -> list[str]:
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def reference_grep(text: str, pattern: str, context: int = 0, flags: int = 0) -> list[str]:
    """What ``grep -n -C context`` prints, written the obvious way."""
    lines = payload_lines(text)
    hits = {i for i, line in enumerate(lines, 1) if re.search(pattern, line, flags)}
    keep = sorted({j for i in hits for j in range(max(1, i - context),
                                                  min(len(lines), i + context) + 1)})
    rows: list[str] = []
    for j in keep:
        if context and rows and rows[-1] != "--" and j - 1 not in keep:
            rows.append("--")
        line = lines[j - 1]
        line = line if len(line) <= 400 else line[:400] + "…"
        rows.append(f"{j}{':' if j in hits else '-'}{line}")
    return rows


# --- grep ---------------------------------------------------------------------------------

def test_grep_numbers_matching_lines_of_a_pytest_log() -> None:
    log = pytest_log()
    result = checked(query.grep(log.encode(), r"^FAILED ", counter=COUNTER,
                                max_tokens=2000), 2000)
    assert body(result) == reference_grep(log, r"^FAILED ")
    assert result.matches == result.returned_lines == 2
    assert result.lines_total == len(payload_lines(log))
    assert not result.truncated and result.next is None
    assert all(row.split(":", 1)[1].startswith("FAILED testing/test_config.py::")
               for row in body(result))


def test_grep_context_lines_match_grep_dash_c() -> None:
    log = jest_log()
    result = checked(query.grep(log.encode(), "✕|●", counter=COUNTER, max_tokens=5000,
                                context=2), 5000)
    assert body(result) == reference_grep(log, "✕|●", context=2)
    assert result.matches == 2
    assert sum(1 for row in body(result) if re.match(r"\d+-", row)) == 8
    # Far-apart matches form separate groups, separated like grep does.
    spread = checked(query.grep(log.encode(), "console.log", counter=COUNTER,
                                max_tokens=20_000, context=1, n=3), 20_000)
    rows = body(spread)
    assert "--" in rows and spread.matches == 3 and spread.truncated
    assert rows == reference_grep(log, "console.log", 1)[:len(rows)]


def test_grep_without_context_has_no_separators() -> None:
    result = query.grep(pylint_log().encode(), r"E0401", counter=COUNTER, max_tokens=3000)
    assert "--" not in body(result)
    assert body(result) == reference_grep(pylint_log(), r"E0401")


def test_grep_ignore_case_folds_case() -> None:
    log = pytest_log().encode()
    exact = query.grep(log, "failed", counter=COUNTER, max_tokens=2000)
    folded = query.grep(log, "failed", counter=COUNTER, max_tokens=2000, ignore_case=True)
    assert exact.matches == 1  # only the summary line says "2 failed"
    assert folded.matches == 3  # and the two FAILED lines of the short summary
    assert body(folded) == reference_grep(pytest_log(), "failed", flags=re.IGNORECASE)


def test_grep_stops_at_n_and_continues_without_loss_or_overlap() -> None:
    text = ls_recursive()
    expected = [row for row in reference_grep(text, r"\.ts$", context=1) if row != "--"]
    pages = follow(query.grep, text.encode(), pattern=r"\.ts$", context=1, n=40,
                   max_tokens=20_000)
    assert len(pages) > 3
    assert all(p.truncated for p in pages[:-1]) and not pages[-1].truncated
    assert "continue with start=" in pages[0].text.split("\n")[-1]
    got = [row for page in pages for row in body(page) if row != "--"]
    assert got == expected
    assert sum(p.matches or 0 for p in pages) == sum(1 for r in expected if ":" in r[:8])


def test_grep_cut_by_max_tokens_continues_exactly() -> None:
    text = pylint_log()
    expected = [row for row in reference_grep(text, r"W\d{4}", context=2) if row != "--"]
    pages = follow(query.grep, text.encode(), pattern=r"W\d{4}", context=2, n=10_000,
                   max_tokens=300)
    assert len(pages) > 10
    assert all("(max_tokens)" in p.text.split("\n")[-1] for p in pages[:-1])
    got = [row for page in pages for row in body(page) if row != "--"]
    assert got == expected
    assert len({row.split(":")[0].split("-")[0] for row in got}) == len(got)


def test_grep_reports_no_match_and_empty_payload() -> None:
    result = query.grep(jest_log().encode(), "no such text anywhere", counter=COUNTER,
                        max_tokens=100)
    assert result.matches == 0 and result.text.startswith("no matches in lines 1–")
    assert not result.truncated
    empty = query.grep(b"", "x", counter=COUNTER, max_tokens=100)
    assert empty.lines_total == 0 and empty.matches == 0


def test_hostile_pattern_runs_in_linear_time() -> None:
    data = b"a" * 100_000 + b"!\n" + b"aaa\n"
    result = query.grep(data, r"(a+)+$", counter=COUNTER, max_tokens=200)
    assert result.matches == 1 and body(result) == ["2:aaa"]
    long_line = query.grep(data, "!", counter=COUNTER, max_tokens=500)
    # A long matching line is cut to a window around its match, so the match shows.
    assert body(long_line) == ["1:…" + "a" * 399 + "!"]


@pytest.mark.parametrize("pattern", ["(?=x)", r"(a)\1", "(?<=a)b", "(?!x)y"])
def test_look_around_and_back_references_are_refused(pattern: str) -> None:
    with pytest.raises(InvalidInputError, match="linear time"):
        query.grep(b"abc\n", pattern, counter=COUNTER, max_tokens=100)


@pytest.mark.parametrize(("pattern", "message"), [
    ("", "non-empty"), ("a" * 2001, "limit is 2000"), ("[", "does not compile"),
])
def test_bad_patterns_are_refused(pattern: str, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        query.grep(b"abc\n", pattern, counter=COUNTER, max_tokens=100)


@pytest.mark.parametrize("args", [{"n": 0}, {"context": -1}, {"start": 0}, {"start": 99},
                                  {"max_tokens": 10}, {"n": True}])
def test_grep_arguments_are_checked(args: dict[str, Any]) -> None:
    call: dict[str, Any] = {"max_tokens": 100, **args}
    with pytest.raises(InvalidInputError):
        query.grep(b"one\ntwo\n", "o", counter=COUNTER, **call)


def test_grep_scans_a_ten_megabyte_payload() -> None:
    log = pylint_log().encode() + b"\n"  # the captured output has no final newline
    copies = 10_000_000 // len(log) + 1
    data = log * copies + b"needle: the one line that says so\n" + log
    marker_line = len(payload_lines(pylint_log())) * copies + 1
    assert len(data) > 10_000_000
    result = checked(query.grep(data, "^needle:", counter=COUNTER, max_tokens=200), 200)
    assert body(result) == [f"{marker_line}:needle: the one line that says so"]
    first = query.grep(data, "E0401", counter=COUNTER, max_tokens=2000, n=5)
    assert first.matches == 5 and first.truncated and first.next is not None
    later = query.grep(data, "E0401", counter=COUNTER, max_tokens=2000, n=5,
                       start=marker_line)
    assert int(body(later)[0].split(":")[0]) > marker_line


def test_invalid_utf8_is_replaced_not_fatal() -> None:
    data = b"ok line\nbad \xff\xfe byte Error\n"
    result = query.grep(data, "Error", counter=COUNTER, max_tokens=100)
    assert body(result) == ["2:bad \ufffd\ufffd byte Error"]


# --- range, head, tail --------------------------------------------------------------------

def test_range_head_and_tail_number_lines() -> None:
    log = jest_log()
    lines = payload_lines(log)
    middle = checked(query.range_lines(log.encode(), start=10, end=14, counter=COUNTER,
                                       max_tokens=1000), 1000)
    assert body(middle) == [f"{i}:{lines[i - 1]}" for i in range(10, 15)]
    assert middle.returned_lines == 5 and middle.next is None
    first = query.head(log.encode(), n=None, counter=COUNTER, max_tokens=2000)
    assert body(first) == [f"{i}:{lines[i - 1]}" for i in range(1, 21)]
    last = query.tail(log.encode(), n=3, counter=COUNTER, max_tokens=1000)
    total = len(lines)
    assert body(last) == [f"{i}:{lines[i - 1]}" for i in range(total - 2, total + 1)]
    to_end = query.range_lines(log.encode(), start=total - 1, end=None, counter=COUNTER,
                               max_tokens=1000)
    assert to_end.returned_lines == 2
    beyond = query.range_lines(log.encode(), start=total, end=total + 50, counter=COUNTER,
                               max_tokens=1000)
    assert beyond.returned_lines == 1 and not beyond.truncated


@pytest.mark.parametrize(("start", "end", "message"), [
    (0, 5, "start=0"), (5, 4, "before start"), (10**6, None, "past the end"),
])
def test_range_errors_say_what_to_pass(start: int, end: int | None, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        query.range_lines(jest_log().encode(), start=start, end=end, counter=COUNTER,
                          max_tokens=100)
    with pytest.raises(InvalidInputError, match="empty"):
        query.range_lines(b"", start=1, end=None, counter=COUNTER, max_tokens=100)


def test_range_cut_by_max_tokens_continues_without_loss() -> None:
    text = ls_recursive()
    lines = payload_lines(text)
    pages = follow(query.range_lines, text.encode(), start=100, end=1100, max_tokens=400)
    assert len(pages) > 3
    assert pages[0].text.split("\n")[-1].startswith("… truncated at line ")
    got = [row for page in pages for row in body(page)]
    assert got == [f"{i}:{lines[i - 1]}" for i in range(100, 1101)]


def test_head_and_tail_cut_by_max_tokens() -> None:
    text = ls_recursive()
    lines = payload_lines(text)
    first = checked(query.head(text.encode(), n=500, counter=COUNTER, max_tokens=150), 150)
    assert first.truncated and first.next is not None
    assert first.next["op"] == "range" and first.next["end"] == 500
    assert body(first)[0] == f"1:{lines[0]}"
    last = checked(query.tail(text.encode(), n=500, counter=COUNTER, max_tokens=150), 150)
    total = len(lines)
    assert body(last)[-1] == f"{total}:{lines[-1]}"  # a tail keeps the end
    assert last.next == {"op": "range", "start": total - 499,
                         "end": int(body(last)[0].split(":")[0]) - 1}
    rest = follow(query.range_lines, text.encode(), start=last.next["start"],
                  end=last.next["end"], max_tokens=2000)
    rows = [row for page in rest for row in body(page)] + body(last)
    assert rows == [f"{i}:{lines[i - 1]}" for i in range(total - 499, total + 1)]


def test_one_line_longer_than_the_budget_is_cut_so_paging_advances() -> None:
    data = ("word " * 3000 + "\nsecond line\n").encode()
    result = checked(query.range_lines(data, start=1, end=None, counter=COUNTER,
                                       max_tokens=80), 80)
    assert result.truncated and result.next == {"op": "range", "start": 2, "end": 2}
    assert result.text.startswith("1:word word") and "cut to fit" in result.text


# --- outline ------------------------------------------------------------------------------

def test_outline_of_a_read_typescript_file_uses_the_arrow_numbers() -> None:
    source = rollback_ts()
    result = checked(query.outline(source.encode(), counter=COUNTER, max_tokens=2000,
                                   path="src/commands/rollback.ts"), 2000)
    numbered = {int(head): rest for head, _, rest in
                (line.partition("→") for line in source.split("\n")) if head.strip().isdigit()}
    symbols = outlines.outline_symbols(source, "typescript")
    assert [s.name for s in symbols][:3] == ["handleRollbackCommand", "loadWorkflowMetadata",
                                             "validateRollbackOptions"]
    assert all(s.name in numbered[s.line] and s.kind == "function" for s in symbols)
    assert body(result)[0] == "26: function handleRollbackCommand"
    assert result.returned_lines == len(symbols) == 10


def test_outline_of_a_partial_read_keeps_file_line_numbers() -> None:
    symbols = outlines.outline_symbols(analyzer_test_read_from_427(), "ts")
    assert symbols and all(s.line >= 427 for s in symbols)
    assert {s.kind for s in symbols} <= {"describe", "it", "test"}
    assert any(s.kind == "it" and s.depth > 0 for s in symbols)


def test_outline_of_typescript_classes_lists_methods() -> None:
    source = "\n".join([
        "export interface Options { force: boolean }",
        "export type Phase = 'planning' | 'design';",
        "export enum Mode { Auto, Manual }",
        "export class GitManager extends Base {",
        "  private readonly root: string;",
        "  constructor(root: string) {",
        "    super();",
        "    if (root) { this.root = root; }",
        "  }",
        "  public async commit(message: string): Promise<void> {",
        "    const inner = () => 1;",
        "  }",
        "  private handler = async (event: Event) => {",
        "  };",
        "}",
        "export const run = async (argv: string[]) => {",
        "  const helper = () => 2;",
        "};",
    ])
    kinds = [(s.kind, s.name, s.depth) for s in outlines.outline_symbols(source, "typescript")]
    assert kinds == [("interface", "Options", 0), ("type", "Phase", 0), ("enum", "Mode", 0),
                     ("class", "GitManager", 0), ("method", "constructor", 1),
                     ("method", "commit", 1), ("method", "handler", 1),
                     ("function", "run", 0)]


def test_outline_of_python_nests_by_indentation() -> None:
    source = expand_modules_py()
    assert outlines.detect_language(source) == "python"
    symbols = outlines.outline_symbols(source, "python")
    assert [(s.kind, s.name, s.depth) for s in symbols] == [
        ("def", "_modpath_from_file", 0), ("def", "_is_package_cb", 1),
        ("def", "get_python_path", 0), ("def", "_is_in_ignore_list_re", 0),
        ("def", "expand_modules", 0)]
    lines = payload_lines(source)
    assert all(f"def {s.name}(" in lines[s.line - 1] for s in symbols)
    text = query.outline(source.encode(), counter=COUNTER, max_tokens=500).text
    assert "20:   def _is_package_cb" in text.split("\n")


def test_outline_of_markdown_follows_heading_levels_outside_code() -> None:
    readme = readme_md()
    symbols = outlines.outline_symbols(readme, "markdown")
    assert symbols[0] == Symbol(1, "#", "AI Workflow Agent", 0)
    assert all(s.depth == len(s.kind) - 1 for s in symbols)
    # "# 依存関係のインストールとビルド" at line 48 is a shell comment inside a fence.
    assert 48 not in {s.line for s in symbols}
    text = query.outline(readme.encode(), counter=COUNTER, max_tokens=2000).text
    assert "5:   ## 特長" in text.split("\n")


def test_outline_of_json_gives_key_paths_and_their_lines() -> None:
    source = metadata_json()
    assert outlines.detect_language(source) == "json"
    symbols = outlines.outline_symbols(source, "json")
    by_path = {s.name: s for s in symbols}
    numbered = {int(head): rest for head, _, rest in
                (line.partition("→") for line in source.split("\n")) if head.strip().isdigit()}
    assert by_path["target_repository"].kind == "object"
    assert by_path["target_repository.path"].depth == 1
    assert by_path["phases.planning.status"].depth == 2
    assert all(s.depth < 3 for s in symbols)
    for s in symbols:
        assert f'"{s.name.rsplit(".", 1)[-1]}":' in numbered[s.line]


def test_outline_json_walks_arrays_and_keeps_first_occurrence() -> None:
    doc = json.dumps({"items": [{"id": 1, "tags": ["a"]}, {"id": 2, "extra": {"x": 1}}],
                      "name": "n"}, indent=2)
    names = [s.name for s in outlines.outline_symbols(doc, "json")]
    assert names == ["items", "items[].id", "items[].tags", "items[].extra",
                     "items[].extra.x", "name"]


def test_outline_of_go_and_rust() -> None:
    go = "\n".join(["package main", "", "type Server struct {", "\tAddr string", "}",
                    "type (", "\tID int", "\tStore interface {", "\t}", ")",
                    "func (s *Server) Start() error {", "\treturn nil", "}",
                    "func main() {", "}"])
    assert [(s.line, s.kind, s.name) for s in outlines.outline_symbols(go, "go")] == [
        (3, "struct", "Server"), (7, "type", "ID"), (8, "interface", "Store"),
        (11, "func", "(*Server).Start"), (14, "func", "main")]
    rust = "\n".join(["pub mod net {", "    pub struct Conn;", "    impl Conn {",
                      "        pub async fn open() {}", "    }", "}",
                      "macro_rules! log {", "}", "pub(crate) trait Store {}",
                      "impl<T: Display> fmt::Debug for Wrapper<T> {", "}", "enum E { A }"])
    assert [(s.kind, s.name, s.depth) for s in outlines.outline_symbols(rust, "rust")] == [
        ("mod", "net", 0), ("struct", "Conn", 1), ("impl", "Conn", 1), ("fn", "open", 2),
        ("macro_rules", "log", 0), ("trait", "Store", 0),
        ("impl", "fmt::Debug for Wrapper<T>", 0), ("enum", "E", 0)]


def test_outline_cut_by_max_tokens_continues_from_a_line() -> None:
    readme = readme_md()
    pages = follow(query.outline, readme.encode(), max_tokens=120)
    assert len(pages) > 2 and pages[0].next is not None
    assert pages[0].next["op"] == "outline" and pages[0].next["language"] == "markdown"
    got = [row for page in pages for row in body(page)]
    full = query.outline(readme.encode(), counter=COUNTER, max_tokens=20_000)
    assert got == body(full) and not full.truncated


def test_detect_language() -> None:
    assert outlines.detect_language("", "a/b/c.tsx") == "typescript"
    assert outlines.detect_language("", "x.MJS") == "javascript"
    assert outlines.detect_language("", "README.markdown") == "markdown"
    assert outlines.detect_language(rollback_ts()) == "typescript"
    assert outlines.detect_language(readme_md()) == "markdown"
    assert outlines.detect_language(metadata_json()) == "json"
    assert outlines.detect_language(ls_recursive()) is None


def test_unknown_language_names_the_supported_ones() -> None:
    with pytest.raises(InvalidInputError, match="python, javascript, typescript, go"):
        query.outline(b"x\n", counter=COUNTER, max_tokens=100, language="cobol")
    with pytest.raises(InvalidInputError, match="pass language="):
        query.outline(ls_recursive().encode(), counter=COUNTER, max_tokens=100)


# --- aggregate ----------------------------------------------------------------------------

def test_aggregate_pylint_messages_by_capture_group() -> None:
    log = pylint_log()
    pattern = r"\(([a-z]+(?:-[a-z]+)*)\)$"
    expected = Counter(m.group(1) for line in payload_lines(log)
                       if (m := re.search(pattern, line)))
    result = checked(record_filters.aggregate(log.encode(), pattern=pattern, counter=COUNTER,
                                     max_tokens=1000, n=5), 1000)
    ranked = sorted(expected.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    assert body(result)[:5] == [f"{count}\t{key}" for key, count in ranked]
    total = sum(expected.values())
    assert result.text.split("\n")[-1].startswith(f"total matching lines: {total}")
    assert result.matches == total and result.truncated and result.next is None


def test_aggregate_error_types_in_a_test_log() -> None:
    result = record_filters.aggregate(pytest_log().encode(), pattern=r"(\w+(?:Error|Exception))",
                             counter=COUNTER, max_tokens=500)
    assert body(result) == ["2\tImportError", "2\tRuntimeError",
                            "total matching lines: 4"]
    assert not result.truncated


def test_aggregate_without_group_uses_the_match_and_named_key_wins() -> None:
    log = pylint_log().encode()
    whole = record_filters.aggregate(log, pattern=r"[CWERF]\d{4}", counter=COUNTER, max_tokens=2000,
                            n=3)
    assert all(re.fullmatch(r"\d+\t[CWERF]\d{4}", row) for row in body(whole)[:3])
    named = record_filters.aggregate(log, pattern=r"(\w+)\.py:\d+:\d+: (?P<key>[CWERF])\d{4}",
                            counter=COUNTER, max_tokens=2000)
    assert {row.split("\t")[1] for row in body(named)[:-1]} <= set("CWERF")
    folded = record_filters.aggregate(log, pattern=r"(unused-import)", ignore_case=True,
                             counter=COUNTER, max_tokens=200)
    assert body(folded)[0].endswith("\tunused-import")


def test_aggregate_by_json_fields_counts_non_json_lines() -> None:
    raw = CODEX_JSONL.read_text("utf-8")
    records = [json.loads(line) for line in payload_lines(raw)]
    mixed = "\n".join(payload_lines(raw)[:60] + payload_lines(jest_log())[:5]
                      + payload_lines(raw)[60:])
    non_json = sum(1 for line in payload_lines(jest_log())[:5] if line.strip())
    result = checked(record_filters.aggregate(mixed.encode(), fields=["type"], counter=COUNTER,
                                     max_tokens=500), 500)
    expected = Counter(r["type"] for r in records)
    assert body(result)[:-1] == [f"{c}\t{k}" for k, c in
                                 sorted(expected.items(), key=lambda kv: (-kv[1], kv[0]))]
    assert body(result)[-1] == f"total matching lines: {len(records)}; " \
                               f"{non_json} non-JSON lines skipped"
    pairs = record_filters.aggregate(raw.encode(), fields=["type", "item.exit_code"],
                                     counter=COUNTER, max_tokens=500, n=3)
    top = Counter((r["type"], (r.get("item") or {}).get("exit_code", "(missing)"))
                  for r in records).most_common(1)[0]
    assert body(pairs)[0] == f"{top[1]}\t{top[0][0]}\tnull"
    assert "(missing)" in record_filters.aggregate(raw.encode(), fields=["item.type"],
                                          counter=COUNTER, max_tokens=500).text


@pytest.mark.parametrize("args", [{}, {"pattern": "x", "fields": ["a"]}, {"fields": "type"},
                                  {"fields": ["a..b"]}, {"pattern": "(?=x)"}])
def test_aggregate_arguments_are_checked(args: dict[str, Any]) -> None:
    with pytest.raises(InvalidInputError):
        record_filters.aggregate(b'{"a": 1}\n', counter=COUNTER, max_tokens=100, **args)


# --- jsonl --------------------------------------------------------------------------------

def _codex() -> tuple[bytes, list[dict[str, Any]]]:
    raw = CODEX_JSONL.read_bytes()
    return raw, [json.loads(line) for line in raw.decode("utf-8").splitlines()]


def _rows_as_records(result: QueryResult) -> list[tuple[int, Any]]:
    return [(int(n), json.loads(rest)) for n, _, rest in
            (row.partition(":") for row in body(result) if re.match(r"\d+:", row))]


def test_jsonl_where_dict_with_nested_fields_and_projection() -> None:
    raw, records = _codex()
    where = {"type": "item.completed", "item.type": "command_execution"}
    result = checked(record_filters.jsonl(raw, counter=COUNTER, max_tokens=5000, where=where,
                                 fields=["item.command", "item.exit_code"], n=500), 5000)
    expected = [(i, {"item.command": r["item"]["command"], "item.exit_code":
                     r["item"]["exit_code"]}) for i, r in enumerate(records, 1)
                if r["type"] == "item.completed" and r["item"]["type"] == "command_execution"]
    assert _rows_as_records(result) == expected
    assert result.matches == len(expected) and not result.truncated


def test_jsonl_condition_list() -> None:
    raw, records = _codex()
    failing = [{"field": "item.exit_code", "op": "gt", "value": 0},
               {"field": "item.command", "op": "regex", "value": "grep|npm"}]
    result = record_filters.jsonl(raw, counter=COUNTER, max_tokens=5000, where=failing,
                         fields=["item.exit_code"])
    assert _rows_as_records(result) == [
        (i, {"item.exit_code": r["item"]["exit_code"]}) for i, r in enumerate(records, 1)
        if (r.get("item") or {}).get("exit_code") and re.search("grep|npm", r["item"]["command"])]
    assert len(result.text.split("\n")) == 3
    usage = record_filters.jsonl(raw, counter=COUNTER, max_tokens=500, where=[
        {"field": "usage", "op": "exists"}, {"field": "usage.output_tokens", "op": "ge",
                                             "value": 15308}])
    assert [n for n, _ in _rows_as_records(usage)] == [len(records)]
    not_started = record_filters.jsonl(raw, counter=COUNTER, max_tokens=20_000, n=1000, where=[
        {"field": "type", "op": "ne", "value": "item.started"},
        {"field": "item", "op": "exists", "value": False}], fields=["type"])
    assert [r for _, r in _rows_as_records(not_started)] == [
        {"type": "thread.started"}, {"type": "turn.started"}, {"type": "turn.completed"}]
    contains = record_filters.jsonl(raw, counter=COUNTER, max_tokens=20_000, n=1000,
                                    fields=["type"],
                                    where=[{"field": "item.command", "op": "contains",
                                            "value": "npm run build"}])
    assert {r["type"] for _, r in _rows_as_records(contains)} == {"item.started",
                                                                  "item.completed"}


def test_jsonl_skips_and_counts_non_json_lines_and_pages_losslessly() -> None:
    raw, _ = _codex()
    lines = raw.decode("utf-8").splitlines()
    noise = payload_lines(pytest_log())[:4]
    mixed = "\n".join(lines[:30] + noise + lines[30:]).encode()
    where = {"type": "item.completed"}
    pages = follow(record_filters.jsonl, mixed, where=where, fields=["item.id"], n=7,
                   max_tokens=5000)
    assert len(pages) > 3
    got = [row for page in pages for row in body(page) if re.match(r"\d+:", row)]
    full = record_filters.jsonl(mixed, counter=COUNTER, max_tokens=20_000, where=where,
                       fields=["item.id"], n=1000)
    assert got == [row for row in body(full) if re.match(r"\d+:", row)]
    skipped = sum(1 for line in noise if line.strip())
    assert f"{skipped} non-JSON lines skipped" in full.text.split("\n")[-1]
    assert sum(int(m.group(1)) for page in pages
               if (m := re.search(r"(\d+) non-JSON lines skipped", page.text))) == skipped
    fields = ["item.id", "item.type", "item.status"]
    tight = follow(record_filters.jsonl, mixed, where=where, fields=fields, n=1000, max_tokens=80)
    assert len(tight) > 10
    assert [r for p in tight for r in _rows_as_records(p)] == _rows_as_records(
        record_filters.jsonl(mixed, counter=COUNTER, max_tokens=25_000, where=where, fields=fields,
                    n=1000))


def test_jsonl_reads_a_json_array_payload() -> None:
    _, records = _codex()
    array = json.dumps(records[:20], indent=1).encode()
    result = record_filters.jsonl(array, counter=COUNTER, max_tokens=5000,
                         where={"type": "item.started"}, fields=["item.id"])
    assert _rows_as_records(result) == [(i, {"item.id": r["item"]["id"]})
                                        for i, r in enumerate(records[:20], 1)
                                        if r["type"] == "item.started"]


def test_jsonl_equality_keeps_json_types_apart() -> None:
    data = b'{"ok": true}\n{"ok": 1}\n{"ok": "true"}\n'
    result = record_filters.jsonl(data, counter=COUNTER, max_tokens=100, where={"ok": True})
    assert body(result) == ['1:{"ok":true}']


@pytest.mark.parametrize(("where", "fields", "message"), [
    ("type=x", None, "where must be"), ([{"field": "a", "op": "like", "value": 1}], None,
                                        "unknown"),
    ([{"field": "a", "op": "gt"}], None, "needs a 'value'"),
    ([{"field": "a", "op": "gt", "value": [1]}], None, "numbers or strings"),
    ([{"op": "eq", "value": 1}], None, "each where condition"),
    ([{"field": "a", "op": "regex", "value": "(?=a)"}], None, "linear time"),
    (None, "item.id", "fields must be"), ({"": 1}, None, "dotted field path"),
])
def test_jsonl_arguments_are_checked(where: object, fields: object, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        record_filters.jsonl(b'{"a": 1}\n', counter=COUNTER, max_tokens=100, where=where,
                    fields=fields)


def test_a_long_line_shows_every_match_it_holds() -> None:
    line = "x" * 1000 + "NEEDLE1" + "y" * 2000 + "NEEDLE2" + "z" * 500
    result = query.grep(line.encode(), "NEEDLE1|NEEDLE2", counter=COUNTER, max_tokens=500)
    text = body(result)[0]
    assert "NEEDLE1" in text
    assert "NEEDLE2" in text
    assert len(text) < 420
