"""The cache of derived knowledge: each part held with its revision, and bounded."""

from __future__ import annotations

import pytest

from memstream.adapters.redis.knowledge_cache import KnowledgeCache
from memstream.domain.knowledge_view import EntitiesView, FactsView

FACTS, ENTITIES = FactsView.of({}), EntitiesView.of({})


def test_each_part_is_held_with_the_revision_it_was_derived_at() -> None:
    cache = KnowledgeCache(4)
    cache.keep_facts("u", b"r1", FACTS)
    cache.keep_entities("u", b"r2", ENTITIES)
    facts, entities = cache.facts("u"), cache.entities("u")
    assert facts is not None and (facts.revision, facts.view) == (b"r1", FACTS)
    assert entities is not None and (entities.revision, entities.view) == (b"r2", ENTITIES)
    later = FactsView.of({})
    cache.keep_facts("u", b"r3", later)  # stepped forward: the entities stay as they were
    facts = cache.facts("u")
    assert facts is not None and facts.revision == b"r3" and facts.view is later
    assert cache.entities("u") == entities


def test_no_revision_keeps_nothing_and_a_drop_forgets_the_user() -> None:
    cache = KnowledgeCache(4)
    cache.keep_facts("u", None, FACTS)
    assert "u" not in cache and cache.facts("u") is None
    cache.keep_facts("u", b"r1", FACTS)
    cache.drop("u")
    assert "u" not in cache and cache.entities("u") is None


def test_the_least_recently_read_user_goes_first() -> None:
    cache = KnowledgeCache(2)
    for user in ("a", "b"):
        cache.keep_entities(user, b"r", ENTITIES)
    assert cache.entities("a") is not None  # b is now the least recently used
    cache.keep_entities("c", b"r", ENTITIES)
    assert "b" not in cache and "a" in cache and "c" in cache and len(cache) == 2


def test_size_zero_keeps_nothing_and_a_negative_size_is_refused() -> None:
    cache = KnowledgeCache(0)
    cache.keep_entities("u", b"r", ENTITIES)
    assert len(cache) == 0
    with pytest.raises(ValueError):
        KnowledgeCache(-1)
