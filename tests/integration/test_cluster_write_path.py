"""The write path on a real Redis Cluster builds the tree a single primary builds.

One LoCoMo conversation goes through the real broker and workers twice, in one run: once
with Redis on a single primary, once on the three-primary cluster in cluster mode (each with
its own topics, consumer group, namespace and collection). The two trees must be equal node
by node; then forgetting the user on the cluster leaves only its tombstone there.
"""

from __future__ import annotations

from pathlib import Path

from memstream.adapters.kafka.admin import ensure_topics
from memstream.bootstrap import Container, connect
from memstream.contracts.catalog import load_catalog
from memstream.domain.models import MemoryNode
from memstream.entrypoints.runner import WRITE_PATH, run_parts
from memstream.settings import Settings

from .redis_cluster import RedisClusterNodes
from .test_write_path import USER, all_nodes, expected_counts, ingest_and_wait, locomo_file


async def on_its_own(settings: Settings, name: str, data_dir: Path) -> Settings:
    """`settings` with topics, group, namespace, collection and directory of its own."""
    own = settings.model_copy(
        update={
            "topic_prefix": f"{settings.broker.topic_prefix}{name}.",
            "consumer_group": f"{settings.broker.consumer_group}-{name}",
            "qdrant_collection": f"{settings.qdrant.collection}_{name}",
            "redis_namespace": f"{settings.redis.namespace}-{name}",
            "data_dir": data_dir,
            "clock_grace_s": 0.0,
            "clock_interval_s": 0.5,
        }
    )
    await ensure_topics(own.broker.bootstrap, load_catalog(own.broker.topic_prefix).topics)
    return own


async def built(runtime: Container) -> dict[str, MemoryNode]:
    async with run_parts(runtime, WRITE_PATH, fast_rebalance=True):
        await ingest_and_wait(runtime, locomo_file(), [USER])
    return {node.id: node for node in await all_nodes(runtime, USER)}


async def test_the_cluster_builds_the_single_primary_tree_node_by_node(
    settings: Settings, redis_cluster: RedisClusterNodes, tmp_path: Path
) -> None:
    single = await on_its_own(settings, "single", tmp_path / "single")
    async with connect(single, prioritise_online=True) as runtime:
        expected = await built(runtime)
    assert len(expected) == sum(expected_counts().values())

    cluster = (await on_its_own(settings, "cluster", tmp_path / "cluster")).model_copy(
        update={"redis_url": redis_cluster.url, "redis_cluster": True}
    )
    async with connect(cluster, prioritise_online=True) as runtime:
        found = await built(runtime)
        assert found.keys() == expected.keys()
        assert [i for i in expected if found[i] != expected[i]] == []
        assert await runtime.index.count(USER) == len(found)
        # The user's entries sit in the split indexes of its slot, and are listed.
        assert [u.user_id for u in await runtime.tree.users()] == [USER]

        await runtime.forget_user(USER)
        client = runtime.tree._r  # type: ignore[attr-defined]
        namespace = cluster.redis.namespace
        left = {k async for k in client.scan_iter(match=f"{namespace}:*")}
        # The tombstone, the segmenter's offsets per partition and the mark that the
        # degraded nodes were indexed by user (no user's).
        assert left - {f"{namespace}:degraded_by_user".encode()} == {
            f"{namespace}:{{{USER}}}:tombstone".encode(),
            f"{namespace}:progress".encode(),
        }
        assert await runtime.tree.users() == []
        assert await runtime.index.count(USER) == 0
