"""What memstream asks of the broker: publish records, confirmed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from memstream.contracts.records import Outbound


class Publisher(Protocol):
    async def publish(self, events: Sequence[Outbound]) -> None:
        """Return once the broker has acknowledged every event."""
        ...
