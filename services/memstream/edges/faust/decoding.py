"""Records to domain events, once, at the edge: parse the JSON, validate it, decode it.

A record that fails any of the three is rejected with the reason and the field at fault;
the agent dead-letters it and the handler never sees it. Parsing refuses what memstream
could not carry on (JSON nested too deep, lone surrogates: `catalog.parse_json`), and an
optional admission check refuses events that are valid but unusable now (dated too far in
the future: `too_far_ahead`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from memstream.contracts.catalog import TopicSpec, parse_json
from memstream.contracts.records import Consumed, RawEvent
from memstream.domain.models import ClockTicked, SessionEnded, Turn
from memstream.domain.tenancy import owns

E = TypeVar("E")
Admission = Callable[[Any], "tuple[str, str] | None"]  # (field, reason) when refused


@dataclass(frozen=True, slots=True)
class Rejected:
    """A record that is not a valid event of its topic, and why."""

    raw: RawEvent
    reason: str
    field_path: str | None = None


def record_decoder(
    spec: TopicSpec,
    decode: Callable[[dict[str, Any]], E],
    admit: Admission | None = None,
) -> Callable[[RawEvent], Consumed[E] | Rejected]:
    """Decodes the records of the topic `spec` into events with `decode` (see `codec`);
    with `admit`, a decoded event it refuses is rejected too."""

    def decode_record(raw: RawEvent) -> Consumed[E] | Rejected:
        value, not_json = parse_json(raw.value)
        problems = [not_json] if not_json is not None else spec.validate_parsed(value)
        if problems:
            reason = "; ".join(str(p) for p in problems)
            return Rejected(raw, reason, problems[0].field or None)
        assert isinstance(value, dict)  # a valid value is a JSON object
        try:
            event = decode(value)
        except (ValueError, KeyError, TypeError, OverflowError) as bad:
            return Rejected(raw, f"undecodable event: {bad}")
        refused = admit(event) if admit is not None else None
        if refused is not None:
            field, why = refused
            return Rejected(raw, f"{field}: {why}", field)
        return Consumed(event, raw)

    return decode_record


def too_far_ahead(
    max_ahead: timedelta, clock: Callable[[], datetime] = lambda: datetime.now(UTC)
) -> Admission:
    """Refuses an input event dated more than `max_ahead` after the wall clock.

    Such an event would move its user's watermark into the future: every later session
    would then close its day, week and month again as late data. Refusing it (a dead letter
    the producer can fix and resend) keeps the tree exact; clamping its time would store a
    date the user never wrote. A replay long after the fact may admit what was refused live:
    by then the date is no longer in the future.
    """

    def admit(event: object) -> tuple[str, str] | None:
        if isinstance(event, Turn | SessionEnded):
            field, when = "ts", event.ts
        elif isinstance(event, ClockTicked):
            field, when = "now", event.now
        else:
            return None
        limit = clock() + max_ahead
        if when > limit:
            return field, f"{when.isoformat()} is more than {max_ahead} ahead of the clock"
        return None

    return admit


def in_tenants_topics(
    decoder: Callable[[RawEvent], Consumed[E] | Rejected], tenant_of_topic: Mapping[str, str]
) -> Callable[[RawEvent], Consumed[E] | Rejected]:
    """`decoder`, and a record of a tenant's turns topic (`contracts.tenant_topics`) that
    names a user of another tenant, or of none, rejected: Kafka's ACLs hold a tenant's
    producer to its topic, this holds the topic to the tenant's users."""

    def decode_record(raw: RawEvent) -> Consumed[E] | Rejected:
        result = decoder(raw)
        tenant = tenant_of_topic.get(raw.topic)
        if tenant is None or isinstance(result, Rejected):
            return result
        user = getattr(result.event, "user_id", None)
        if isinstance(user, str) and not owns(tenant, user):
            reason = f"user_id: not a user of the tenant {tenant!r}, whose turns topic this is"
            return Rejected(raw, reason, "user_id")
        return result

    return decode_record
