"""The operator's view across users: search by id prefix, paged, and one user's overview.

The cursor is the last id of the page, encoded so clients treat it as opaque; the next page
starts after it, so users added or forgotten meanwhile shift nothing already seen.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from memstream.domain.user_overview import UserListing, UserOverview
from memstream.ports import UserDirectory
from memstream.recall.service import InvalidCursor

# Longer than any user id the API accepts, in bytes once encoded.
_MAX_CURSOR_CHARS = 2048


@dataclass(frozen=True, slots=True)
class UserPage:
    items: list[UserListing]
    next_cursor: str | None


def encode_cursor(last_user_id: str) -> str:
    return base64.urlsafe_b64encode(last_user_id.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> str:
    """The user id `cursor` names; InvalidCursor for one `encode_cursor` could not make."""
    if not cursor or len(cursor) > _MAX_CURSOR_CHARS:
        raise InvalidCursor("cursor is not one this API issued")
    try:
        raw = base64.urlsafe_b64decode((cursor + "=" * (-len(cursor) % 4)).encode("ascii"))
        user_id = raw.decode()
    except (ValueError, binascii.Error, UnicodeError) as exc:
        raise InvalidCursor("cursor is not one this API issued") from exc
    if not user_id or encode_cursor(user_id) != cursor:
        raise InvalidCursor("cursor is not one this API issued")
    return user_id


class UserSearch:
    def __init__(self, directory: UserDirectory) -> None:
        self._directory = directory

    async def page(self, prefix: str, limit: int, cursor: str | None) -> UserPage:
        if limit <= 0:
            raise ValueError("limit must be positive")
        after = decode_cursor(cursor) if cursor is not None else None
        # One user beyond the page tells whether there is a next one.
        found = await self._directory.users(prefix, after, limit + 1)
        items = found[:limit]
        more = len(found) > limit
        return UserPage(items, encode_cursor(items[-1].user_id) if more else None)

    async def overview(self, user_id: str) -> UserOverview | None:
        return await self._directory.user_overview(user_id)
