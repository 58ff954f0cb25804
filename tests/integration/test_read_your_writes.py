"""Read-your-writes on the real broker and stores: a message remembered in an agent's turn is
recalled in the same turn, and one held for its reply is reported pending with its id; with
a turns topic per tenant, a token waits on the mark of its own topic's partition."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from aiokafka.partitioner import DefaultPartitioner
from pydantic import SecretStr

from memstream.adapters.kafka.admin import ensure_topics
from memstream.client import AsyncMemstreamProducer, AsyncRecallClient, RecallError
from memstream.contracts.catalog import load_catalog
from memstream.domain.write_token import WritePosition, issue
from memstream.settings import Settings

from .sdk_stack import API_KEY, serving_everything

pytestmark = pytest.mark.integration

USER = "ryw-ann"
TOKEN_KEY = "integration-token-key"
# The bound of the wait: a deadline for a loaded test machine, not a pause.
WAIT_MS = 60_000


async def test_remember_then_recall_in_one_agent_turn(settings: Settings, tmp_path: Path) -> None:
    keyed = settings.model_copy(
        update={"api_max_wait_ms": WAIT_MS, "api_write_token_key": SecretStr(TOKEN_KEY)}
    )
    async with (
        serving_everything(keyed, tmp_path) as stack,
        AsyncMemstreamProducer(
            stack.settings.broker.bootstrap,
            topic_prefix=stack.settings.broker.topic_prefix,
            idempotent=False,  # the embedded broker (Tansu) hands out no producer ids
            write_token_key=TOKEN_KEY,
        ) as producer,
        AsyncRecallClient(stack.url, api_key=API_KEY) as memory,
    ):
        said = await producer.publish_turn(
            user_id=USER,
            session_id="s1",
            seq=0,
            text="Remember this: my locker code at the gym is 4711.",
            flush=True,
        )
        answer = await memory.recall(USER, "What is my locker code?", after=said, wait_ms=WAIT_MS)
        # The segmenter of this process wakes the API's waiting reads after each mark.
        [wakes] = stack.running.container.progress_listeners
        [leaf] = [m for m in answer.memories if said.event_id in m.source_ids]
        one = await memory.memory(USER, leaf.id, after=said, wait_ms=WAIT_MS)

        # The other reads of the tree wait too: the fact, the entity, at once.
        moved = await producer.publish_turn(
            user_id=USER,
            session_id="s1",
            seq=1,
            text="My sister Ines moved to Lisbon.",
            flush=True,
        )
        facts = await memory.facts(USER, after=moved, wait_ms=WAIT_MS)
        entities = await memory.entities(USER, after=moved, wait_ms=WAIT_MS)
        lisbon = await memory.entity(USER, "Lisbon", after=moved, wait_ms=WAIT_MS)

        held = await producer.publish_turn(
            user_id=USER, session_id="s1", seq=2, text="Also, my bike is the blue one."
        )
        waiting = await memory.recall(USER, "What colour is my bike?", after=held, wait_ms=WAIT_MS)

        forged = issue(USER, WritePosition(0, 0, int(time.time() * 1000)), b"not the key")
        with pytest.raises(RecallError) as refused:
            await memory.recall(USER, "anything", after=forged)
        with pytest.raises(RecallError) as foreign:
            await memory.recall("ryw-bo", "anything", after=said)

    assert getattr(wakes, "__name__", None) == "progressed"
    cited = {s for m in answer.memories for s in m.source_ids}
    assert not answer.pending and said.event_id in cited
    assert "4711" in answer.as_prompt()
    assert one is not None and not one.pending and said.event_id in one.source_ids
    assert facts is not None and not facts.pending
    assert "Lisbon" in {f.value for f in facts.facts if f.attribute == "lives_in"}
    assert not entities.pending and "lisbon" in {e.key for e in entities.entities}
    assert lisbon is not None and not lisbon.pending
    assert waiting.pending and waiting.pending_reason == "awaiting_reply"
    assert waiting.held_messages == [held.event_id]
    assert refused.value.status == 422 and "after" in str(refused.value.detail)
    assert foreign.value.status == 403


TENANT_USER = "acme:ann"
# Deadline of a read that must stay pending: it waits this long, then says so.
SHORT_WAIT_MS = 500


def partition_of(user: str, partitions: int) -> int:
    """The partition the producer's partitioner puts `user`'s records in (murmur2 of the key,
    as aiokafka's, Java's and Faust's)."""
    every = list(range(partitions))
    return int(DefaultPartitioner()(user.encode(), every, every))


async def test_with_a_turns_topic_per_tenant_a_token_waits_on_its_own_topics_mark(
    settings: Settings, tmp_path: Path
) -> None:
    per_tenant = settings.model_copy(
        update={
            "turns_topic_per_tenant": "acme",
            "api_max_wait_ms": WAIT_MS,
            "api_write_token_key": SecretStr(TOKEN_KEY),
        }
    )
    catalog = load_catalog(per_tenant.broker.topic_prefix)
    routing = per_tenant.broker.turns_routing(catalog.turns.name)
    await ensure_topics(per_tenant.broker.bootstrap, routing.specs(catalog.turns))
    acme_topic = routing.topic_for(TENANT_USER)
    tenant_partition = partition_of(TENANT_USER, catalog.turns.partitions)
    # A user of the shared topic whose partition the tenant's user has not in its topic.
    shared_user = next(
        user
        for user in (f"ryw-bo{i}" for i in range(100))
        if partition_of(user, catalog.turns.partitions) != tenant_partition
    )
    shared_partition = partition_of(shared_user, catalog.turns.partitions)
    async with (
        serving_everything(per_tenant, tmp_path) as stack,
        AsyncMemstreamProducer(
            stack.settings.broker.bootstrap,
            topic_prefix=stack.settings.broker.topic_prefix,
            idempotent=False,  # the embedded broker (Tansu) hands out no producer ids
            write_token_key=TOKEN_KEY,
            tenant_topics=routing.tenants,
        ) as producer,
        AsyncRecallClient(stack.url, api_key=API_KEY) as memory,
    ):
        tree = stack.running.container.tree
        said = await producer.publish_turn(
            user_id=TENANT_USER,
            session_id="s1",
            seq=0,
            text="Remember this: my locker code at the gym is 4711.",
            flush=True,
        )
        answer = await memory.recall(
            TENANT_USER, "What is my locker code?", after=said, wait_ms=WAIT_MS
        )
        theirs = await producer.publish_turn(
            user_id=shared_user, session_id="s1", seq=0, text="My bike is the blue one.", flush=True
        )
        bike = await memory.recall(shared_user, "Which bike?", after=theirs, wait_ms=WAIT_MS)
        marks = {
            "shared": await tree.progress([tenant_partition, shared_partition]),
            "acme": await tree.progress([tenant_partition, shared_partition], acme_topic),
        }
        now_ms = int(time.time() * 1000)
        key = TOKEN_KEY.encode()
        # Offset 0 of the shared topic's partition N: acme's partition N moved past it.
        shared_n = issue(shared_user, WritePosition(tenant_partition, 0, now_ms), key)
        not_passed_by_acme = await memory.recall(
            shared_user, "anything", after=shared_n, wait_ms=SHORT_WAIT_MS
        )
        # And offset 0 of acme's partition M: the shared topic's partition M moved past it.
        acme_m = issue(TENANT_USER, WritePosition(shared_partition, 0, now_ms, acme_topic), key)
        not_passed_by_shared = await memory.recall(
            TENANT_USER, "anything", after=acme_m, wait_ms=SHORT_WAIT_MS
        )
        # A token of the shared topic for acme's user (issued before acme had its topic).
        before_the_list = issue(TENANT_USER, WritePosition(tenant_partition, 0, now_ms), key)
        with pytest.raises(RecallError) as moved:
            await memory.recall(TENANT_USER, "anything", after=before_the_list)

    assert said.token.startswith("mst2.") and theirs.token.startswith("mst1.")
    assert not answer.pending and said.event_id in {
        s for m in answer.memories for s in m.source_ids
    }
    assert "4711" in answer.as_prompt()
    assert not bike.pending and theirs.event_id in {s for m in bike.memories for s in m.source_ids}
    # What makes the two pending reads meaningful: each partition moved on in one topic only.
    assert marks["acme"].get(tenant_partition, 0) > 0 and tenant_partition not in marks["shared"]
    assert marks["shared"].get(shared_partition, 0) > 0 and shared_partition not in marks["acme"]
    for pending in (not_passed_by_acme, not_passed_by_shared):
        assert pending.pending and pending.pending_reason == "not_yet_processed"
    assert moved.value.status == 422 and "write_token_moved" in str(moved.value.detail)
