"""Secret scrubbing: a planted corpus is caught 100%, in linear time."""

from __future__ import annotations

import tomllib

import pytest

from osiris.core.redaction import default_rules, scrub
from tests.conftest import REPO

CORPUS_PATH = REPO / "datasets" / "secrets" / "secret_corpus.toml"

CORPUS = tomllib.loads(CORPUS_PATH.read_text("utf-8"))


@pytest.mark.parametrize("case", CORPUS["secret"], ids=lambda c: c["name"])
def test_planted_secret_is_scrubbed(case: dict[str, str]) -> None:
    text = case["context"].replace("{SECRET}", case["value"])
    result = scrub(text)
    assert case["value"] not in result.text
    assert f"[REDACTED:{case['kind']}:" in result.text
    # The text around the secret survives.
    before, _, after = case["context"].partition("{SECRET}")
    assert result.text.startswith(before[:10])
    assert result.text.endswith(after[-10:] if after else "]")


def test_corpus_covers_every_rule() -> None:
    kinds = {case["kind"] for case in CORPUS["secret"]}
    assert {rule.kind for rule in default_rules().rules} <= kinds


@pytest.mark.parametrize("case", CORPUS["clean"], ids=lambda c: c["name"])
def test_clean_text_is_untouched(case: dict[str, str]) -> None:
    assert scrub(case["text"]).text == case["text"]


def test_same_secret_same_marker_and_positions() -> None:
    key = "AKIA" + "Q" * 16
    text = f"a={key} b={key}"
    result = scrub(text)
    assert result.redacted == 2
    assert result.findings[0].marker == result.findings[1].marker
    assert text[result.findings[0].start:result.findings[0].end] == key


@pytest.mark.parametrize("hostile", [
    "a" * 200_000 + "!",
    "password=" + "x" * 200_000,
    "-----BEGIN RSA PRIVATE KEY-----" + "A" * 500_000,
    "postgres://" + "u" * 100 + ":" + "p:" * 50_000 + "@",
    "eyJ" + "a." * 100_000,
])
def test_hostile_input_is_handled_linearly(hostile: str) -> None:
    # A backtracking engine would hang here (seconds per kilobyte); RE2 cannot.
    result = scrub(hostile)
    assert isinstance(result.text, str)


def test_private_key_without_end_marker_is_still_scrubbed() -> None:
    text = "key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAB"
    assert "b3BlbnNzaC1rZXkt" not in scrub(text).text


@pytest.mark.parametrize("case", CORPUS["secret"], ids=lambda c: c["name"])
def test_scrubbing_twice_changes_nothing(case: dict[str, str]) -> None:
    # Agent input is scrubbed where it enters the engine and payloads may pass the scrub
    # again: a marker must never be taken for a secret.
    once = scrub(case["context"].replace("{SECRET}", case["value"])).text
    again = scrub(once)
    assert again.text == once and again.redacted == 0
