"""The fast hostile-input suite: any record ends as an L1, a duplicate or one dead letter.

Generated records go through the edge exactly as the agent runs them (decode, validate,
admit, dead-letter, deliver) into a real segmenter over the in-memory fakes. Nothing may
escape as an exception, every dead letter must fit the producer's request limit and the
dead-letter schema, and every valid turn must be stored or be a counted duplicate.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry
from tests.unit.segmenter.test_handler import rig

from memstream.contracts.catalog import load_catalog
from memstream.contracts.codec import decode_input
from memstream.contracts.records import Consumed, Outbound, RawEvent, encode_value
from memstream.domain.models import Level, Turn
from memstream.edges.faust.app import consume_batch, rejection_counter
from memstream.edges.faust.dead_letters import DeadLetters
from memstream.edges.faust.decoding import Rejected, record_decoder, too_far_ahead
from memstream.metrics import DLQ_REASONS, Metrics

from .hostile_records import records

pytestmark = pytest.mark.hostile

CATALOG = load_catalog()
PRODUCER_LIMIT = 1024 * 1024  # aiokafka's default max_request_size
decode = record_decoder(CATALOG.turns, decode_input, too_far_ahead(timedelta(days=1)))


class WireChecked:
    """A publisher that turns each letter into the bytes the producer would send."""

    def __init__(self) -> None:
        self.letters: list[dict[str, object]] = []

    async def publish(self, events: Sequence[Outbound]) -> None:
        for event in events:
            wire = encode_value(event.value)  # raises on what UTF-8 cannot carry
            event.key.encode()
            assert len(wire) < PRODUCER_LIMIT // 2
            assert CATALOG.dlq.validate(wire) == []
            self.letters.append(event.value)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=records())
def test_every_record_decodes_or_gives_one_letter_that_fits(value: bytes) -> None:
    raw = RawEvent(value, "memstream.turns.v1", 0, 1)
    decoded = decode(raw)
    if isinstance(decoded, Rejected):
        letter = DeadLetters(WireChecked(), "dlq").letter(raw, decoded.reason, decoded.field_path)
        wire = encode_value(letter.value)
        assert len(wire) < PRODUCER_LIMIT // 2 and CATALOG.dlq.validate(wire) == []
    else:
        assert isinstance(decoded, Consumed)
        if isinstance(decoded.event, Turn):  # what is admitted can be carried on
            json.dumps(decoded.event.metadata, ensure_ascii=False).encode()
            decoded.event.text.encode()
            decoded.event.user_id.encode()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=st.lists(records(oversize=False), min_size=1, max_size=25))
async def test_a_batch_of_anything_ends_stored_duplicate_or_dead_lettered(
    batch: list[bytes],
) -> None:
    r = rig()
    published = WireChecked()
    letters = DeadLetters(published, "dlq")
    metrics = Metrics(CollectorRegistry())
    raws = [RawEvent(v, "memstream.turns.v1", 0, i) for i, v in enumerate(batch)]

    await consume_batch(
        raws,
        decode,
        r.segmenter.handle_batch,
        letters.send,
        rejection_counter(metrics, ingested=True),
        backoff_s=(0.0, 0.0),
        retry_budget_s=0.1,
    )

    per_record = Counter(str(letter["letter_id"]) for letter in published.letters)
    assert all(n == 1 for n in per_record.values()), per_record  # at most one letter each
    sample = metrics.registry.get_sample_value
    dlq_total = sum(sample("memstream_dlq_events_total", {"reason": r}) or 0 for r in DLQ_REASONS)
    assert dlq_total == len(published.letters)  # every letter counted
    assert not any(
        str(letter["reason"]).startswith("handler failed") for letter in published.letters
    )

    stored: set[tuple[str, str]] = set()
    pending: set[tuple[str, str]] = set()
    for user in {str(t.event.user_id) for t in _admitted_turns(raws)}:
        for node in await r.tree.get_many(user, await r.tree.level_ids(user, Level.SEGMENT)):
            stored |= {(user, source) for source in node.source_ids}
        state = await r.tree.load_state(user)
        pending |= {(user, str(t["event_id"])) for t in (state or {}).get("pending", [])}
    for turn in _admitted_turns(raws):
        key = (turn.event.user_id, turn.event.event_id)
        assert key in stored or key in pending, key  # stored, waiting for its reply, or a dup
        assert f"memstream.turns.v1/0/{turn.raw.offset}" not in per_record


def _admitted_turns(raws: list[RawEvent]) -> list[Consumed[Turn]]:
    decoded = [decode(raw) for raw in raws]
    return [d for d in decoded if isinstance(d, Consumed) and isinstance(d.event, Turn)]  # type: ignore[misc]
