"""What the operator's routes read across users: a search by id prefix, and one user's
overview (`domain.user_overview`).

The tree store keeps a registry of its users, written in the transaction that gives a user
state and removed with its other keys on a forget; `register_users` fills it for users
written before it existed.
"""

from __future__ import annotations

from typing import Protocol

from memstream.domain.user_overview import UserListing, UserOverview


class UserDirectory(Protocol):
    async def users(
        self, prefix: str = "", after: str | None = None, limit: int = 100
    ) -> list[UserListing]:
        """Up to `limit` users whose id starts with `prefix`, sorted by id (code point
        order), only those after `after` when given."""
        ...

    async def user_overview(self, user_id: str) -> UserOverview | None:
        """The user's counts, span, pending windows and degraded nodes; None for a user
        the store does not know."""
        ...

    async def register_users(self) -> int:
        """List in the registry every user holding state (a one-off scan for stores written
        before the registry); returns how many users were added."""
        ...
