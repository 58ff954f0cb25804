"""The composition root: which embedder each path gets."""

from __future__ import annotations

from dataclasses import replace

from tests.unit.fakes import FakeTree, fake_container

from memstream.adapters.embedding.priority import PriorityEmbedder
from memstream.settings import Settings


def test_without_a_shared_embedder_every_path_uses_the_plain_one() -> None:
    container = fake_container(Settings(), FakeTree())
    assert container.online_embedder is container.embedder
    assert container.background_embedder is container.embedder


def test_a_shared_embedder_puts_the_online_path_first() -> None:
    plain = fake_container(Settings(), FakeTree())
    shared = replace(plain, priority=PriorityEmbedder(plain.embedder))
    assert shared.priority is not None
    assert shared.online_embedder is shared.priority.urgent
    assert shared.background_embedder is shared.priority.background


def test_with_the_tenants_topics_paused_a_poll_hands_over_at_most_a_trickle() -> None:
    from memstream.bootstrap import TENANT_TOPICS_FETCH_BYTES, paused_topics_fetching
    from memstream.domain.fair_share import Share

    fetching = paused_topics_fetching(Share(rate=158.0, burst=39.6))
    assert fetching == {
        "consumer_max_fetch_size": TENANT_TOPICS_FETCH_BYTES,
        "broker_max_poll_records": 10,  # a quarter of the burst
    }
    assert paused_topics_fetching(Share(rate=1.0, burst=1.0))["broker_max_poll_records"] == 1
