"""The default counter gives tiktoken's cl100k counts (the reference), faster."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from osiris.core.tokens import TiktokenCounter, default_counter
from tests.conftest import REPO

REFERENCE = TiktokenCounter()


@pytest.mark.slow  # every file of datasets/ (the corpus too): half a minute
def test_the_bundled_traces_and_workspaces_count_as_tiktoken_counts_them() -> None:
    files = [p for p in sorted((REPO / "datasets").rglob("*"))
             if p.is_file() and p.stat().st_size < 4_000_000]
    texts = [p.read_text("utf-8", errors="replace") for p in files]
    assert sum(map(len, texts)) > 1_000_000
    for path, text in zip(files, texts, strict=True):
        assert default_counter().count(text) == REFERENCE.count(text), path


@given(st.text(alphabet=st.one_of(st.characters(), st.sampled_from("\ud800\udc00\udfff")),
               max_size=300))  # lone surrogates too: they reach OSIRIS from JSON escapes
@settings(max_examples=1500, deadline=None)
def test_any_text_counts_as_tiktoken_counts_it(text: str) -> None:
    assert default_counter().count(text) == REFERENCE.count(text)


def test_special_token_text_is_ordinary_text() -> None:
    for text in ("<|endoftext|>", "a <|fim_prefix|> b", "<|endofprompt|>\udfff"):
        assert default_counter().count(text) == REFERENCE.count(text)


@pytest.mark.slow
def test_every_code_point_counts_as_tiktoken_counts_it() -> None:
    """Each code point beside ASCII (``":A"`` after it, where the split of a letter
    shows): the default counter agrees with tiktoken everywhere, the letters quicktok's
    older Unicode tables do not know included (osiris.core.tokens._NEWER_LETTERS)."""
    counter = default_counter()
    wrong = [hex(cp) for cp in range(0x20, 0x110000) if not 0xD800 <= cp <= 0xDFFF
             and counter.count(chr(cp) + ":A") != REFERENCE.count(chr(cp) + ":A")]
    assert wrong == []
