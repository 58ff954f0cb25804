"""What sealing a user's words on the topics needs: the users' data keys
(`contracts.sealed`, docs/forget-everywhere.md)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol


class DataKeys(Protocol):
    async def data_keys_for_writing(self, user_ids: Collection[str]) -> dict[str, bytes | None]:
        """Each user's key, made for a user without a tombstone that has none yet; None for
        a forgotten user (nothing of it may be written)."""
        ...

    async def data_keys(self, user_ids: Collection[str]) -> dict[str, bytes | None]:
        """Each user's key as stored, None when there is none (never made, or forgotten)."""
        ...
