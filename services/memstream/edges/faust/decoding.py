"""Records to domain events, once, at the edge: parse the JSON, validate it, decode it.

A record that fails any of the three is rejected with the reason and the field at fault;
the agent dead-letters it and the handler never sees it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from memstream.contracts.catalog import TopicSpec, parse_json
from memstream.contracts.records import Consumed, RawEvent

E = TypeVar("E")


@dataclass(frozen=True, slots=True)
class Rejected:
    """A record that is not a valid event of its topic, and why."""

    raw: RawEvent
    reason: str
    field_path: str | None = None


def record_decoder(
    spec: TopicSpec, decode: Callable[[dict[str, Any]], E]
) -> Callable[[RawEvent], Consumed[E] | Rejected]:
    """Decodes the records of the topic `spec` into events with `decode` (see `codec`)."""

    def decode_record(raw: RawEvent) -> Consumed[E] | Rejected:
        value, not_json = parse_json(raw.value)
        problems = [not_json] if not_json is not None else spec.validate(value)
        if problems:
            reason = "; ".join(str(p) for p in problems)
            return Rejected(raw, reason, problems[0].field or None)
        assert isinstance(value, dict)  # a valid value is a JSON object
        try:
            return Consumed(decode(value), raw)
        except (ValueError, KeyError, TypeError) as bad:
            return Rejected(raw, f"undecodable event: {bad}")

    return decode_record
