"""A turns topic per tenant on the real broker and stores (`MEMSTREAM_TURNS_TOPIC_PER_TENANT`,
docs/fair-share.md): a tenant over its share is paused, not diverted.

globex sends a turn every 100 ms throughout; acme sends a backlog at once. acme's topic is
paused while globex has traffic, so globex's L1s are written while most of acme's backlog
waits in its topic (the group's offsets there not past it). The worker is then stopped and
started again with acme still paused: once globex stops, acme is resumed and every one of
its turns has its L1, none twice, each user's in order; each record was in its tenant's
topic, the shared one holding none.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from memstream.adapters.kafka.admin import ensure_topics
from memstream.adapters.kafka.lag import consumer_lag
from memstream.client import AsyncMemstreamProducer
from memstream.client.events import turn_event
from memstream.contracts.catalog import load_catalog
from memstream.settings import Settings
from memstream.wiring.container import Container

from .sdk_stack import serving_everything
from .test_fair_share import polled
from .test_forget_everywhere import topic_values

pytestmark = pytest.mark.integration

FLOODERS = [f"acme:u{i}" for i in range(4)]
FLOOD_TURNS = 250  # per flooding user: 1,000 in all
QUIET = "globex:bo"
# globex keeps within its share: 2 turns a second against 20, and what piles up while the
# worker restarts (a few seconds of it) within the burst.
QUIET_EVERY_S = 0.5
SHARE_TURNS_S = 20.0
BURST = 60.0
# Deadlines for a loaded test machine, not pauses: each is polled.
QUIET_DEADLINE_S = 30.0
DRAIN_DEADLINE_S = 120.0


def turn(user: str, seq: int) -> dict[str, object]:
    # A message between people: an L1 of its own at once, named by its user and seq.
    return turn_event(
        user_id=user,
        session_id="s1",
        seq=seq,
        text=f"{user} says {seq}",
        role="other",
        speaker="Ana",
        event_id=f"{user}-{seq}",
    )


async def send_quiet(producer: AsyncMemstreamProducer, sent: list[str]) -> None:
    """globex's turns, one every `QUIET_EVERY_S`, until cancelled."""
    seq = 0
    while True:
        event = turn(QUIET, seq)
        await producer.publish(event)
        await producer.flush()
        sent.append(str(event["event_id"]))
        seq += 1
        await asyncio.sleep(QUIET_EVERY_S)


async def written(container: Container, users: list[str]) -> int:
    return sum([len(await sources_of_l1s(container, u)) for u in users])


async def sources_of_l1s(container: Container, user: str) -> list[str]:
    """Every message id cited by the user's L1s (all of them), one entry per citation."""
    return [s for sources in await _l1_sources(container, user) for s in sources]


async def test_a_paused_tenant_waits_in_its_topic_across_a_restart_and_then_arrives_whole(
    settings: Settings, tmp_path: Path
) -> None:
    per_tenant = settings.model_copy(
        update={
            "turns_topic_per_tenant": "acme,globex",
            "segmenter_tenant_share_turns_s": SHARE_TURNS_S,
            "segmenter_tenant_share_burst": BURST,
            # Paused for as long as globex has traffic: no resume for its longest wait.
            "segmenter_overflow_longest_wait_s": 600.0,
        }
    )
    catalog = load_catalog(per_tenant.broker.topic_prefix)
    routing = per_tenant.broker.turns_routing(catalog.turns.name)
    bootstrap = per_tenant.broker.bootstrap
    await ensure_topics(bootstrap, routing.specs(catalog.turns))
    acme_topic = routing.topic_for(FLOODERS[0])
    flood = {u: [turn(u, seq) for seq in range(FLOOD_TURNS)] for u in FLOODERS}
    quiet_sent: list[str] = []
    async with AsyncMemstreamProducer(
        bootstrap,
        topic_prefix=per_tenant.broker.topic_prefix,
        idempotent=False,  # the embedded broker (Tansu) hands out no producer ids
        tenant_topics=routing.tenants,
    ) as producer:
        async with serving_everything(per_tenant, tmp_path) as stack:
            container = stack.running.container
            group = stack.settings.broker.consumer_group
            quiet = asyncio.create_task(send_quiet(producer, quiet_sent))
            await polled(lambda: _at_least(container, QUIET, 3), QUIET_DEADLINE_S, "globex")
            for n in range(FLOOD_TURNS):
                for user in FLOODERS:
                    await producer.publish(flood[user][n])
            await producer.flush()
            # globex keeps being written while acme's backlog waits.
            target = len(quiet_sent) + 10
            await polled(lambda: _at_least(container, QUIET, target), QUIET_DEADLINE_S, "globex")
            lag = await consumer_lag(bootstrap, group, [acme_topic])
            acme_then = await written(container, FLOODERS)
        # Stopped with acme paused; started again, still beside globex's traffic.
        async with serving_everything(per_tenant, tmp_path) as stack:
            container = stack.running.container
            target = len(quiet_sent) + 5
            await polled(lambda: _at_least(container, QUIET, target), QUIET_DEADLINE_S, "globex")
            acme_beside = await written(container, FLOODERS)
            quiet.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await quiet
            every = FLOOD_TURNS * len(FLOODERS)

            async def acme_done() -> bool:
                return await written(container, FLOODERS) >= every

            await polled(acme_done, DRAIN_DEADLINE_S, "acme's backlog")

            async def globex_done() -> bool:
                return await written(container, [QUIET]) >= len(quiet_sent)

            await polled(globex_done, QUIET_DEADLINE_S, "globex's last turns")
            cited = {u: await sources_of_l1s(container, u) for u in [*FLOODERS, QUIET]}
            l1s = {u: await _l1_sources(container, u) for u in FLOODERS}
        shared = await topic_values(bootstrap, catalog.turns)

    # acme waited: its backlog was not written (each process let its burst and a fetch of
    # each partition through, a fetch being at least one of the producer's record batches,
    # some 60 turns here: without pauses it would all be, in a few seconds), nor committed
    # past.
    assert acme_then < every // 2, acme_then
    assert acme_beside < every - 100, acme_beside
    # The group's offsets in acme's topic stayed behind its backlog (what a pause dropped
    # would have been stepped over and committed past; the end below finds it all).
    assert sum(lag.values()) >= every // 2, (lag, acme_then)
    for user in FLOODERS:
        expected = [str(e["event_id"]) for e in flood[user]]
        assert sorted(cited[user]) == sorted(expected)  # every turn in one L1, none twice
        # Each user's order held: each L1 is a run of consecutive turns.
        for sources in l1s[user]:
            seqs = sorted(int(s.rsplit("-", 1)[1]) for s in sources)
            assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), (user, seqs)
    assert sorted(cited[QUIET]) == sorted(quiet_sent)
    # Every record was in its tenant's topic: the shared one holds none of theirs.
    assert not [v for v in shared if b"acme:" in v or b"globex:" in v]


async def _at_least(container: Container, user: str, count: int) -> bool:
    return len(await sources_of_l1s(container, user)) >= count


async def _l1_sources(container: Container, user: str) -> list[list[str]]:
    from memstream.domain.models import Level

    ids = await container.tree.level_ids(user, Level.SEGMENT, limit=100_000)
    return [list(node.source_ids) for node in await container.tree.get_many(user, ids)]
