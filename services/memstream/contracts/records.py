"""Records as they cross the broker: one consumed (raw, then decoded), one to publish."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

E = TypeVar("E")


@dataclass(frozen=True, slots=True)
class RawEvent:
    """One consumed record, kept whole so a bad one can be dead-lettered as it came."""

    value: bytes
    topic: str = ""
    partition: int = -1
    offset: int = -1
    timestamp: float | None = None  # the broker's record time, epoch seconds
    headers: tuple[tuple[str, bytes], ...] = ()  # e.g. the W3C trace context (`traceparent`)


@dataclass(frozen=True, slots=True)
class Consumed(Generic[E]):
    """A record decoded once at the edge: the domain event, and the record it came in (for
    its position, broker time and bytes)."""

    event: E
    raw: RawEvent


@dataclass(frozen=True, slots=True)
class Outbound:
    """A JSON value to publish on `topic` under `key` (a user id: it picks the partition)."""

    topic: str
    key: str
    value: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"topic": self.topic, "key": self.key, "value": self.value}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Outbound:
        return cls(doc["topic"], doc["key"], doc["value"])


ORIGIN_HEADER = "memstream-origin"  # on a forwarded record: where it was first consumed


@dataclass(frozen=True, slots=True)
class Forwarded:
    """Bytes sent to another topic under `key` (the overflow keys by tenant, so each tenant
    is one queue); a consumed record's value with `origin`, its place in the topic it came
    from, in the `memstream-origin` header."""

    topic: str
    key: str
    value: bytes
    origin: tuple[int, int, float | None] | None = None  # partition, offset, broker time
    partition: int | None = None  # the topic's partition; None: the key's hash chooses

    def headers(self) -> list[tuple[str, bytes]]:
        if self.origin is None:
            return []
        partition, offset, stamp = self.origin
        at = "" if stamp is None else repr(stamp)
        return [(ORIGIN_HEADER, f"{partition}:{offset}:{at}".encode())]


def at_origin(raw: RawEvent) -> RawEvent:
    """A forwarded record with the place it had in the topic it came from (partition, offset,
    broker time): what ordering, tombstones and freshness are reckoned by. A record without
    the header is returned unchanged."""
    for name, value in raw.headers:
        if name == ORIGIN_HEADER:
            partition, offset, stamp = value.decode().split(":")
            at = float(stamp) if stamp else None
            return RawEvent(raw.value, raw.topic, int(partition), int(offset), at, raw.headers)
    return raw


def encode_value(value: dict[str, Any]) -> bytes:
    """The bytes of a JSON value on the wire: compact, UTF-8."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
