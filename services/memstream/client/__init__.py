"""The memstream SDK: publish chat events and ask what to remember, from any Python agent.

    from memstream.client import MemstreamProducer, RecallClient

    with MemstreamProducer("localhost:9092") as producer, RecallClient(url, api_key=key) as memory:
        sent = producer.publish_turn(user_id="ann", session_id="s1", seq=0, text="I adopted a cat.")
        context = memory.recall("ann", "What pets does Ann have?", after=sent).as_prompt()

It needs none of the worker's dependencies (no torch, Faust, Qdrant or Redis client): only
the topic catalog (`memstream.contracts`), aiokafka, httpx, tenacity and pydantic.
"""

from memstream.client.events import InvalidEvent, forget_event, session_end_event, turn_event
from memstream.client.feed import FeedBehindRetention, MemoryFeed
from memstream.client.feed_events import (
    FeedEvent,
    MemoryRemoved,
    MemoryWritten,
    RebuildFinished,
    UserForgotten,
    WindowConsolidated,
)
from memstream.client.models import (
    Entities,
    EntityDetail,
    EntitySummary,
    Fact,
    Facts,
    ForgetResult,
    Memory,
    MemoryDetail,
    MemoryPage,
    Profile,
    Recall,
)
from memstream.client.producer import AsyncMemstreamProducer, MemstreamProducer
from memstream.client.recall import AsyncRecallClient, RecallClient, RecallError
from memstream.client.receipt import Receipt
from memstream.client.trace import RecallTrace

__all__ = [
    "AsyncMemstreamProducer",
    "AsyncRecallClient",
    "Entities",
    "EntityDetail",
    "EntitySummary",
    "Fact",
    "Facts",
    "FeedBehindRetention",
    "FeedEvent",
    "ForgetResult",
    "InvalidEvent",
    "Memory",
    "MemoryDetail",
    "MemoryFeed",
    "MemoryPage",
    "MemoryRemoved",
    "MemoryWritten",
    "MemstreamProducer",
    "Profile",
    "RebuildFinished",
    "Recall",
    "RecallClient",
    "RecallError",
    "RecallTrace",
    "Receipt",
    "UserForgotten",
    "WindowConsolidated",
    "forget_event",
    "session_end_event",
    "turn_event",
]
