"""Pure ranking helpers: support merging, pruning, ordering, token fitting."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.fakes import BASE, node

from memstream.domain.models import Level
from memstream.domain.ranking import (
    RecalledMemory,
    Support,
    _seconds,
    fit_tokens,
    order,
    order_as_of,
    parent_support,
    prune,
)
from memstream.domain.tokens import count_tokens

WORDS = st.lists(
    st.sampled_from(["alpha", "beta", "gamma", "extraordinarily", "42", "!"]), max_size=30
)


def memory(i: int, score: float, text: str = "x", level: Level = Level.SEGMENT) -> RecalledMemory:
    t = BASE + timedelta(hours=i)
    return RecalledMemory(node("u", f"n{i}", level, t, t, None, text=text or "x"), score)


def test_parent_support_merges_children_and_skips_unsupported_ones() -> None:
    a = node("u", "a", Level.SEGMENT, BASE, BASE, "p")
    b = node("u", "b", Level.SEGMENT, BASE, BASE, "p")
    c = node("u", "c", Level.SEGMENT, BASE, BASE, "q")
    support = {"a": Support.of_leaf(0.4), "b": Support.of_leaf(0.7)}
    assert parent_support([a, b, c], support) == {"p": Support(0.7, 1.1, 2)}


def test_prune_keeps_the_best_and_breaks_ties_by_leaf_count() -> None:
    p = node("u", "p", Level.SESSION, BASE, BASE, None)
    q = node("u", "q", Level.SESSION, BASE, BASE, None)
    support = {"p": Support(0.5, 0.5, 1), "q": Support(0.5, 1.0, 2)}
    assert [m.node.id for m in prune([p, q], support, 1, "max")] == ["q"]
    assert prune([p, q], support, 0, "max") == []


def test_order_is_by_level_then_distance_to_the_query_time() -> None:
    memories = [memory(0, 0.1), memory(5, 0.9), memory(3, 0.5, level=Level.SESSION)]
    ordered = order(memories, BASE + timedelta(hours=6))
    assert [m.node.id for m in ordered] == ["n5", "n0", "n3"]


def test_as_of_a_past_time_what_was_said_by_its_end_comes_before_what_was_said_after() -> None:
    # Asked about hour 10 (the time named ends at hour 11): hour 12 lies nearest, but was
    # said after the time asked about, so hour 5 and hour 1 come first, nearest first.
    memories = [
        memory(12, 0.9),
        memory(1, 0.1),
        memory(5, 0.5),
        memory(2, 0.5, level=Level.SESSION),
    ]
    ordered = order_as_of(memories, BASE + timedelta(hours=10), BASE + timedelta(hours=11))
    assert [m.node.id for m in ordered] == ["n5", "n1", "n12", "n2"]
    # Without the split by the time's end it would be nearest first.
    assert [m.node.id for m in order(memories, BASE + timedelta(hours=10))][:2] == ["n12", "n5"]


@settings(max_examples=200, deadline=None)
@given(
    items=st.lists(
        st.tuples(st.floats(0, 1), WORDS.map(" ".join), st.sampled_from(list(Level))),
        max_size=25,
    ),
    budget=st.integers(0, 200),
    summary_share=st.floats(0, 1),
)
def test_fit_tokens_never_exceeds_and_leaves_out_only_what_no_longer_fits(
    items: list[tuple[float, str, Level]], budget: int, summary_share: float
) -> None:
    memories = [memory(i, score, text, level) for i, (score, text, level) in enumerate(items)]
    kept, tokens = fit_tokens(memories, budget, summary_share)
    assert tokens == sum(count_tokens(m.node.text) for m in kept) <= budget
    assert [m for m in memories if m in kept] == kept  # order kept
    for left_out in (m for m in memories if m not in kept):
        assert tokens + count_tokens(left_out.node.text) > budget


def test_leaves_go_first_beyond_the_summary_share() -> None:
    ten = " ".join(["word"] * 10)
    summaries = [memory(i, 0.9, ten, Level.SESSION) for i in range(3)]
    leaves = [memory(10 + i, 0.5 - i / 100, ten) for i in range(6)]
    budget = 3 * count_tokens(ten) + 2  # room for three memories
    kept, _ = fit_tokens([*summaries, *leaves], budget, summary_share=0.34)
    # One summary fits in its share; the leaves, though scored lower, take the rest.
    assert [m.node.id for m in kept] == ["n0", "n10", "n11"]
    # With the whole budget open to summaries, the best-scored memories win.
    kept, _ = fit_tokens([*summaries, *leaves], budget, summary_share=1.0)
    assert [m.node.level for m in kept] == [Level.SESSION] * 3


def test_summaries_take_what_the_leaves_leave() -> None:
    ten = " ".join(["word"] * 10)
    memories = [memory(0, 0.1, ten, Level.MONTH), memory(1, 0.9, ten)]
    kept, _ = fit_tokens(memories, 100, summary_share=0.0)
    assert len(kept) == 2


def test_seconds_tell_the_two_sides_of_a_clock_change_apart() -> None:
    """Equal wall times of one zone across a DST fold compare (and hash) equal, but are an
    hour apart: the cached epoch seconds must not hand one the other's value."""
    zone = ZoneInfo("America/New_York")
    first = datetime(2024, 11, 3, 1, 30, tzinfo=zone)
    second = first.replace(fold=1)
    assert first == second
    assert _seconds(first) == first.timestamp()
    assert _seconds(second) - _seconds(first) == 3600
