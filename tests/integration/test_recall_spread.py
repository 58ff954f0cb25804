"""A recall whose candidates spread over a session each reads their sessions' terms, not the
sessions.

A long history spreads recall's candidate pool: a heavy user's hundred candidates come from
about as many sessions, a short history's from a few. The summary signal reads, for each
candidate, which of the question's terms its session summary holds; reading those summaries
whole (and decoding them) grew a heavy user's recall with the spread, up to the pool's
bound. On a real Redis, through a client counting the bytes it reads: a user whose pool
spans a session a leaf (over a history three times the pool) and one whose pool spans four
sessions, each session summary a few KB, as a heavy user's are. Each question is asked once
before it is counted (the decoded-node cache holds both users' nodes alike). The spread
user may read more (the kept leaves' own sessions and ancestors are read whole for the
climb), but less than half of what its pool's sessions weigh; reading them whole fails it.
The nodes decoded on a first read are bounded likewise: the pool's leaves and what the
climb reads above the kept ones, not a session a candidate. (With the sessions read whole:
901 KB against 148 KB, the pool's sessions weighing 785 KB, and 200 nodes decoded; with
their terms: 463 KB against 135 KB, and 135 nodes.)
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
import redis.asyncio as aioredis
from tests.unit.fakes import FakeEmbedder, FakeIndex, FakeLLM, FakeTree

from memstream.adapters.redis import keys
from memstream.adapters.redis.tree import RedisTree
from memstream.domain.lexical import term_set
from memstream.domain.models import Level, MemoryNode, StoredNode
from memstream.domain.recall_options import RecallOptions
from memstream.recall.pipeline import RecallPipeline, RecallRequest
from memstream.settings import Settings

from .redis_traffic import Traffic, counting_client

pytestmark = pytest.mark.integration

T0 = datetime(2023, 1, 2, 9, 0, tzinfo=UTC)
SPREAD, COMPACT = "sprd", "cmpt"  # the same length: ids and keys weigh alike in the replies
POOL = RecallOptions().leaf_pool
TOPICS = ("harbor", "pottery", "lunch", "garden", "concert", "bakery", "museum", "hiking")
QUESTIONS = (
    "What did Maya say about the pottery class?",
    "When did Maya go to the harbor?",
    "Where did Maya have lunch with Ben?",
)


def _leaf(user: str, number: int, session: int) -> MemoryNode:
    at = T0 + timedelta(hours=number)
    topic = TOPICS[number % len(TOPICS)]
    return MemoryNode(
        id=f"{user}-l{number:05d}",
        user_id=user,
        level=Level.SEGMENT,
        t_start=at,
        t_end=at,
        text=f"Maya told Ben about the {topic}, time {number}.",
        parent_id=f"{user}-s{session:04d}",
        speakers=("Maya",),
    )


def _session(user: str, session: int, leaves: list[MemoryNode]) -> MemoryNode:
    """A summary of a few KB, as a heavy user's sessions have (a sentence a fact kept)."""
    facts = " ".join(
        f"Maya said on day {session} that the {TOPICS[(session + n) % len(TOPICS)]} was "
        f"worth a visit, and Ben agreed to go along on the {n + 1}th."
        for n in range(24)
    )
    return MemoryNode(
        id=f"{user}-s{session:04d}",
        user_id=user,
        level=Level.SESSION,
        t_start=leaves[0].t_start,
        t_end=leaves[-1].t_end,
        text=f"Session {session}: {facts}",
    )


async def _fill(tree: RedisTree, user: str, leaves: int, per_session: int) -> list[MemoryNode]:
    written: list[MemoryNode] = []
    for session in range(leaves // per_session):
        chunk = [_leaf(user, session * per_session + n, session) for n in range(per_session)]
        summary = _session(user, session, chunk)
        stored = [StoredNode(n, "fp") for n in [*chunk, summary]]
        assert await tree.commit_nodes(user, stored, outbox=[])
        written += chunk
    return written


@pytest.fixture
async def store(stack_settings: Settings) -> AsyncIterator[tuple[aioredis.Redis, str]]:
    async with counting_client(stack_settings.redis.url, "recall-spread") as store:
        yield store


async def _first_and_again(pipeline: RecallPipeline, tree: RedisTree, user: str) -> tuple[int, int]:
    """Nodes decoded by the first recall of each question; bytes read when asked again."""
    decoded = tree.node_cache.misses
    for question in QUESTIONS:
        assert (await pipeline.recall(RecallRequest(user, question))).memories
    decoded = tree.node_cache.misses - decoded
    Traffic.bytes = 0
    for question in QUESTIONS:
        await pipeline.recall(RecallRequest(user, question))
    return decoded, Traffic.bytes


async def test_a_pool_spread_over_sessions_reads_their_terms_not_the_sessions(
    store: tuple[aioredis.Redis, str],
) -> None:
    client, namespace = store
    tree = RedisTree(client, namespace)
    spread = await _fill(tree, SPREAD, 3 * POOL, per_session=1)
    compact = await _fill(tree, COMPACT, POOL, per_session=POOL // 4)
    pipeline = RecallPipeline(
        tree=tree,
        index=FakeIndex(FakeTree([*spread, *compact])),  # the first POOL leaves, best first
        embedder=FakeEmbedder(),
        llm=FakeLLM(),
        options=RecallOptions(),
    )
    spread_decoded, spread_bytes = await _first_and_again(pipeline, tree, SPREAD)
    compact_decoded, compact_bytes = await _first_and_again(pipeline, tree, COMPACT)

    # What the spread pool's sessions weigh, read whole once per question.
    prefix = keys.user_prefix(SPREAD, namespace)
    Traffic.bytes = 0
    await client.mget([prefix + keys.node(n.parent_id or "") for n in spread[:POOL]])
    whole = len(QUESTIONS) * Traffic.bytes
    assert spread_bytes - compact_bytes < whole / 2, (spread_bytes, compact_bytes, whole)
    # Decoded on first reads (the fake search finds the same pool for every question): the
    # pool's leaves and the kept leaves' sessions (this fill has nothing above them), not a
    # session a candidate.
    kept = RecallOptions().leaf_top_k
    assert spread_decoded <= POOL + kept + 10, (spread_decoded, compact_decoded)


async def test_a_session_without_its_terms_kept_is_read_and_tokenised(
    store: tuple[aioredis.Redis, str],
) -> None:
    client, namespace = store
    tree = RedisTree(client, namespace)
    leaves = await _fill(tree, SPREAD, 3, per_session=1)
    sessions = [n.parent_id or "" for n in leaves]
    stored = {n.id: n for n in await tree.get_many(SPREAD, sessions)}
    prefix = keys.user_prefix(SPREAD, namespace)
    # Written before the field existed, and under other word rules: both read the node.
    await client.hdel(prefix + keys.SESSION_TERMS, sessions[0])
    await client.hset(prefix + keys.SESSION_TERMS, sessions[1], "older-rules\nharbor")
    read = await tree.session_terms(SPREAD, [*sessions, "no-such-session"])
    assert read == {i: term_set(stored[i].text) for i in sessions}
    for session in sessions:  # few sessions: their nodes read with the terms, alike
        read = await tree.session_terms(SPREAD, [session, "no-such-session"])
        assert read == {session: term_set(stored[session].text)}
    # Removing a session removes its terms.
    assert await tree.commit_nodes(SPREAD, [], outbox=[], removed=[stored[sessions[2]]])
    assert await client.hexists(prefix + keys.SESSION_TERMS, sessions[2]) == 0
