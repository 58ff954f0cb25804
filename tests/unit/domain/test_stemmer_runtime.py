"""The compiled Snowball stemmer (PyStemmer) is the one recall runs, and it stems as the
pure-Python one does, so a machine without it stores the same lexical vectors."""

from __future__ import annotations

import Stemmer
from hypothesis import given
from hypothesis import strategies as st
from snowballstemmer.english_stemmer import EnglishStemmer

from memstream.domain import lexical

PURE = EnglishStemmer()
WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz'", min_size=1, max_size=16)


def test_recall_stems_with_the_compiled_stemmer() -> None:
    assert isinstance(lexical._SNOWBALL, Stemmer.Stemmer)


@given(WORDS)
def test_the_compiled_and_the_pure_stemmer_agree(word: str) -> None:
    assert lexical.stem(word) == PURE.stemWord(word.removesuffix("'s"))
