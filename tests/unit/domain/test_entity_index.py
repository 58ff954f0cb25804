"""The entity index: aliases merged, forgetting, resolving, and order-free by construction."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st
from tests.unit.fakes import CountedLeaves

from memstream.domain.entity_index import (
    EntityIndex,
    build,
    entity_leaves,
    forget,
    leaf_entities,
    observe,
    query_entities,
    read_leaf,
    resolve,
)

T0 = datetime(2024, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Said:
    speaker: str
    text: str
    ts: datetime


def _index(*leaves: tuple[str, str, str]) -> EntityIndex:
    """Leaves as (leaf id, speaker, text), a day apart."""
    index = EntityIndex()
    for day, (leaf_id, speaker, text) in enumerate(leaves):
        index = observe(index, leaf_id, [Said(speaker, text, T0 + timedelta(days=day))])
    return index


def test_entities_carry_kind_leaves_counts_and_times() -> None:
    index = _index(
        ("a", "Caroline", "Hey Mel! I went to Paris."),
        ("b", "Melanie", "Hi Caroline! We painted with Melanie's kids."),
    )
    mel = index.entities["melanie"]
    assert mel.kind == "person" and mel.aliases == ("mel",)
    assert mel.leaf_ids == ("a", "b") and mel.mentions == 2
    assert (mel.first_seen, mel.last_seen) == (T0, T0 + timedelta(days=1))
    assert index.entities["paris"].kind == "place"
    assert index.entities["caroline"].leaf_ids == ("a", "b")  # she speaks of herself in a


def test_a_short_form_shared_by_two_names_stays_apart() -> None:
    index = _index(("a", "X", "I met Melanie and Melissa. Then I saw Mel at noon."))
    assert resolve(index, "Mel") == "mel"
    assert {"melanie", "melissa", "mel"} <= set(index.entities)


def test_a_first_name_folds_into_the_full_name_but_not_into_a_title() -> None:
    index = _index(
        ("a", "X", "Hi Melanie! Melanie Smith and I watched Game of Thrones, then Game 7.")
    )
    assert index.keys["melanie"] == "melanie smith"
    surname = _index(("a", "X", "I love Harry Potter. Potter is brave."), ("b", "X", "Hi Potter."))
    assert surname.keys["potter"] == "harry potter"
    assert resolve(index, "Game") == "game"


def test_a_short_form_goes_to_the_name_that_dominates_it() -> None:
    leaves = [(f"l{i}", "X", "I saw Melanie today.") for i in range(9)]
    index = _index(*leaves, ("t", "X", "I saw Mell today."), ("m", "X", "Hey Mel, hi."))
    assert resolve(index, "Mel") == "melanie"
    assert "mell" in index.entities  # a one-off spelling stays itself


def test_a_word_mostly_capitalised_where_sentences_start_counts_only_mid_sentence() -> None:
    openers = [(f"s{i}", "X", "Honestly, it was fine.") for i in range(6)]
    index = _index(*openers, ("m", "X", "It was Honestly fine."))
    assert index.entities["honestly"].leaf_ids == ("m",)
    names = [(f"s{i}", "X", "Jon came over.") for i in range(4)]
    index = _index(*names, ("m", "X", "I saw Jon."))
    assert len(index.entities["jon"].leaf_ids) == 5


def test_a_weak_mention_counts_only_as_the_strong_one_is_spelled() -> None:
    index = _index(("a", "X", "Got it, thanks."), ("b", "X", "I watched GoT again."))
    assert index.entities["got"].leaf_ids == ("b",)


def test_a_titled_name_after_called_is_whole() -> None:
    index = _index(("t", "X", 'My group called "Finding Home" met.'))
    assert index.entities["finding home"].kind == "organisation"


def test_a_kin_reference_folds_into_the_name_said_later() -> None:
    before = _index(("a", "Caroline", "I called my sister."))
    assert resolve(before, "my sister", owner="Caroline") == "caroline's sister"
    after = observe(before, "b", [Said("Caroline", "My sister Anna came by.", T0)])
    anna = after.entities["anna"]
    assert anna.aliases == ("caroline's sister",)
    assert anna.leaf_ids == ("a", "b")
    assert resolve(after, "my sister", owner="Caroline") == "anna"
    assert resolve(after, "Caroline's sister") == "anna"
    assert resolve(after, "her sister") == "anna"  # the only sister the index knows
    assert resolve(after, "I", owner="Caroline") == "caroline"


def test_a_relation_given_two_names_stays_its_own_entity() -> None:
    index = _index(
        ("a", "Caroline", "My sister Anna called."),
        ("b", "Caroline", "My sister Beth called."),
    )
    assert resolve(index, "my sister", owner="Caroline") == "caroline's sister"
    assert index.entities["anna"].aliases == ()
    assert resolve(index, "her sister") == "caroline's sister"  # the relation, not a name


def test_weak_names_count_only_where_seen_as_names() -> None:
    alone = _index(("a", "X", "Grace said hi. Cool stuff."))
    assert "grace" not in alone.entities and "cool" not in alone.entities
    known = observe(alone, "b", [Said("X", "I met Grace there.", T0)])
    assert known.entities["grace"].leaf_ids == ("a", "b")
    assert resolve(known, "Grace") == "grace"


def test_forgetting_drops_mentions_and_unmentioned_entities() -> None:
    index = _index(("a", "Caroline", "I saw Nate."), ("b", "Caroline", "I saw Nate and Joanna."))
    index = forget(index, ["b"])
    assert "joanna" not in index.entities
    assert index.entities["nate"].leaf_ids == ("a",)
    assert forget(index, ["missing"]) is index


def test_query_entities_and_leaf_entities() -> None:
    index = _index(
        ("a", "Melanie", "My sister Anna and I went to Paris."),
        ("b", "Caroline", "Hey Mel, how was the trip?"),
    )
    assert query_entities(index, "What did Melanie and her sister do in Paris?") == (
        "melanie",
        "paris",
        "anna",
    )
    assert query_entities(index, "Where did Mel's sister go?") == ("melanie", "anna")
    assert query_entities(index, "Who is Bob?") == ()
    assert query_entities(index, "Where did my sister go?", asker="Melanie") == ("anna",)
    assert leaf_entities(index, "a") == {"melanie", "anna", "paris"}
    assert leaf_entities(index, "zzz") == frozenset()


def test_entity_leaves_come_newest_first() -> None:
    index = _index(("a", "X", "I saw Nate."), ("b", "X", "I saw Nate."), ("c", "X", "Bye Nate."))
    assert entity_leaves(index, ["nate", "nobody"]) == {"nate": ("c", "b", "a")}


def test_an_entity_of_several_keys_keeps_its_leaves_newest_first() -> None:
    # "Mel" and "Melanie" are one entity: its leaves interleave both keys' by time.
    index = _index(
        ("a", "X", "Melanie loves painting."),
        ("b", "X", "Hey Mel, how was it?"),
        ("c", "X", "Melanie painted again."),
        ("d", "X", "Mel went hiking with Melanie."),
    )
    assert index.entities["melanie"].aliases == ("mel",)
    assert entity_leaves(index, ["melanie"]) == {"melanie": ("d", "c", "b", "a")}


def test_entity_leaves_read_no_leaf_however_many_name_the_entity() -> None:
    # Recall asks on every request: the index keeps each entity's leaves newest first, so a
    # friend named in 5,000 leaves costs no read of them (dating each leaf here was most of
    # a heavy user's recall).
    said = {
        f"n{i:04}": read_leaf([Said("X", "I saw Nate.", T0 + timedelta(hours=i))])
        for i in range(5_000)
    }
    said |= {f"o{i}": read_leaf([Said("X", f"I met Ann{i}.", T0)]) for i in range(300)}
    counted = replace(build(said), leaves=CountedLeaves(said))
    newest = entity_leaves(counted, ["nate"])["nate"]
    assert newest[:3] == ("n4999", "n4998", "n4997") and len(newest) == 5_000
    assert entity_leaves(counted, []) == {}
    assert counted.leaves.read == 0  # type: ignore[attr-defined]


SENTENCES = (
    "Hey Mel! I went to Paris.",
    "Melanie loves painting.",
    "I called my sister.",
    "My sister Anna visited.",
    "My sister, Beth, visited.",
    "Grace said hi.",
    "I met Grace at Acme Inc.",
    "We got a dog named Max.",
    "Will you come? I told Will.",
    "Melissa and Mel went hiking.",
    "<b>Bob</b> \x00 sent \U0001f600 a note.",
)
LEAF = st.tuples(
    st.sampled_from(("Caroline", "Melanie")),
    st.lists(st.sampled_from(SENTENCES), min_size=1, max_size=3),
    st.integers(0, 400),
)
LEAVES = st.dictionaries(st.sampled_from("abcdefgh"), LEAF, max_size=6)


def _messages(leaf: tuple[str, list[str], int]) -> list[Said]:
    speaker, texts, day = leaf
    return [Said(speaker, t, T0 + timedelta(days=day, minutes=i)) for i, t in enumerate(texts)]


def _observe_all(leaves: list[tuple[str, tuple[str, list[str], int]]]) -> EntityIndex:
    index = EntityIndex()
    for leaf_id, leaf in leaves:
        index = observe(index, leaf_id, _messages(leaf))
    return index


@given(LEAVES, st.randoms(use_true_random=False))
def test_any_order_gives_the_same_index(leaves: dict, rng) -> None:  # type: ignore[type-arg]
    items = list(leaves.items())
    shuffled = items[:]
    rng.shuffle(shuffled)
    assert _observe_all(items) == _observe_all(shuffled)


@given(LEAVES, st.sampled_from("abcdefgh"), LEAF)
def test_observing_a_leaf_twice_changes_nothing(leaves: dict, leaf_id: str, leaf) -> None:  # type: ignore[no-untyped-def,type-arg]
    once = observe(_observe_all(list(leaves.items())), leaf_id, _messages(leaf))
    assert observe(once, leaf_id, _messages(leaf)) == once


@given(LEAVES, LEAF)
def test_forgetting_a_leaf_restores_the_index(leaves: dict, leaf) -> None:  # type: ignore[no-untyped-def,type-arg]
    index = _observe_all(list(leaves.items()))
    assert forget(observe(index, "new", _messages(leaf)), ["new"]) == index


@given(LEAVES, st.sets(st.sampled_from("abcdefgh")))
def test_forgetting_leaves_equals_never_observing_them(leaves: dict, gone: set[str]) -> None:  # type: ignore[type-arg]
    index = forget(_observe_all(list(leaves.items())), gone)
    assert index == _observe_all([(k, v) for k, v in leaves.items() if k not in gone])
    for entity in index.entities.values():
        assert entity.leaf_ids and not set(entity.leaf_ids) & gone
        assert entity.first_seen <= entity.last_seen


@given(LEAVES, st.sampled_from(SENTENCES))
def test_query_entities_name_only_indexed_entities(leaves: dict, question: str) -> None:  # type: ignore[type-arg]
    index = _observe_all(list(leaves.items()))
    found = query_entities(index, question)
    assert len(set(found)) == len(found) and set(found) <= set(index.entities)
