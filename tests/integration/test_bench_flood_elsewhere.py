"""The fairness benchmark's `--flood-elsewhere`: the flood goes to a topic of the turns
topic's shape that no part of the stack reads, made once on the real broker."""

from __future__ import annotations

from memstream.adapters.kafka.admin import admin_client
from memstream.contracts.catalog import load_catalog
from memstream.settings import Settings
from memstream_lab.bench.fairness import ELSEWHERE, flood_topic_of


async def test_the_flood_goes_to_its_own_topic_of_the_turns_shape(settings: Settings) -> None:
    bootstrap = settings.broker.bootstrap
    assert await flood_topic_of(bootstrap, elsewhere=False) == load_catalog().turns.name
    assert await flood_topic_of(bootstrap, elsewhere=True) == ELSEWHERE
    assert await flood_topic_of(bootstrap, elsewhere=True) == ELSEWHERE  # made once
    async with admin_client(bootstrap) as admin:
        described = await admin.describe_topics([ELSEWHERE])
    assert len(described[0]["partitions"]) == load_catalog().turns.partitions
    assert ELSEWHERE not in {spec.name for spec in load_catalog().topics}
