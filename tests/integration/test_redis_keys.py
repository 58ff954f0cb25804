"""Every key RedisTree writes is one the table in `adapters/redis/keys.py` documents.

A workload that calls every write of the adapter (the segmenter's commit with every part,
the consolidator's, the rebuild queue, the message index built late, markers of an older
version upgraded, a forget) runs against a real Redis; then every key under the test's
namespace is matched against the table's patterns, and every pattern must have been met.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import timedelta

import pytest

from memstream.adapters.redis import keys
from memstream.adapters.redis.connection import RedisClient, open_client
from memstream.adapters.redis.tree import RedisTree
from memstream.contracts.codec import encode_state
from memstream.domain.fact_changes import fact_changes
from memstream.domain.forgetting import Guard, Tombstone
from memstream.domain.incarnations import SessionInfo
from memstream.domain.knowledge import knowledge_change
from memstream.domain.models import Level, SourceMessage, StoredNode
from memstream.domain.rebuild import RebuildJob, RebuildPlan
from memstream.domain.remembered import RememberedChanges
from memstream.domain.windows import initial_state
from memstream.ports import UserCommit
from memstream.settings import Settings

from .tree_contract import T0, node

pytestmark = pytest.mark.integration


def documented_patterns(namespace: str) -> dict[str, re.Pattern[str]]:
    """The key table of `keys`' docstring, each row as a regular expression."""
    rows = re.findall(r"^    (ms:\S+)", keys.__doc__ or "", flags=re.MULTILINE)
    patterns = {}
    for row in rows:
        expression = re.escape(namespace + row.removeprefix("ms"))
        expression = expression.replace(re.escape("{u}"), r"\{[^}]+\}")
        expression = expression.replace(re.escape("<id>"), ".+").replace(re.escape("<n>"), r"\d+")
        expression = expression.replace(re.escape("{<s>}"), r"\{[@A-O]{5}\}")
        patterns[row] = re.compile(expression + "$")
    return patterns


# The indexes across users: one key each on a single primary, split by slot on a cluster.
ACROSS_USERS = ("ms:due", "ms:rebuilds", "ms:users", "ms:degraded")


def rows_of_layout(namespace: str, cluster: bool) -> dict[str, re.Pattern[str]]:
    """The table's rows a layout writes: the split indexes' on a cluster, else the others."""
    split = {f"{row}:{{<s>}}" for row in ACROSS_USERS}
    patterns = documented_patterns(namespace)
    unused = set(ACROSS_USERS) if cluster else split
    return {row: p for row, p in patterns.items() if row not in unused}


def test_the_table_documents_every_fixed_key() -> None:
    rows = set(documented_patterns("ms"))
    for suffix in keys.FIXED_SUFFIXES:
        assert f"ms:{{u}}:{suffix}" in rows
    assert {"ms:{u}:tombstone", *ACROSS_USERS} <= rows
    assert {f"{row}:{{<s>}}" for row in ACROSS_USERS} <= rows


@pytest.fixture(params=["single primary", "cluster"])
async def layout(
    request: pytest.FixtureRequest, stack_settings: Settings
) -> AsyncIterator[tuple[RedisClient, bool]]:
    cluster = request.param == "cluster"
    url = request.getfixturevalue("redis_cluster").url if cluster else stack_settings.redis.url
    redis = open_client(url, cluster=cluster)
    yield redis, cluster
    await redis.aclose()


async def test_every_key_the_adapter_writes_is_documented(
    layout: tuple[RedisClient, bool],
) -> None:
    client, cluster = layout
    namespace = f"keys-{uuid.uuid4().hex[:12]}"
    tree = RedisTree(client, namespace, cluster=cluster)
    try:
        await _workload(tree, client, namespace)
        written = sorted(
            [k.decode() async for k in client.scan_iter(match=f"{namespace}:*", count=1000)]
        )
        patterns = rows_of_layout(namespace, cluster)
        undocumented = [k for k in written if not any(p.match(k) for p in patterns.values())]
        assert undocumented == []
        unmet = [row for row, p in patterns.items() if not any(p.match(k) for k in written)]
        assert unmet == []
    finally:
        for key in [k async for k in client.scan_iter(match=f"{namespace}:*")]:
            await client.delete(key)


async def _workload(tree: RedisTree, client: RedisClient, namespace: str) -> None:
    state = encode_state(initial_state("ana", "UTC"))
    day = node("d1", Level.DAY, end=10)
    leaf = replace(node("l1", end=1, parent="d1"), source_ids=("q1", "a1"))
    other = replace(node("l2", end=2, parent="d1"), source_ids=("q2",))
    job = RebuildJob("r1", None, None, tuple(Level), 1, 1, plan=RebuildPlan(("l1",), ("d1",)))
    said = SourceMessage("q1", "Ana", "user", "I live in Porto with my dog Biscuit.", T0)
    said_now = knowledge_change([replace(leaf, messages=(said,)), other])
    # With the heads of the slots it states, as the segmenter commits it (`fact_outbox`).
    knowledge = replace(said_now, heads=fact_changes({}, said_now).heads)
    await tree.data_keys_for_writing(["ana"])  # what her sealed records and points are under
    await tree.commit_user(
        UserCommit(
            "ana",
            state,
            seen={"q1": 5, "a1": 6, "q2": 7},
            nodes=(leaf, other),
            outbox=({"topic": "t", "key": "ana", "value": {}},),
            due=T0 + timedelta(hours=1),
            guard=Guard(None),
            expiring={"q2": T0 + timedelta(days=30), "a1": T0 + timedelta(days=30)},
            rebuild=job,
            knowledge=knowledge,
            remembered=RememberedChanges(
                sessions=(SessionInfo("s0", T0, T0, T0, closed=True),),
                closed=(("2|s0|" + T0.isoformat(), 1),),
            ),
        )
    )
    session = node("s1", Level.SESSION, end=5, parent="d1")  # its terms kept beside it
    await tree.commit_nodes(
        "ana",
        [StoredNode(replace(day, degraded=True), "fp"), StoredNode(session, "fp")],
        [{"topic": "t", "key": "ana", "value": {}}],
        Guard(None),
    )
    assert await tree.index_degraded_by_user() == 0  # the commit indexed its marker already
    await tree.commit_user(
        UserCommit(
            "ana",
            state,
            forgotten=("q2",),
            removed=(other,),
            due=T0,
            rebuild=job,
            knowledge=replace(knowledge_change([], removed=[other]), heads={}),
        )
    )
    await tree.lease_rebuild("ana", T0.timestamp())
    await tree.mark_progress({0: 12, 3: 7})
    await tree.divert({"ana": [(0, 13), (0, 14)]})  # a tenant share's overflow ledger
    await tree.release({"ana": [(0, 13)]})
    # Each tenant's overflow partition: chosen once, the least taken, then kept.
    assert await tree.overflow_queues(["acme", "globex"], 2) == {"acme": 0, "globex": 1}
    assert await tree.overflow_queues(["initech", "acme"], 2) == {"initech": 0, "acme": 0}
    await client.delete(f"{namespace}:{{ana}}:sources")  # as a version before the index left it
    assert await tree.leaves_citing("ana", ["q1"]) == ["l1"]
    await client.delete(f"{namespace}:{{ana}}:seen")
    await client.sadd(f"{namespace}:{{ana}}:seen", "old")  # markers of an older version
    snapshot = await tree.load_user("ana", ["old", "q2", "new"])
    assert (snapshot.seen, snapshot.forgotten) == ({"old": 0}, {"q2"})
    # Another user, then forgotten: only its tombstone stays.
    await tree.save_node(node("l9", user="bo"), "fp")
    await tree.forget("bo", Tombstone(T0.timestamp(), 0, 5, T0.timestamp()), ttl_s=600)
