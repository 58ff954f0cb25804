"""A session's terms kept beside it read back as `term_set` of its text, under these rules."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memstream.adapters.redis.session_terms import SEPARATOR, decoded_terms, encoded_terms
from memstream.domain.lexical import LEXICON, term_set


@given(st.text(max_size=300))
def test_a_field_reads_back_the_term_set_of_the_text(text: str) -> None:
    field = encoded_terms(text)
    assert field is not None
    assert decoded_terms(field) == term_set(text)
    assert decoded_terms(field.encode()) == term_set(text)


def test_a_field_of_other_word_rules_reads_as_missing() -> None:
    field = encoded_terms("We drove to the coast for camping.")
    assert field is not None and field.startswith(LEXICON + SEPARATOR)
    older = "snowball-en" + field.removeprefix(LEXICON)
    assert decoded_terms(older) is None
    assert decoded_terms(LEXICON) == frozenset()  # a summary with no content word
