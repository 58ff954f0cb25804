"""The lexical channel: content-word tokens, stable term ids, saturating BM25 weights."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from memstream.domain.lexical import (
    BM25_K1,
    STOPWORDS,
    document_weights,
    query_weights,
    term_id,
    term_set,
    tokenize,
)


def test_tokenize_keeps_stemmed_content_words_in_order() -> None:
    assert tokenize("I was at the park with my dogs, hiking!") == ["park", "dog", "hike"]
    assert tokenize("Dogs") == tokenize("dog")


def test_inflections_of_a_word_share_one_token() -> None:
    # Snowball stems, which need not be words ("stori", "creat").
    for token, forms in (
        ("love", ("love", "loves", "loved", "loving")),
        ("run", ("run", "runs", "running")),
        ("bake", ("bake", "bakes", "baked", "baking")),
        ("paint", ("paint", "paints", "painted", "painting")),
        ("stori", ("story", "stories")),
        ("box", ("box", "boxes")),
        ("creat", ("create", "created", "creating")),
        ("carolin", ("Caroline", "Caroline's")),
    ):
        assert {tuple(tokenize(f)) for f in forms} == {(token,)}, forms


@settings(max_examples=200)
@given(
    st.lists(st.sampled_from(sorted(STOPWORDS)), max_size=12),
    st.sampled_from([" ", ", ", "! ", "\n"]),
)
def test_tokenize_drops_stopwords(words: list[str], separator: str) -> None:
    assert tokenize(separator.join(words)) == []
    assert tokenize(separator.join(w.upper() for w in words)) == []


def test_term_set_holds_the_distinct_tokens() -> None:
    text = "Ana hiked, then hiking again with the hikers"
    assert term_set(text) == frozenset(tokenize(text))


def test_term_ids_are_stable() -> None:
    # crc32 values, the same on every run and machine; Qdrant stores them as sparse indices.
    assert [term_id(t) for t in ("park", "dog", "hike")] == [1141341491, 19675517, 587323364]


@settings(max_examples=200)
@given(st.text())
def test_term_ids_fit_in_31_bits(token: str) -> None:
    assert 0 <= term_id(token) < 2**31


@settings(max_examples=200)
@given(st.text())
def test_document_weights_are_positive_and_bounded(text: str) -> None:
    weights = document_weights(text)
    assert set(weights) == {term_id(t) for t in tokenize(text)}
    assert all(0 < w < BM25_K1 + 1 for w in weights.values())


def test_document_weights_saturate_with_term_frequency() -> None:
    # Same document length throughout, so only the frequency of "dog" changes.
    length = 20
    weights = []
    for tf in range(1, length):
        text = " ".join(["dog"] * tf + [f"w{i}" for i in range(length - tf)])
        weights.append(document_weights(text)[term_id("dog")])
    gains = [b - a for a, b in pairwise(weights)]
    assert all(g > 0 for g in gains)
    assert all(later < earlier for earlier, later in pairwise(gains))
    assert weights[-1] < BM25_K1 + 1


def test_empty_or_stopword_text_has_no_weights() -> None:
    assert document_weights("") == {}
    assert document_weights("and the of") == {}


def test_query_weights_give_each_distinct_term_one_unit() -> None:
    assert query_weights(tokenize("dog dogs park")) == {term_id("dog"): 1.0, term_id("park"): 1.0}
