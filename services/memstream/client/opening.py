"""Sealed records on the feed, as the SDK sees them: what the API answers when asked to open
them (`POST /v1/feed:open`), and what a feed needs to be given to read them.

memstream seals the records of its topics that carry a user's words under that user's data
key, which a forget deletes (docs/forget-everywhere.md). The keys stay with the API, so a
consumer opens records through it: `MemoryFeed(..., opener=AsyncRecallClient(url, api_key=k))`.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict

SEALED_TYPE = "sealed.v1"


class SealedFeedError(RuntimeError):
    """A sealed record came and the feed was given nothing to open it with."""

    def __init__(self, topic: str) -> None:
        super().__init__(
            f"{topic} carries sealed records (MEMSTREAM_SEAL_TOPICS): give the feed an opener, "
            "MemoryFeed(..., opener=AsyncRecallClient(api_url, api_key=...)), which asks the "
            "recall API to open them"
        )


class OpenedRecord(BaseModel):
    """One record as the API answered it: `opened` (`value` is what was published), `plain`
    (it was not sealed), `forgotten` (its user's key is gone), `invalid` (`reason` says why)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    status: Literal["opened", "plain", "forgotten", "invalid"]
    value: dict[str, Any] | None = None
    reason: str | None = None


class OpenedRecords(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    records: list[OpenedRecord]


class RecordOpener(Protocol):
    async def open_records(self, records: list[dict[str, Any]]) -> list[OpenedRecord]:
        """Each record opened (or why not), in the order given."""
        ...
