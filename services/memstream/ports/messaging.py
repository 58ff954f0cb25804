"""What memstream asks of the broker: publish records, confirmed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from memstream.contracts.records import Forwarded, Outbound


class Publisher(Protocol):
    async def publish(self, events: Sequence[Outbound]) -> None:
        """Return once the broker has acknowledged every event."""
        ...


class Forwarder(Protocol):
    async def forward(self, records: Sequence[Forwarded]) -> None:
        """Send consumed records on as they came; return once the broker has acknowledged
        every one."""
        ...
