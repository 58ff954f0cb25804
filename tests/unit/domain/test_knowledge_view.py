"""A view of a user's knowledge stepped forward change by change equals the view derived
whole from the L1s after each change, over random histories of writes, rewrites and
removals."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from memstream.domain import entity_index as entity_index_module
from memstream.domain.entity_index import LeafEntities, read_leaf
from memstream.domain.facts import AtomicFact
from memstream.domain.knowledge import LeafKnowledge, entity_index, fact_versions, leaf_knowledge
from memstream.domain.knowledge_view import EntitiesView, FactsView

from .knowledge_histories import ENDINGS_SAID, SAID, History


def _contributions(held: dict[str, LeafKnowledge]) -> tuple[dict, dict]:
    facts = {i: k.facts for i, k in held.items()}
    surfaces = {i: k.entities for i, k in held.items()}
    return facts, surfaces


@pytest.mark.parametrize("said", [SAID, ENDINGS_SAID], ids=["mixed", "endings"])
@pytest.mark.parametrize("seed", range(12))
def test_stepped_views_equal_views_derived_whole(seed: int, said: tuple[str, ...]) -> None:
    history = History(random.Random(seed), said=tuple(said))
    held: dict[str, LeafKnowledge] = {}
    facts_view, entities_view = FactsView.of({}), EntitiesView.of({})
    pending_facts: dict[str, tuple[AtomicFact, ...]] = {}
    pending_entities: dict[str, LeafEntities | None] = {}
    for number in range(60):
        written, removed = history.step()
        for node in removed:
            held.pop(node.id)
            pending_facts[node.id], pending_entities[node.id] = (), None
        for node in written:
            held[node.id] = leaf_knowledge(node)
            pending_facts[node.id] = held[node.id].facts
            pending_entities[node.id] = held[node.id].entities
        if number % 3 and number != 59:
            continue  # several commits between two reads: one step covers them all
        facts_view = facts_view.replaced(pending_facts)
        entities_view = entities_view.replaced(pending_entities)
        pending_facts, pending_entities = {}, {}
        whole_facts, whole_surfaces = _contributions(held)
        assert facts_view == FactsView.of(whole_facts)
        assert entities_view == EntitiesView.of(whole_surfaces)
        # and both agree with the derivations the stores used before the views
        observations = [f for facts in whole_facts.values() for f in facts]
        versions = [v for t in sorted(facts_view.timelines.items()) for v in t[1].versions]
        assert sorted(versions, key=lambda f: f.fact_id) == sorted(
            fact_versions(observations), key=lambda f: f.fact_id
        )
        assert entities_view.index == entity_index(whole_surfaces)
    assert facts_view.timelines and entities_view.index.entities  # the history said something


def test_observations_are_ordered_by_leaf_whatever_the_order_given() -> None:
    history = History(random.Random(3))
    while len(history.held) < 8:
        history.step()
    facts = {i: leaf_knowledge(n).facts for i, n in history.held.items()}
    backwards = dict(reversed(list(facts.items())))
    assert FactsView.of(facts).observations == FactsView.of(backwards).observations
    assert FactsView.of(facts).observations == tuple(f for i in sorted(facts) for f in facts[i])


def test_a_leaf_replaced_by_nothing_leaves_no_trace() -> None:
    history = History(random.Random(5))
    while len(history.held) < 6:
        history.step()
    knowledge = {i: leaf_knowledge(n) for i, n in history.held.items()}
    facts, surfaces = _contributions(knowledge)
    gone = sorted(knowledge)[0]
    facts_after = FactsView.of(facts).replaced({gone: ()})
    entities_after = EntitiesView.of(surfaces).replaced({gone: None})
    assert gone not in facts_after.leaves and gone not in entities_after.index.leaves
    assert all(gone not in holders for holders in facts_after.slot_leaves.values())
    assert all(gone not in said for said in entities_after.said.values())
    rest = {i: k for i, k in knowledge.items() if i != gone}
    assert facts_after == FactsView.of(_contributions(rest)[0])


@dataclass(frozen=True)
class _Said:
    speaker: str
    text: str
    ts: datetime


def _met(i: int, name: str) -> LeafEntities:
    return read_leaf(
        [_Said("X", f"I met {name} today.", datetime(2024, 1, 1, tzinfo=UTC) + timedelta(hours=i))]
    )


def test_a_step_adding_newer_leaves_to_an_entity_of_several_keys_reads_none_of_its_leaves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # "Mel" and "Melanie" are one entity; a step saying either again puts the new leaf in
    # front of the entity's order instead of ordering all its leaves again.
    said = {f"l{i:03}": _met(i, "Mel" if i % 2 else "Melanie") for i in range(50)}
    view = EntitiesView.of(said)
    assert view.index.entities["melanie"].aliases == ("mel",)
    newer = {"l050": _met(50, "Mel"), "l051": _met(51, "Melanie")}

    def ordered_again(*_: object) -> tuple[str, ...]:
        raise AssertionError("the entity's leaves were ordered again")

    monkeypatch.setattr(entity_index_module, "_merged_recent", ordered_again)
    stepped = view.replaced(dict(newer))
    monkeypatch.undo()
    assert stepped == EntitiesView.of(said | newer)
    assert stepped.index.entities["melanie"].recent[:3] == ("l051", "l050", "l049")
    # A late leaf (said before the newest) is ordered again, and still right.
    late = {"l999": _met(10, "Mel")}
    assert view.replaced(dict(late)) == EntitiesView.of(said | late)
