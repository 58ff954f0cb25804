"""One recall costs a user with a long history no more Redis traffic than one with a short one.

The recall pipeline on a real Redis (the embedded stack's), with its knowledge (facts and the
entity index) read from it, through a client that counts the replies it reads and their bytes.
A user of 1,500 leaves (60 sessions) and one of 150 (6 sessions) hold the same kind of
history: every leaf names the same friend, every fifth states where the speaker lives (a fact
whose history grows with the sessions), each session has its summary. The leaf search is a
fake that finds the same hundred leaves' worth for both (the pool spans four sessions either
way), so what is left to differ is what recall reads besides the search: the entity join, the
facts asked, the sessions, the ancestors, the profile. Once each user's knowledge has been
read (the first read after a write derives it: `docs/hot-path.md`), the long history's
recall may read no more replies and, within a margin for the answers' own sizes, no more
bytes. A whole hash, a level, an entity's every leaf or a slot's whole history read on every
recall fails it; so does a recall that bypasses the knowledge cache (it reads both hashes).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
import redis.asyncio as aioredis
from tests.unit.fakes import FakeEmbedder, FakeIndex, FakeLLM, FakeTree

from memstream.adapters.redis import keys
from memstream.adapters.redis.tree import RedisTree
from memstream.domain.models import Level, MemoryNode, SourceMessage, StoredNode
from memstream.domain.recall_options import RecallOptions
from memstream.recall.pipeline import RecallPipeline, RecallRequest
from memstream.settings import Settings

from .knowledge_contract import write
from .redis_traffic import Traffic, counting_client

pytestmark = pytest.mark.integration

T0 = datetime(2023, 1, 2, 9, 0, tzinfo=UTC)
LEAVES_PER_SESSION = 25
HEAVY, LIGHT = "hvy", "lgt"  # the same length: ids and keys weigh alike in the replies
HEAVY_SESSIONS, LIGHT_SESSIONS = 60, 6
CITIES = ("Porto", "Berlin", "Lisbon", "Madrid", "Vienna")
QUESTIONS = (
    "What did Maya say about Ben?",
    "Where does Maya live now?",
    "Where did Maya live before Berlin?",
    "When did Maya go to the harbor with Ben?",
    "pottery harbor",
)
# What may differ besides the search: the answers' own texts (a later city, a longer id).
BYTES_MARGIN = 8 * 1024


def _leaf(user: str, session: int, n: int) -> MemoryNode:
    at = T0 + timedelta(days=3 * session, minutes=n)
    number = session * LEAVES_PER_SESSION + n
    text = f"I had lunch with Ben near the harbor and we talked about pottery, day {number}."
    if n % 5 == 0:
        text += f" I live in {CITIES[(number // 5) % len(CITIES)]} now."
    event = f"{user}-m{number:05d}"
    return MemoryNode(
        id=f"{user}-l{number:05d}",
        user_id=user,
        level=Level.SEGMENT,
        t_start=at,
        t_end=at,
        text=text,
        parent_id=f"{user}-s{session:03d}",
        source_ids=(event,),
        speakers=("Maya",),
        session_id=f"{user}-s{session:03d}",
        messages=(SourceMessage(event, "Maya", "user", text, at),),
    )


def _session(user: str, session: int) -> MemoryNode:
    start = T0 + timedelta(days=3 * session)
    return MemoryNode(
        id=f"{user}-s{session:03d}",
        user_id=user,
        level=Level.SESSION,
        t_start=start,
        t_end=start + timedelta(minutes=LEAVES_PER_SESSION),
        text=f"Maya and Ben met near the harbor (session {session}).",
        session_id=f"{user}-s{session:03d}",
    )


async def _fill(tree: RedisTree, user: str, sessions: int) -> list[MemoryNode]:
    leaves: list[MemoryNode] = []
    for session in range(sessions):
        chunk = [_leaf(user, session, n) for n in range(LEAVES_PER_SESSION)]
        assert await write(tree, *chunk, user=user)
        stored = StoredNode(_session(user, session), f"fp-{session}")
        assert await tree.commit_nodes(user, [stored], outbox=[])
        leaves += chunk
    return leaves


@dataclass(frozen=True)
class Store:
    tree: RedisTree
    client: aioredis.Redis
    namespace: str


@pytest.fixture
async def store(stack_settings: Settings) -> AsyncIterator[Store]:
    async with counting_client(stack_settings.redis.url, "recall-traffic") as (client, namespace):
        yield Store(RedisTree(client, namespace), client, namespace)


async def _recall_traffic(pipeline: RecallPipeline, user: str) -> tuple[int, int]:
    """Replies and bytes read by one recall of each question, each asked once before: the
    first read of the user's facts and entities derives them whole, once."""
    for question in QUESTIONS:
        await pipeline.recall(RecallRequest(user, question))
    Traffic.replies = Traffic.bytes = 0
    for question in QUESTIONS:
        result = await pipeline.recall(RecallRequest(user, question))
        assert result.memories  # the recall found something: its reads are the real ones
    return Traffic.replies, Traffic.bytes


async def test_a_recall_reads_no_more_for_a_user_with_a_long_history(store: Store) -> None:
    tree = store.tree
    heavy = await _fill(tree, HEAVY, HEAVY_SESSIONS)
    light = await _fill(tree, LIGHT, LIGHT_SESSIONS)
    pipeline = RecallPipeline(
        tree=tree,
        index=FakeIndex(FakeTree([*heavy, *light])),
        embedder=FakeEmbedder(),
        llm=FakeLLM(),
        options=RecallOptions(),
        knowledge=tree,
    )
    heavy_replies, heavy_bytes = await _recall_traffic(pipeline, HEAVY)
    light_replies, light_bytes = await _recall_traffic(pipeline, LIGHT)

    assert heavy_replies <= light_replies
    assert heavy_bytes <= 1.2 * light_bytes + BYTES_MARGIN, (heavy_bytes, light_bytes)
    # The comparison can see a whole read: the long history's knowledge is several times
    # what one recall reads (with the knowledge cache off, each recall reads it: this fails).
    Traffic.bytes = 0
    for part in (keys.FACTS, keys.ENTITIES):
        await store.client.hgetall(keys.user_prefix(HEAVY, store.namespace) + part)
    assert Traffic.bytes > 5 * heavy_bytes / len(QUESTIONS)
