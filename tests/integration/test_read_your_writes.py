"""Read-your-writes on the real broker and stores: a message remembered in an agent's turn is
recalled in the same turn, and one held for its reply is reported pending with its id."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from pydantic import SecretStr

from memstream.client import AsyncMemstreamProducer, AsyncRecallClient, RecallError
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
