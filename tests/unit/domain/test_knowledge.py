"""What an L1 says and what the set of them says: facts and entities as plain values."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from memstream.domain.fact_timeline import timelines_of
from memstream.domain.facts import AtomicFact
from memstream.domain.knowledge import (
    KnowledgeChange,
    LeafKnowledge,
    applied,
    cleared,
    current_facts,
    entities_by_key,
    entity_index,
    fact_history,
    fact_versions,
    facts_about,
    facts_in,
    find_entity,
    history_in,
    knowledge_change,
    leaf_knowledge,
    named_entity,
    said_before,
    subject_entity,
)
from memstream.domain.models import Level, MemoryNode, SourceMessage

JAN = datetime(2024, 1, 10, 9, 0, tzinfo=UTC)
APR = datetime(2024, 4, 2, 18, 30, tzinfo=UTC)


def leaf(
    leaf_id: str, *said: tuple[str, str, datetime], level: Level = Level.SEGMENT
) -> MemoryNode:
    """An L1 keeping its messages verbatim: (event id, text, when), all said by Maya."""
    messages = tuple(SourceMessage(e, "Maya", "user", text, at) for e, text, at in said)
    return MemoryNode(
        id=leaf_id,
        user_id="maya",
        level=level,
        t_start=min(at for _, _, at in said),
        t_end=max(at for _, _, at in said),
        text=" ".join(text for _, text, _ in said),
        source_ids=tuple(e for e, _, _ in said),
        messages=messages,
    )


PORTO = leaf("l1", ("m1", "I live in Porto, in a little flat by the river.", JAN))
BERLIN = leaf("l2", ("m2", "Big news: we moved to Berlin!", APR))
BROTHER = leaf("l3", ("m3", "My brother moved to Madrid.", APR + timedelta(hours=1)))


def stored(*leaves: MemoryNode) -> dict[str, LeafKnowledge]:
    return applied({}, knowledge_change(leaves))


def observations(by_leaf: dict[str, LeafKnowledge]) -> list[AtomicFact]:
    return [f for k in by_leaf.values() for f in k.facts]


def test_an_l1_says_the_facts_and_names_of_its_messages_with_their_sources() -> None:
    said = leaf_knowledge(PORTO)
    [fact] = said.facts
    assert (fact.subject, fact.attribute, fact.value) == ("speaker:maya", "lives_in", "Porto")
    assert fact.source_ids == ("m1",) and fact.valid_from == JAN and fact.is_current
    assert {s.key for s in said.entities.surfaces} >= {"maya", "porto"}
    assert leaf_knowledge(PORTO) == said  # a replay derives the same value


def test_only_l1s_contribute_and_removed_l1s_are_dropped() -> None:
    session = leaf("s1", ("m9", "We live in Oslo.", JAN), level=Level.SESSION)
    change = knowledge_change([PORTO, session], removed=[BERLIN, session, PORTO])
    assert set(change.leaves) == {"l1"}
    assert change.dropped == ("l2",)  # l1 is written in the same change; s1 is no L1


def test_a_newer_value_closes_the_older_and_links_them() -> None:
    by_leaf = stored(PORTO, BERLIN)
    [now] = current_facts(observations(by_leaf))
    assert now.value == "Berlin"
    porto, berlin = fact_history(observations(by_leaf), "speaker:maya", "lives_in")
    assert porto.valid_to == berlin.valid_from == APR
    assert (porto.superseded_by, berlin.supersedes) == (berlin.fact_id, porto.fact_id)
    [then] = current_facts(observations(by_leaf), when=JAN + timedelta(days=30))
    assert then.value == "Porto"


def test_what_someone_else_does_never_changes_the_speakers_facts() -> None:
    facts = observations(stored(PORTO, BROTHER))
    assert [f.value for f in current_facts(facts, subject="speaker:maya")] == ["Porto"]
    [madrid] = current_facts(facts, subject="kin:maya:brother")
    assert madrid.value == "Madrid" and madrid.subject_name == "Maya's brother"


def test_a_leaf_written_again_without_a_message_reopens_what_its_facts_closed() -> None:
    both = leaf("l2", ("m2", "Big news: we moved to Berlin!", APR), ("m4", "I miss the sea.", APR))
    by_leaf = stored(PORTO, both)
    assert [f.value for f in current_facts(observations(by_leaf))] == ["Berlin"]
    rewritten = leaf("l2", ("m4", "I miss the sea.", APR))  # m2 forgotten: m4 stays
    after = applied(by_leaf, knowledge_change([rewritten]))
    [porto] = current_facts(observations(after))
    assert porto.value == "Porto" and porto.valid_to is None and porto.superseded_by is None
    assert [s.key for s in after["l2"].entities.surfaces] == ["maya"]  # Berlin went
    gone = applied(by_leaf, knowledge_change([], removed=[both]))
    assert set(gone) == {"l1"}


def test_a_change_replays_to_the_same_contributions() -> None:
    change = knowledge_change([PORTO, BERLIN])
    once = applied({}, change)
    assert applied(once, change) == once


def test_a_leaf_that_says_nothing_is_not_kept() -> None:
    quiet = leaf("l5", ("m5", "ok, thanks", JAN))
    assert leaf_knowledge(quiet).empty
    assert applied({"l5": leaf_knowledge(PORTO)}, knowledge_change([quiet])) == {}
    assert applied({}, KnowledgeChange()) == {}


def test_entities_derive_from_the_leaves_and_fact_subjects_find_them() -> None:
    by_leaf = stored(PORTO, BERLIN, BROTHER)
    index = entity_index({k: v.entities for k, v in by_leaf.items()})
    assert {"maya", "porto", "berlin", "madrid", "maya's brother"} <= set(index.entities)
    assert index.entities["maya"].leaf_ids == ("l1", "l3")  # "I", "my": Maya
    assert subject_entity(index, "speaker:maya") == "maya"
    assert subject_entity(index, "kin:maya:brother") == "maya's brother"
    assert subject_entity(index, "kin:maya:sister") is None
    assert find_entity(index, "Berlin") == "berlin"
    assert find_entity(index, "nobody") is None


def test_history_of_nothing_said_is_empty() -> None:
    assert fact_history(observations(stored(PORTO)), "speaker:maya", "works_at") == ()
    assert current_facts([]) == ()
    moved = replace(leaf_knowledge(BERLIN).facts[0], fact_id="x")  # any order, one answer
    facts = observations(stored(PORTO))
    assert current_facts([moved, *facts]) == current_facts([*facts, moved])


def test_with_the_write_off_a_first_write_clears_nothing() -> None:
    assert cleared([PORTO, BERLIN]) == KnowledgeChange()


def test_with_the_write_off_rewritten_and_removed_leaves_lose_what_was_written() -> None:
    rewritten = replace(PORTO, version=2)
    change = cleared([rewritten, BERLIN], removed=[BROTHER])
    assert change == KnowledgeChange(dropped=("l1", "l2", "l3"))
    assert applied(stored(PORTO, BERLIN, BROTHER), change) == {}


def test_every_version_of_every_slot_is_listed_oldest_first() -> None:
    said = observations(stored(BERLIN, PORTO, BROTHER))
    versions = fact_versions(said)
    assert [(f.subject, f.value) for f in versions] == [
        ("kin:maya:brother", "Madrid"),
        ("speaker:maya", "Porto"),
        ("speaker:maya", "Berlin"),
    ]
    assert versions[1].superseded_by == versions[2].fact_id and versions[1].valid_to == APR
    assert fact_versions(reversed(said)) == versions


def test_facts_about_a_subject_by_name_alias_or_subject_key() -> None:
    knowledge = stored(PORTO, BERLIN, BROTHER)
    index = entity_index({leaf_id: k.entities for leaf_id, k in knowledge.items()})
    facts = current_facts(observations(knowledge))

    def about(subject: str) -> list[str] | None:
        found = facts_about(index, facts, subject)
        return None if found is None else [f.value for f in found]

    assert about("Maya") == about("maya") == about("speaker:maya") == ["Berlin"]
    assert about("Maya's brother") == about("kin:maya:brother") == ["Madrid"]
    assert about("Berlin") == []  # named, but nothing is said of it
    assert about("Olga") is None  # neither an entity nor a fact's subject


def test_facts_about_a_pet_no_entity_stands_for_are_found_by_how_they_name_it() -> None:
    adopted = leaf("l4", ("m4", "We adopted a dog! The shelter called him Biscuit.", JAN))
    knowledge = stored(adopted, BROTHER)
    index = entity_index({leaf_id: k.entities for leaf_id, k in knowledge.items()})
    facts = current_facts(observations(knowledge))
    found = facts_about(index, facts, "Maya's dog")
    assert found is not None and [(f.attribute, f.value) for f in found] == [("name", "Biscuit")]
    assert facts_about(index, facts, "Maya's cat") is None


def test_a_thing_someone_else_has_is_found_among_the_owners_facts_that_name_it() -> None:
    neighbour = leaf("l5", ("m5", "My neighbour Carla has a greyhound named Pepper.", JAN))
    knowledge = stored(neighbour, PORTO)
    index = entity_index({leaf_id: k.entities for leaf_id, k in knowledge.items()})
    facts = current_facts(observations(knowledge))
    for asked in ("Carla's dog", "Carla's dog Pepper", "Carla's greyhound"):
        found = facts_about(index, facts, asked)
        assert found is not None and [(f.subject, f.value) for f in found] == [
            ("carla", "greyhound named Pepper")
        ]
    assert facts_about(index, facts, "Carla's car") is None  # nothing she has
    assert facts_about(index, facts, "Carla's cat") is None  # a greyhound is a dog
    assert facts_about(index, facts, "Maya's new flat") is None  # "new" names no value


def test_only_l1s_written_for_the_first_time_are_first_written() -> None:
    rewritten = replace(BERLIN, version=2)
    change = knowledge_change([PORTO, rewritten, BROTHER], removed=[BROTHER])
    assert change.first_written == {"l1"}  # a leaf removed in the same commit is not new
    assert set(change.leaves) == {"l1", "l2", "l3"}


def test_facts_of_derived_timelines_are_the_facts_of_their_observations() -> None:
    facts = observations(stored(PORTO, BERLIN, BROTHER))
    timelines = timelines_of(facts)
    for subject in (None, "speaker:maya", "kin:maya:brother", "nobody"):
        for when in (None, JAN, APR):
            assert facts_in(timelines, subject, when) == current_facts(facts, subject, when)
    for subject, attribute in (("speaker:maya", "lives_in"), ("speaker:maya", "works_at")):
        assert history_in(timelines, subject, attribute) == fact_history(facts, subject, attribute)


def test_an_entity_is_named_as_find_entity_resolves_it_and_listed_by_key() -> None:
    knowledge = stored(PORTO, BERLIN, BROTHER)
    index = entity_index({leaf_id: k.entities for leaf_id, k in knowledge.items()})
    maya = named_entity(index, "Maya")
    assert maya is not None and maya.key == find_entity(index, "Maya")
    assert named_entity(index, "Olga") is None
    keys = [e.key for e in entities_by_key(index)]
    assert keys == sorted(index.entities) and "maya" in keys


def test_facts_said_before_an_instant_are_those_learned_before_it() -> None:
    said = observations(stored(PORTO, BERLIN))
    before_april = said_before(said, APR)
    assert before_april and all(f.recorded_at < APR for f in before_april)
    assert "Porto" in values(before_april) and "Berlin" not in values(before_april)
    assert "Berlin" in values(said_before(said, APR + timedelta(days=1)))
    assert said_before(said, JAN) == []


def values(facts: list[AtomicFact]) -> list[str]:
    return [f.value for f in facts]
