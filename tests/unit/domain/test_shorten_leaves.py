"""A question gathering facts gets its leaves past the best few as excerpts, so more distinct
leaves fit its budget; an excerpt of a leaf of several messages recalls only the one shown."""

from __future__ import annotations

import functools
from datetime import UTC, datetime

import pytest
from tests.unit import fakes

from memstream.domain.excerpt import CUT, shorten_leaves
from memstream.domain.lexical import tokenize
from memstream.domain.models import Level, MemoryNode
from memstream.domain.ranking import RecalledMemory
from memstream.domain.recall_options import RecallOptions
from memstream.domain.tokens import count_tokens

AT = datetime(2023, 5, 8, 20, 0, tzinfo=UTC)
LONG = (
    "We spent the whole weekend at the lake with the kids and the dog. "
    "I finally tried kayaking and loved it. "
    "The weather was perfect and we grilled fish every evening by the water."
)


leaf = functools.partial(fakes.leaf, at=AT, speaker="Melanie")


def summary(node_id: str) -> MemoryNode:
    return MemoryNode(
        id=node_id, user_id="u1", level=Level.SESSION, t_start=AT, t_end=AT, text=LONG * 3
    )


def terms(question: str) -> frozenset[str]:
    return frozenset(tokenize(question))


def test_leaves_past_the_best_whole_ones_come_as_excerpts_within_the_cap() -> None:
    memories = [RecalledMemory(leaf(f"L{i}", LONG), 1.0 - i / 10) for i in range(4)]
    out = shorten_leaves(memories, terms("What sports has Melanie tried?"), 32, whole=2)
    by_id = {m.node.id: m for m in out}
    assert [m.node.id for m in out] == ["L0", "L1", "L2", "L3"]
    assert by_id["L0"].node.text == memories[0].node.text  # the two best stay whole
    assert by_id["L1"].node.text == memories[1].node.text
    for cut_id in ("L2", "L3"):
        cut = by_id[cut_id]
        assert count_tokens(cut.node.text) <= 32
        assert "kayaking" in cut.node.text and CUT in cut.node.text
        assert cut.full_tokens == count_tokens(LONG) + count_tokens('8 May 2023, Melanie: ""')


def test_the_whole_ones_are_the_best_by_score_not_by_place() -> None:
    memories = [RecalledMemory(leaf("weak", LONG), 0.1), RecalledMemory(leaf("strong", LONG), 0.9)]
    out = {m.node.id: m for m in shorten_leaves(memories, terms("kayaking"), 32, whole=1)}
    assert not out["strong"].excerpt and out["weak"].excerpt


def test_summaries_and_short_leaves_are_left_as_they_are() -> None:
    short = leaf("short", "I tried kayaking.")
    memories = [RecalledMemory(summary("S1"), 0.9), RecalledMemory(short, 0.5)]
    out = shorten_leaves(memories, terms("kayaking"), 32)
    assert [m.node for m in out] == [m.node for m in memories]


def test_a_cap_of_zero_leaves_every_leaf_whole() -> None:
    memories = [RecalledMemory(leaf("L0", LONG), 1.0)]
    assert shorten_leaves(memories, terms("kayaking"), 0) == memories


def test_a_cap_below_any_readable_excerpt_leaves_the_leaf_whole() -> None:
    memories = [RecalledMemory(leaf("L0", LONG), 1.0)]
    out = shorten_leaves(memories, terms("kayaking"), 10)
    assert out[0].node.text == memories[0].node.text and not out[0].excerpt


def test_an_excerpt_of_two_messages_recalls_only_the_message_it_shows() -> None:
    two = leaf("pair", "How was your weekend?", LONG)
    [cut] = shorten_leaves([RecalledMemory(two, 1.0)], terms("kayaking"), 32)
    assert "kayaking" in cut.node.text and "weekend?" not in cut.node.text
    assert cut.node.source_ids == ("pair-m1",)


@pytest.mark.parametrize("field", ["aggregate_leaf_tokens", "aggregate_whole_leaves"])
def test_negative_shortening_options_are_refused(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        RecallOptions(**{field: -1})  # type: ignore[arg-type]


def test_leaves_past_what_the_budget_can_hold_are_not_cut() -> None:
    memories = [RecalledMemory(leaf(f"L{i}", LONG), 1.0 - i / 100) for i in range(10)]
    out = shorten_leaves(memories, terms("kayaking"), 32, whole=0, budget=64)
    cut = [m for m in out if m.excerpt]
    assert [m.excerpt for m in out] == [True] * len(cut) + [False] * (10 - len(cut))
    spent = [count_tokens(m.node.text) for m in cut]
    # Cut best first until the cuts reach twice the budget, and not one further.
    assert sum(spent) >= 2 * 64 > sum(spent[:-1])
