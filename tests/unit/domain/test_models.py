"""The shared vocabulary: one naming of levels, one list of complexities."""

from typing import get_args

from memstream.domain.models import (
    COMPLEXITIES,
    REQUESTED_COMPLEXITIES,
    Complexity,
    Level,
    RequestedComplexity,
)


def test_levels_have_one_label_and_one_noun() -> None:
    # The HTTP API serves the nouns as `level_name`: changing one breaks clients.
    assert [(level.label, level.noun) for level in Level] == [
        ("L1", "segment"),
        ("L2", "session"),
        ("L3", "day"),
        ("L4", "week"),
        ("L5", "month"),
    ]


def test_a_caller_may_ask_for_any_complexity_or_auto() -> None:
    assert COMPLEXITIES == get_args(Complexity) == ("simple", "hybrid", "complex")
    assert get_args(RequestedComplexity) == REQUESTED_COMPLEXITIES
    assert set(REQUESTED_COMPLEXITIES) == {"auto", *COMPLEXITIES}
