"""Reading what the two stores hold, for `domain.divergence` to judge (a metric, readiness).

Cheap on purpose, since it runs on a timer and behind readiness: the index's point count,
whether the tree has any user, and for a sample of users their node counts per level from
both stores (sorted-set cardinalities and filtered counts on the tenant index).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from memstream.domain.divergence import Divergence, divergence
from memstream.domain.models import Level
from memstream.ports.repair import IndexScan, TreeRestore


async def check_stores(tree: TreeRestore, index: IndexScan, sample_users: int) -> Divergence:
    tree_users = await tree.users_with_nodes(sample_users)
    points = await index.total()
    users = set(tree_users)
    if points:
        users.update(await index.users_with_points(sample_users))
    per_user = {}
    for user in sorted(users)[: 2 * sample_users]:
        in_tree = {int(lv): await tree.count(user, lv) for lv in Level}
        in_index = {int(lv): await index.count(user, lv) for lv in Level}
        per_user[user] = (in_tree, in_index)
    return divergence(bool(tree_users), points, per_user)


class DivergenceWatch:
    """The latest check, done again when older than `every_s`: what readiness and the
    metric read, so that probes cost one check per interval whatever their number."""

    def __init__(
        self,
        check: Callable[[], Awaitable[Divergence]],
        every_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._check = check
        self._every = every_s
        self._clock = clock
        self._last: tuple[float, Divergence] | None = None

    async def latest(self) -> Divergence:
        now = self._clock()
        if self._last is None or now - self._last[0] >= self._every:
            self._last = (now, await self._check())
        return self._last[1]

    async def stores_agree(self) -> bool:
        return (await self.latest()).stores_agree
