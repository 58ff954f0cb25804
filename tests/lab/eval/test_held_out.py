"""Leave-one-conversation-out choice: fitted on the others, scored on the one held out."""

from __future__ import annotations

from memstream_lab.eval.held_out import grid_variants, leave_one_out
from memstream_lab.eval.metrics import Outcome


def outcome(hit: bool, tokens: int = 100, category: int = 4) -> Outcome:
    return Outcome(category, ("e1",), ("e1",) if hit else (), tokens, 1.0)


def test_each_conversation_is_scored_with_the_variant_best_on_the_others() -> None:
    # "a" wins on c1 and c2, "b" on c3: held out c3, "a" is chosen and scores 0 there.
    outcomes = {
        "a": {"c1": [outcome(True)], "c2": [outcome(True)], "c3": [outcome(False)]},
        "b": {"c1": [outcome(False)], "c2": [outcome(True)], "c3": [outcome(True)]},
    }
    folds = {f.held_out: f for f in leave_one_out(outcomes)}
    assert folds["c3"].chosen == "a" and folds["c3"].scores["overall"] == 0.0
    # Held out c1, "b" has both of c2 + c3 and "a" one: "b", which misses c1.
    assert folds["c1"].chosen == "b" and folds["c1"].scores["overall"] == 0.0
    # Held out c2, they tie on c1 + c3 (one of two each): the name breaks the tie.
    assert folds["c2"].chosen == "a" and folds["c2"].scores["overall"] == 1.0


def test_a_variant_over_the_token_budget_on_the_others_is_never_chosen() -> None:
    outcomes = {
        "wide": {c: [outcome(True, tokens=900)] for c in ("c1", "c2")},
        "lean": {c: [outcome(False, tokens=300)] for c in ("c1", "c2")},
    }
    assert {f.chosen for f in leave_one_out(outcomes, budget=600)} == {"lean"}
    assert {f.chosen for f in leave_one_out(outcomes)} == {"wide"}


def test_grid_variants_are_every_combination_named_by_their_values() -> None:
    variants = grid_variants(entity_heat=[0.0, 0.05], aggregate_leaves=[0, 50])
    assert len(variants) == 4
    assert variants[0].name == "grid-aggregate_leaves=0-entity_heat=0.0"
    assert {(v.options.entity_heat, v.options.aggregate_leaves) for v in variants} == {
        (0.0, 0),
        (0.0, 50),
        (0.05, 0),
        (0.05, 50),
    }
