"""Recall options: validated on construction, the one place recall defaults are written."""

from dataclasses import replace
from types import MappingProxyType

import pytest

from memstream.domain.models import Level
from memstream.domain.recall_options import DEFAULT_BUDGETS, RecallOptions


@pytest.mark.parametrize(
    "bad",
    [
        {"leaf_top_k": 0},
        {"leaf_pool": -1},
        {"entity_join": -1},
        {"aggregate_leaves": -1},
        {"entity_heat": -0.1},
        {"spread_penalty": -0.1},
        {"default_max_tokens": -1},
        {"dense_weight": 1.5},
        {"summary_share": -0.1},
        {"budgets": {"simple": {}, "hybrid": {}}},
        {"budgets": {**DEFAULT_BUDGETS, "simple": {Level.SEGMENT: -1}}},
    ],
)
def test_bad_values_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        RecallOptions(**bad)  # type: ignore[arg-type]


def test_levels_leave_out_zero_budgets_and_follow_the_tree() -> None:
    budgets = MappingProxyType(
        {**DEFAULT_BUDGETS, "simple": {Level.MONTH: 1, Level.SEGMENT: 5, Level.DAY: 0}}
    )
    options = RecallOptions(budgets=budgets)
    assert list(options.levels("simple").items()) == [(Level.SEGMENT, 5), (Level.MONTH, 1)]


def test_a_focused_question_spends_a_share_of_the_ceiling() -> None:
    options = RecallOptions(focused_share=0.5, default_max_tokens=800)
    assert options.token_budget(options.default_max_tokens, aggregative=False) == 400
    assert options.token_budget(options.default_max_tokens, aggregative=True) == 800


def test_a_question_gathering_facts_searches_and_keeps_more_leaves() -> None:
    options = RecallOptions(leaf_top_k=35, leaf_pool=100, aggregate_pool=150, aggregate_leaves=15)
    assert (options.candidates_for(False), options.candidates_for(True)) == (100, 150)
    assert (options.leaves_for(False), options.leaves_for(True)) == (35, 50)
    assert options.levels("simple")[Level.SEGMENT] == 35
    assert options.levels("simple", aggregative=True)[Level.SEGMENT] == 50
    # The pool is never shallower than what is kept.
    deep = RecallOptions(leaf_top_k=35, leaf_pool=40, aggregate_pool=0, aggregate_leaves=30)
    assert deep.candidates_for(True) == 65


def test_a_ceiling_above_the_default_is_spent_and_grows_every_count() -> None:
    options = RecallOptions(
        leaf_top_k=35,
        leaf_pool=100,
        focused_share=0.5,
        default_max_tokens=800,
        entity_join=20,
        ceiling_pool=1.0,
    )
    # Up to the default ceiling nothing changes: a focused question spends its share.
    assert options.at_ceiling(800) is options and options.at_ceiling(400) is options
    assert options.token_budget(400, aggregative=False) == 200
    # Above it, every question spends the whole ceiling, and each count grows with it.
    assert options.token_budget(1200, aggregative=False) == 1200
    wider = options.at_ceiling(1600)
    assert (wider.leaf_top_k, wider.leaf_pool, wider.entity_join) == (70, 200, 40)
    assert wider.aggregate_leaves == 2 * options.aggregate_leaves
    assert wider.levels("complex") == {
        level: 2 * n for level, n in options.levels("complex").items()
    }
    assert options.at_ceiling(1000).leaf_top_k == 44  # rounded up: 35 * 1.25
    # Off, a larger ceiling buys what the default does.
    off = RecallOptions(focused_share=0.5, default_max_tokens=800, ceiling_scaling=False)
    assert off.at_ceiling(1600) is off and off.token_budget(1600, aggregative=False) == 800


def test_what_the_gate_left_out_fills_a_gathering_question_at_any_ceiling() -> None:
    options = RecallOptions(default_max_tokens=800)
    assert options.fills_after_gate(800, aggregative=True)
    assert options.fills_after_gate(400, aggregative=True)
    # A question after one fact gets what the gate kept, up to the default ceiling.
    assert not options.fills_after_gate(800, aggregative=False)
    assert options.fills_after_gate(1600, aggregative=False)
    off = RecallOptions(default_max_tokens=800, gate_fill=False)
    assert not off.fills_after_gate(800, aggregative=True)


def test_above_the_default_the_pool_searched_grows_faster_than_the_ceiling() -> None:
    options = RecallOptions(leaf_pool=100, aggregate_pool=150, default_max_tokens=800)
    faster = replace(options, ceiling_pool=2.0)
    # At or below the default ceiling the factor changes nothing.
    assert faster.at_ceiling(800) is faster and faster.at_ceiling(400) is faster
    wider = faster.at_ceiling(1600)  # twice the default: the pool four times as deep
    assert (wider.leaf_pool, wider.aggregate_pool) == (400, 600)
    assert wider.leaf_top_k == 2 * options.leaf_top_k  # what is kept grows with the ceiling
    with pytest.raises(ValueError, match="ceiling_pool"):
        RecallOptions(ceiling_pool=0.5)


def test_excerpts_lengthen_only_past_their_growth_point() -> None:
    options = RecallOptions(
        default_max_tokens=800,
        focused_leaf_tokens=40,
        aggregate_leaf_tokens=32,
        excerpt_growth_from=1.5,
        excerpt_growth=1.0,
    )
    # Up to 1.5 times the default ceiling the excerpts keep the default's length...
    for ceiling in (800, 1000, 1200):
        grown = options.at_ceiling(ceiling)
        assert (grown.focused_leaf_tokens, grown.aggregate_leaf_tokens) == (40, 32)
    # ...past it they grow with the ceiling's ratio to that point (here in proportion).
    at_twice = options.at_ceiling(2400)  # 3 times the default: twice the growth point
    assert (at_twice.focused_leaf_tokens, at_twice.aggregate_leaf_tokens) == (80, 64)
    assert at_twice.excerpts(aggregative=False) == (80, at_twice.focused_whole_leaves)
    fixed = replace(options, excerpt_growth=0.0).at_ceiling(2400)
    assert (fixed.focused_leaf_tokens, fixed.aggregate_leaf_tokens) == (40, 32)
    with pytest.raises(ValueError, match="excerpt_growth_from"):
        RecallOptions(excerpt_growth_from=0.5)
    with pytest.raises(ValueError, match="excerpt_growth must"):
        RecallOptions(excerpt_growth=-1.0)


def test_the_gate_is_asked_up_to_the_default_ceiling_only() -> None:
    options = RecallOptions(default_max_tokens=800)
    assert options.gates(400) and options.gates(800)
    assert not options.gates(801)
    assert replace(options, ceiling_gate=True).gates(1600)
    # Without ceiling scaling a larger ceiling is the default's recall, gate and all.
    assert replace(options, ceiling_scaling=False).gates(1600)
