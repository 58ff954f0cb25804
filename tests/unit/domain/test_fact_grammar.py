"""`hypothetical` finds what searching `HYPOTHETICAL` finds, on any text: an ASCII sentence
is passed over only when it cannot hold a match."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from memstream.domain.fact_grammar import _HYPOTHETICAL_WORDS, HYPOTHETICAL, hypothetical

PIECES = [
    *_HYPOTHETICAL_WORDS,
    *(word.upper() for word in _HYPOTHETICAL_WORDS),
    *("stopped ", "quit ", "Going To", "iff", "life", "wanted", "couldn't", "planned"),
    # Letters a case-insensitive search folds onto ASCII ones: long s, Kelvin sign, dotted I.
    *("\u017f", "\u212a", "\u0130", "\u0131", "wi\u017fh", "\u0130f", "\u00e9"),
    *" .,'-_1",
]
TEXT = st.lists(st.sampled_from(PIECES), max_size=12).map("".join)


@given(TEXT)
@example("I want a dog")
@example("stopped going to the gym")
@example("Wi\u017fh me luck")  # not ASCII: searched
@example("A gift for my wife")  # "if" inside words: searched, no match
def test_hypothetical_is_the_search_s(text: str) -> None:
    quick, searched = hypothetical(text), HYPOTHETICAL.search(text)
    assert (quick and quick.span()) == (searched and searched.span())


def test_a_sentence_without_the_words_holds_no_match() -> None:
    assert hypothetical("I moved to Berlin last year.") is None
    assert hypothetical("If we move, we move.") is not None
    assert hypothetical("I'd WANT one") is not None
