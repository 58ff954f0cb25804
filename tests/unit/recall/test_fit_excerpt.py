"""The shipped fit returns a leaf longer than the whole budget as an excerpt, beside the
memories that fit whole, and never spends more than the budget."""

from __future__ import annotations

from datetime import UTC, datetime

from tests.unit.fakes import leaf

from memstream.domain.query import parse_query
from memstream.domain.ranking import RecalledMemory
from memstream.domain.tokens import count_tokens
from memstream.recall.stages import fit_in_place_of_leaves

AT = datetime(2024, 10, 19, 9, 30, tzinfo=UTC)
BIKE = "My bike lock combination is 3907."
LONG = "I tidied the shed and sorted the tools into labelled boxes for the winter. " * 40 + BIKE


def test_a_leaf_longer_than_the_budget_comes_as_an_excerpt_beside_the_others() -> None:
    query = parse_query("What is my bike lock combination?", AT)
    memories = [
        RecalledMemory(leaf("long", LONG, at=AT), 0.9),
        RecalledMemory(leaf("short", "I bought a new bike helmet.", at=AT), 0.5),
    ]
    assert count_tokens(memories[0].node.text) > 300
    fitted, tokens = fit_in_place_of_leaves(query, memories, 300, 0.15)
    assert [m.node.id for m in fitted] == ["long", "short"]
    assert fitted[0].node.text.endswith(BIKE + '"')
    assert fitted[0].excerpt and fitted[0].full_tokens == count_tokens(memories[0].node.text)
    assert not fitted[1].excerpt and fitted[1].full_tokens is None
    assert tokens == sum(count_tokens(m.node.text) for m in fitted) <= 300
