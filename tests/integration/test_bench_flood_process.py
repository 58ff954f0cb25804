"""The fairness benchmark's `--flood-process`: the flood sent from a process of its own
reaches the real broker whole and in order, as the one sent from the event loop does."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from memstream.client.events import turn_event
from memstream.contracts.catalog import load_catalog
from memstream.contracts.records import encode_value
from memstream.settings import Settings
from memstream_lab.bench.fairness import ELSEWHERE, flood_topic_of
from memstream_lab.bench.flood_publisher import flood_sender
from memstream_lab.bench.turns_log import places_of

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("own_process", [True, False], ids=["own-process", "event-loop"])
async def test_every_flood_record_is_sent_in_order(settings: Settings, own_process: bool) -> None:
    bootstrap = settings.broker.bootstrap
    topic = await flood_topic_of(bootstrap, elsewhere=True)
    assert topic == ELSEWHERE
    user = f"acme:flood-{uuid.uuid4().hex[:8]}"
    records = [(user.encode(), encode_value(_said(user, n))) for n in range(40)]

    async with flood_sender(records, bootstrap, topic, 400.0, own_process=own_process) as send:
        sent = await send()
    assert sent.records == len(records)
    assert (sent.cpu_seconds is not None) == own_process

    places = await places_of(bootstrap, topic, {(user, f"f{n}") for n in range(40)})
    assert len(places) == len(records)
    offsets = [places[user, f"f{n}"] for n in range(40)]
    assert offsets == sorted(offsets) and len({p for p, _ in offsets}) == 1  # one key


async def test_a_flood_process_that_cannot_send_says_so(settings: Settings) -> None:
    records = [(b"acme:x", encode_value(_said("acme:x", 0)))]
    with pytest.raises(RuntimeError, match="flood's process"):
        async with flood_sender(
            records, "127.0.0.1:1", load_catalog().turns.name, 10.0, own_process=True
        ) as send:
            await send()


def _said(user: str, n: int) -> dict[str, Any]:
    return turn_event(user_id=user, session_id="live", seq=n, text=f"turn {n}", event_id=f"f{n}")
