"""A leaf longer than recall's budget comes as an excerpt around what matched the query."""

from __future__ import annotations

import functools
from datetime import UTC, datetime

from tests.unit import fakes

from memstream.domain.excerpt import (
    CUT,
    EXCERPT_SHARE,
    MIN_EXCERPT_TOKENS,
    excerpt,
    excerpt_long_leaves,
    omitted_leaves,
)
from memstream.domain.lexical import tokenize
from memstream.domain.models import Level, MemoryNode
from memstream.domain.ranking import RecalledMemory
from memstream.domain.tokens import count_tokens

AT = datetime(2024, 10, 19, 9, 30, tzinfo=UTC)
FILLER = (
    "Today I spent hours sorting out the garage, moving boxes of old magazines and "
    "winter clothes to the attic while the radio played. "
)
BIKE = "My bike lock combination is 3907."


leaf = functools.partial(fakes.leaf, at=AT)


def terms(question: str) -> frozenset[str]:
    return frozenset(tokenize(question))


def test_the_excerpt_holds_the_sentence_that_matched_with_date_and_speaker() -> None:
    long = leaf("L1-a", FILLER * 18 + BIKE)
    cut = excerpt(long, terms("What is my bike lock combination?"), 120)
    assert cut is not None
    assert cut.text.startswith('19 October 2024, Dana: "' + CUT)
    assert cut.text.endswith(BIKE + '"')
    assert count_tokens(cut.text) <= 120
    assert cut.id == long.id and cut.source_ids == long.source_ids


def test_the_window_grows_around_a_match_in_the_middle_on_both_sides() -> None:
    long = leaf("L1-a", FILLER * 10 + BIKE + " " + FILLER * 10)
    cut = excerpt(long, terms("bike lock combination"), 150)
    assert cut is not None
    said = cut.text.split(': "', 1)[1]
    assert said.startswith(CUT) and said.endswith(CUT + '"')
    assert BIKE in said
    before, after = said.split(BIKE)
    assert len(before) > 100 and len(after) > 100
    assert count_tokens(cut.text) <= 150


def test_without_a_matching_term_the_excerpt_opens_the_message() -> None:
    emoji = leaf("L1-a", "🚲🔒🎉" * 5_000)
    cut = excerpt(emoji, terms("What did I say about the weekend?"), 100)
    assert cut is not None
    assert cut.text.startswith('19 October 2024, Dana: "🚲🔒🎉')
    assert cut.text.endswith(CUT + '"')
    assert count_tokens(cut.text) <= 100


def test_emoji_are_terms_an_excerpt_can_aim_at() -> None:
    text = "🎉" * 3_000 + "🚲" + "🎉" * 3_000
    cut = excerpt(leaf("L1-a", text), terms("🚲"), 80)
    assert cut is not None and "🚲" in cut.text


def test_a_budget_too_small_for_any_passage_gives_no_excerpt() -> None:
    assert excerpt(leaf("L1-a", FILLER * 20), terms("garage"), MIN_EXCERPT_TOKENS - 1) is None


def test_only_leaves_longer_than_the_budget_are_cut_and_they_carry_their_size() -> None:
    long = leaf("L1-long", FILLER * 18 + BIKE)
    short = leaf("L1-short", "I bought a new bike lock.")
    summary = MemoryNode(
        id="L2", user_id="u1", level=Level.SESSION, t_start=AT, t_end=AT, text=FILLER * 30
    )
    memories = [RecalledMemory(n, 1.0) for n in (long, short, summary)]
    out = excerpt_long_leaves(memories, terms("bike lock combination"), 300)
    assert [m.full_tokens for m in out] == [count_tokens(long.text), None, None]
    assert out[0].node.text.endswith(BIKE + '"')
    assert count_tokens(out[0].node.text) <= 300 * EXCERPT_SHARE
    assert out[1:] == memories[1:]


def test_omitted_counts_the_relevant_leaves_the_answer_lacks() -> None:
    a, b, c = (leaf(i, "x") for i in ("a", "b", "c"))
    summary = MemoryNode(id="s", user_id="u1", level=Level.DAY, t_start=AT, t_end=AT, text="y")
    candidates = [RecalledMemory(n, 1.0) for n in (a, b, c, summary)]
    assert omitted_leaves(candidates, candidates[:1]) == 2
    assert omitted_leaves(candidates, candidates) == 0
