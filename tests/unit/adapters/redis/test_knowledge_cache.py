"""The cache of derived knowledge: an entry serves only its revision, and stays bounded."""

from __future__ import annotations

import pytest

from memstream.adapters.redis.knowledge_cache import DerivedFacts, KnowledgeCache
from memstream.domain.entity_index import EntityIndex


def test_an_entry_serves_its_revision_only() -> None:
    cache = KnowledgeCache(4)
    facts, index = DerivedFacts.of([]), EntityIndex()
    cache.keep_facts("u", b"r1", facts)
    cache.keep_index("u", b"r1", index)
    held = cache.at("u", b"r1")
    assert held is not None and held.facts is facts and held.index is index
    assert cache.at("u", b"r2") is None
    cache.keep_index("u", b"r2", EntityIndex())
    later = cache.at("u", b"r2")
    assert later is not None and later.facts is None  # nothing of r1 carried over
    assert cache.at("u", b"r1") is None


def test_no_revision_drops_the_user_and_keeps_nothing() -> None:
    cache = KnowledgeCache(4)
    cache.keep_facts("u", b"r1", DerivedFacts.of([]))
    assert cache.at("u", None) is None and "u" not in cache
    cache.keep_facts("u", None, DerivedFacts.of([]))
    assert "u" not in cache


def test_the_least_recently_read_user_goes_first() -> None:
    cache = KnowledgeCache(2)
    for user in ("a", "b"):
        cache.keep_index(user, b"r", EntityIndex())
    assert cache.at("a", b"r") is not None  # b is now the least recently used
    cache.keep_index("c", b"r", EntityIndex())
    assert "b" not in cache and "a" in cache and "c" in cache and len(cache) == 2


def test_size_zero_keeps_nothing_and_a_negative_size_is_refused() -> None:
    cache = KnowledgeCache(0)
    cache.keep_index("u", b"r", EntityIndex())
    assert len(cache) == 0
    with pytest.raises(ValueError):
        KnowledgeCache(-1)
