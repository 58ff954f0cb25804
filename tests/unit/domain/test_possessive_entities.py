"""A possessive of a relation names an entity of its own: "my sister's husband", "Grace's
brother's dog", each link of the chain in the entity index, resolvable from a query."""

from __future__ import annotations

from datetime import timedelta

from tests.unit.domain.test_entity_index import T0, Said

from memstream.domain.entities import mentions
from memstream.domain.entity_index import EntityIndex, observe, resolve


def _index(*texts: str, speaker: str = "Maya") -> EntityIndex:
    index = EntityIndex()
    for day, text in enumerate(texts):
        index = observe(index, f"l{day}", [Said(speaker, text, T0 + timedelta(days=day))])
    return index


def test_a_chain_of_possessives_makes_an_entity_of_each_link() -> None:
    index = _index("My sister's husband Tom moved to Leeds.", "Grace's brother's dog bit me.")
    keys = set(index.keys)
    assert {"maya's sister", "maya's sister's husband", "grace's brother"} <= keys
    assert "grace's brother's dog" in keys
    husband = index.entities[index.keys["maya's sister's husband"]]
    assert husband.kind == "person" and husband.leaf_ids == ("l0",)
    assert index.keys["tom"] == index.keys["maya's sister's husband"]  # the name given him
    dog = index.entities[index.keys["grace's brother's dog"]]
    assert dog.kind == "pet" and dog.leaf_ids == ("l1",)
    assert resolve(index, "my sister's husband", owner="Maya") == index.keys["tom"]
    assert resolve(index, "Grace's brother's dog") == index.keys["grace's brother's dog"]


def test_a_possessive_of_no_relation_adds_nothing_and_a_chain_is_bounded() -> None:
    said = [m.key for m in mentions("My sister's car is red.", "Maya")]
    assert said == ["maya", "maya's sister"]
    long = [m.key for m in mentions("my " + "sister's " * 40 + "cat", "Maya")]
    assert max(key.count("'s") for key in long) <= 4
