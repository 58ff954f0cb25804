"""Reading what the two stores hold, for `domain.divergence` to judge (a metric, readiness).

Cheap on purpose, since it runs on a timer and behind readiness: the index's point count,
whether the tree has any user, and for a sample of users their node counts per level from
both stores (sorted-set cardinalities and filtered counts on the tenant index).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from memstream.domain.divergence import Divergence, confirmed, divergence
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


# How soon an empty tree beside an index is looked at again, to tell a loss from a write
# between its two stores (milliseconds apart).
CONFIRM_S = 1.0


class DivergenceWatch:
    """The latest check, done again when older than `every_s`: what readiness and the
    metric read, so that probes cost one check per interval whatever their number.

    The users it reports as differing are those found with the same gap in two checks in a
    row (`domain.divergence.confirmed`): a write between the two stores is not a loss.

    Readiness fails at once on an empty index beside a tree: the write path indexes before it
    commits to Redis, so a healthy deployment never shows it. An empty tree beside an index
    it does show for a moment (the first write of a new deployment, the forget of its last
    user: Redis first, then Qdrant), so that fails readiness only when two checks in a row
    find it; the second comes `CONFIRM_S` after the first, not a whole interval, so a lost
    Redis too fails readiness within an interval (and that second).
    """

    def __init__(
        self,
        check: Callable[[], Awaitable[Divergence]],
        every_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._check = check
        self._every = every_s
        self._clock = clock
        self._last: tuple[float, Divergence] | None = None  # as reported
        self._found_before: Divergence | None = None  # the latest check as found
        self._tree_empty_before = False  # what the check before the latest found

    async def latest(self) -> Divergence:
        now = self._clock()
        if self._last is None or now - self._last[0] >= self._due_after(self._last[1]):
            if self._last is not None:
                self._tree_empty_before = self._last[1].tree_empty
            found = await self._check()
            earlier, self._found_before = self._found_before, found
            self._last = (now, confirmed(earlier, found))
        return self._last[1]

    def _due_after(self, last: Divergence) -> float:
        unconfirmed = last.tree_empty and not self._tree_empty_before
        return min(CONFIRM_S, self._every) if unconfirmed else self._every

    async def stores_agree(self) -> bool:
        found = await self.latest()
        if found.tree_empty:
            return not self._tree_empty_before
        return found.stores_agree
