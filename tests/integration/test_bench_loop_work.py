"""The loop-work benchmark runs against the real stores and leaves nothing behind."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis

from memstream.settings import Settings
from memstream_lab.bench.loop_work import measure


async def test_every_stage_is_measured_and_its_redis_keys_are_removed(
    stack_settings: Settings,
) -> None:
    result = await measure(conversations=1, repeats=1, redis_url=stack_settings.redis.url)
    stages = result["cpu_ms_per_msg"]
    assert result["messages"] > 0 and result["l1_nodes"] > 0
    assert set(stages) >= {"qdrant_points", "qdrant_upserts", "redis_commits"}
    assert set(stages) >= {"knowledge", "redis_commits_with_knowledge"}
    assert all(ms > 0 for name, ms in stages.items() if name != "l1_nodes")
    # On, the knowledge is read and committed in place of the commit without it.
    assert result["total_with_knowledge_cpu_ms_per_msg"] == pytest.approx(
        result["total_cpu_ms_per_msg"]
        - stages["redis_commits"]
        + stages["knowledge"]
        + stages["redis_commits_with_knowledge"],
        abs=1e-3,  # each figure is rounded
    )
    client = aioredis.Redis.from_url(stack_settings.redis.url)
    try:
        assert [k async for k in client.scan_iter(match="bench-loop-work-*")] == []
    finally:
        await client.aclose()
