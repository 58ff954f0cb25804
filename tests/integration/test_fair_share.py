"""Fair shares on the real broker and stores: one tenant's backlog does not hold up another
tenant's L1s, and the backlog still ends complete, each turn in one L1.

Tenant acme floods a backlog at once; globex then sends a few exchanges. globex's L1s must
be stored within a deadline while acme's backlog still waits in the overflow (its places
in the overflow topic, read back from the turns topic); a
receipt for one of acme's diverted turns must not answer before that turn is in the tree;
and at the end every acme turn has its L1, none twice, and the overflow ledger is empty.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from memstream.client import AsyncMemstreamProducer, AsyncRecallClient
from memstream.client.events import turn_event
from memstream.domain.models import Level
from memstream.domain.write_token import verify
from memstream.settings import Settings
from memstream.wiring.container import Container

from .sdk_stack import API_KEY, serving_everything
from .test_forget_everywhere import topic_values

pytestmark = pytest.mark.integration

FLOODERS = [f"acme:u{i}" for i in range(3)]
FLOOD_EXCHANGES = 50  # per flooding user: 300 turns in all
QUIET = "globex:bo"
QUIET_EXCHANGES = 3
# Deadlines for a loaded test machine, not pauses: each is polled.
QUIET_DEADLINE_S = 20.0
DRAIN_DEADLINE_S = 120.0
WAIT_MS = 60_000


def exchanges(user: str, count: int, first_seq: int = 0) -> list[dict[str, object]]:
    events = []
    for n in range(count):
        seq = first_seq + 2 * n
        events += [
            turn_event(user_id=user, session_id="s1", seq=seq, text=f"{user} asks {n}"),
            turn_event(
                user_id=user, session_id="s1", seq=seq + 1, text=f"answer {n}", role="assistant"
            ),
        ]
    return events


async def sources_of_l1s(container: Container, user: str) -> list[str]:
    """Every message id cited by the user's L1s, one entry per citation."""
    ids = await container.tree.level_ids(user, Level.SEGMENT)
    return [s for node in await container.tree.get_many(user, ids) for s in node.source_ids]


async def polled(check: Callable[[], Awaitable[bool]], deadline_s: float, what: str) -> float:
    """Seconds until `check` holds (checked every 50 ms), failing at the deadline."""
    started = time.monotonic()
    while not await check():
        if time.monotonic() - started > deadline_s:
            raise AssertionError(f"{what}: not within {deadline_s} s")
        await asyncio.sleep(0.05)
    return time.monotonic() - started


async def test_a_flooding_tenant_does_not_delay_another_and_still_completes(
    settings: Settings, tmp_path: Path
) -> None:
    shared = settings.model_copy(
        update={
            "segmenter_tenant_share_turns_s": 10.0,
            "segmenter_tenant_share_burst": 10.0,
            "segmenter_overflow_batch_size": 16,
            "api_max_wait_ms": WAIT_MS,
        }
    )
    flood = {user: exchanges(user, FLOOD_EXCHANGES) for user in FLOODERS}
    quiet = exchanges(QUIET, QUIET_EXCHANGES)
    async with (
        serving_everything(shared, tmp_path) as stack,
        AsyncMemstreamProducer(
            stack.settings.broker.bootstrap,
            topic_prefix=stack.settings.broker.topic_prefix,
            idempotent=False,  # the embedded broker (Tansu) hands out no producer ids
        ) as producer,
        AsyncRecallClient(stack.url, api_key=API_KEY) as memory,
    ):
        container = stack.running.container
        for n in range(FLOOD_EXCHANGES * 2):
            for user in FLOODERS:
                await producer.publish(flood[user][n])
        await producer.flush()
        # A message of a flooding user, written alone (flush): diverted behind its backlog.
        held = await producer.publish_turn(
            user_id=FLOODERS[0],
            session_id="s1",
            seq=2 * FLOOD_EXCHANGES,
            text="Remember: the acme locker code is 4711.",
            flush=True,
        )
        place = verify(held.token, FLOODERS[0], now_ms=int(time.time() * 1000), max_age_ms=10**9)

        async def held_on_ledger() -> bool:
            diverted = await container.tree.diverted(FLOODERS[0])
            return (place.partition, place.offset) in diverted

        watching = asyncio.create_task(polled(held_on_ledger, QUIET_DEADLINE_S, "the diversion"))
        for event in quiet:
            await producer.publish(event)
        await producer.flush()

        quiet_ids = sorted(str(e["event_id"]) for e in quiet)

        async def quiet_done() -> bool:
            return sorted(await sources_of_l1s(container, QUIET)) == quiet_ids

        quiet_s = await polled(quiet_done, QUIET_DEADLINE_S, "globex's L1s")
        # The backlog is still there: acme's ledger holds records, its L1s are not all in.
        waiting = {u: len(await container.tree.diverted(u)) for u in FLOODERS}
        acme_written_then = sum([len(await sources_of_l1s(container, u)) for u in FLOODERS])
        await watching  # the flushed acme message was diverted (on the ledger)

        answer = await memory.recall(
            FLOODERS[0], "What is the locker code?", after=held, wait_ms=WAIT_MS
        )
        cited_when_answered = {s for m in answer.memories for s in m.source_ids}

        async def drained() -> bool:
            return not any([await container.tree.diverted(u) for u in FLOODERS])

        await polled(drained, DRAIN_DEADLINE_S, "acme's backlog")
        cited = {u: await sources_of_l1s(container, u) for u in FLOODERS}
        overflow = await topic_values(stack.settings.broker.bootstrap, container.catalog.overflow)

    assert quiet_s < QUIET_DEADLINE_S
    # globex did not wait for acme's backlog: most of it was not written yet.
    assert acme_written_then < FLOOD_EXCHANGES * len(FLOODERS), (quiet_s, acme_written_then)
    assert sum(waiting.values()) > 0  # it waited in the overflow
    # What waited there was the turns' places in the turns log, never their words.
    assert overflow and not [v for v in overflow if b"acme asks" in v or b"locker" in v]
    assert {json.loads(v)["type"] for v in overflow} == {"turns_places.v1"}
    # The receipt of a diverted turn answered only once the overflow had written it.
    assert not answer.pending and held.event_id in cited_when_answered
    for user in FLOODERS:
        expected = [str(e["event_id"]) for e in flood[user]]
        if user == FLOODERS[0]:
            expected.append(held.event_id)
        assert sorted(cited[user]) == sorted(expected)  # every turn in one L1, none twice
