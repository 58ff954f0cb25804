"""The in-memory `ports.UserDirectory` of `FakeTree`: its users are those with a window
state, as RedisTree's registry lists those its segmenter committed."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from memstream.contracts.codec import decode_state
from memstream.domain.models import Level
from memstream.domain.user_overview import UserListing, UserOverview, pending_windows

if TYPE_CHECKING:
    from memstream.domain.models import StoredNode


class FakeDirectory:
    states: dict[str, str]
    stored: dict[tuple[str, str], StoredNode]
    degraded_nodes: set[tuple[str, str]]
    written: dict[str, float]  # user -> epoch seconds of its last commit with messages

    async def users(
        self, prefix: str = "", after: str | None = None, limit: int = 100
    ) -> list[UserListing]:
        found = sorted(
            u for u in self.states if u.startswith(prefix) and (after is None or u > after)
        )
        return [
            UserListing(u, self._written_at(u), self._count(u, Level.SEGMENT))
            for u in found[: max(limit, 0)]
        ]

    async def user_overview(self, user_id: str) -> UserOverview | None:
        counts = {level: self._count(user_id, level) for level in Level}
        state = self.states.get(user_id)
        if state is None and not any(counts.values()):
            return None
        leaves = sorted(
            (s.node for (u, _), s in self.stored.items() if u == user_id),
            key=lambda n: (n.t_end, n.id),
        )
        leaves = [n for n in leaves if n.level == Level.SEGMENT]
        return UserOverview(
            user_id=user_id,
            counts=counts,
            first_at=leaves[0].t_start if leaves else None,
            last_at=leaves[-1].t_end if leaves else None,
            last_written_at=self._written_at(user_id),
            pending_windows=pending_windows(decode_state(json.loads(state)) if state else None),
            degraded=sum(1 for u, _ in self.degraded_nodes if u == user_id),
        )

    async def register_users(self) -> int:
        return 0  # every user with state is listed already

    def _count(self, user_id: str, level: Level) -> int:
        return sum(1 for (u, _), s in self.stored.items() if u == user_id and s.node.level == level)

    def _written_at(self, user_id: str) -> datetime | None:
        at = self.written.get(user_id)
        return datetime.fromtimestamp(at, UTC) if at is not None else None
