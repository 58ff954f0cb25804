"""The extractor's two shortcuts read what trying every pattern everywhere reads: the
trigger index (a pattern is tried only on a sentence holding one of its trigger words) and
the clause heads (a pattern opening with one is tried only where one begins)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from unittest import mock

from hypothesis import example, given, settings
from hypothesis import strategies as st

from memstream.domain import fact_extraction
from memstream.domain.fact_patterns import PATTERNS
from memstream.domain.fact_triggers import TriggerIndex, trigger_index
from memstream.domain.models import SourceMessage

TRIGGER_WORDS = sorted({word for pattern in PATTERNS for word in pattern.triggers})

# Pieces of chat that make the patterns work: subjects, clause heads and joins, trigger
# words, the words between a verb and its value, values, and what ends a clause.
PIECES = [
    *("I", "I'm", "Im", "I've", "We", "we're", "My sister", "my brother Tom", "my sister, Ana,"),
    *("She", "he's", "Ana", "Tom's", "Mom", "Dr. Okafor", "Being", "Living", "Three weeks"),
    *("Yep, still", "Still", "Sadly,", "Since May,", "and", "but", "so", "now", "because"),
    *(",", ";", ":", " - ", " \u2014 ", "-", "just", "recently", "still", "no longer", "not"),
    *("in", "at", "for", "to", "a", "an", "the", "as", "with", "of", "into", "my", "our"),
    *("moved to", "live in", "work at", "am a", "is a", "'s a", "used to", "quit my job at"),
    *("Berlin", "Vila Madalena", "Google", "St Mary's", "nurse", "teacher", "hiking", "keto"),
    *("a dog named Rex", "the Pixel", "iPhone 12", "Yamaha", "guitar", "college", "Tomás"),
    *("my girlfriend's", "husband's", "boss's", "don't", "can't"),
    *(".", "!", "?", "if", "would", "anymore", "these days", "since", "for a year"),
    *TRIGGER_WORDS,
]
SENTENCES = st.lists(st.sampled_from(PIECES), min_size=1, max_size=14).map(" ".join)
AT = datetime(2024, 5, 1, tzinfo=UTC)


@contextmanager
def every_pattern_everywhere() -> Iterator[None]:
    """Extraction with neither shortcut: every pattern of a table tried on every sentence,
    at every position (an empty look-ahead begins everywhere)."""
    with (
        mock.patch.object(TriggerIndex, "candidates", lambda self, words: list(self.patterns)),
        mock.patch.object(fact_extraction, "_CLAUSE_HEAD", re.compile("")),
    ):
        yield


def said(text: str) -> list[SourceMessage]:
    return [SourceMessage("m1", "Maya", "user", text, AT)]


def test_each_trigger_word_alone_makes_the_patterns_it_triggers_candidates() -> None:
    index = trigger_index(PATTERNS)
    for word in TRIGGER_WORDS:
        assert index.candidates([word]) == [p for p in PATTERNS if word in p.triggers], word


@given(st.lists(st.sampled_from([*TRIGGER_WORDS, "the", "zebra", "is"]), max_size=12))
def test_a_pattern_is_a_candidate_exactly_when_the_words_hold_a_trigger_of_its(
    words: list[str],
) -> None:
    index = trigger_index(PATTERNS)
    expected = [p for p in PATTERNS if not p.triggers.isdisjoint(words)]
    assert index.candidates(words) == expected


@settings(max_examples=300)
@given(SENTENCES)
@example("I moved to Berlin - and my sister, Ana, is a nurse at St Mary's.")
@example("Sadly, we're - vegan now; so I work at Google")
@example("Berlin - I moved to Lisbon.")  # a head at a dash alone
@example("Ana \u2014 she is a nurse at St Mary's")
def test_matching_at_clause_heads_finds_what_finditer_finds(sentence: str) -> None:
    heads = [head.start() for head in fact_extraction._CLAUSE_HEAD.finditer(sentence)]
    for pattern in PATTERNS:
        if pattern.headed:
            at_heads = fact_extraction._matches_at(pattern.regex, sentence, heads)
            found = list(pattern.regex.finditer(sentence))
            assert [m.span() for m in at_heads] == [m.span() for m in found], pattern.regex
            assert [m.groupdict() for m in at_heads] == [m.groupdict() for m in found]


def test_every_headed_pattern_opens_with_the_clause_head() -> None:
    headed = [p for p in PATTERNS if p.headed]
    assert len(headed) > len(PATTERNS) // 2  # the shortcut serves most patterns
    assert all(p.regex.pattern.startswith(fact_extraction.HEAD) for p in headed)


@settings(max_examples=300)
@given(st.lists(SENTENCES, min_size=1, max_size=3).map(" ".join))
@example("Moved to Lisbon last year. She is a nurse at St Mary's - and I love hiking, chess")
@example("My brother Tom just moved to Berlin and started a job at Google.")
@example("Berlin - I moved to Lisbon.")
@example("My girlfriend's parents are coming.")  # a trigger word said as a possessive
def test_the_shortcuts_change_no_fact(text: str) -> None:
    quick = fact_extraction.extract_facts(said(text), user_id="u")
    with every_pattern_everywhere():
        assert fact_extraction.extract_facts(said(text), user_id="u") == quick


def test_the_plain_reading_is_what_the_comparison_runs() -> None:
    # Without this, a patch that failed to take would compare the shortcut with itself.
    with every_pattern_everywhere():
        index = trigger_index(PATTERNS[:3])
        assert index.candidates([]) == list(PATTERNS[:3])
        assert len(list(fact_extraction._CLAUSE_HEAD.finditer("ab"))) == 3
    text = "My brother Tom just moved to Berlin and started a job at Google."
    assert {f.attribute for f in fact_extraction.extract_facts(said(text), user_id="u")} >= {
        "lives_in",
        "works_at",
    }
