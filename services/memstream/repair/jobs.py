"""Repairs asked for through the API: one task per user in the process that was asked, and
a status any process can answer from the stores.

The repair itself keeps no state (what is already present is passed over), so the status is
read where it is true: while this process runs the user's repair, its progress; otherwise
the user's node counts per level in the tree and in the index, "done" when they agree. A
repair cut short by a restart shows as "needed", and asking again resumes it.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Literal

from memstream.domain.divergence import levels_differing
from memstream.domain.models import Level
from memstream.ports.repair import IndexScan, TreeRestore
from memstream.repair.restore import RepairProgress, StoreRepair

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RepairStatus:
    status: Literal["running", "done", "needed", "unknown_user"]
    tree: dict[int, int]  # nodes per level in the tree
    index: dict[int, int]  # points per level in the index
    progress: RepairProgress | None  # while this process runs it


class RepairJobs:
    def __init__(self, repair: StoreRepair, tree: TreeRestore, index: IndexScan) -> None:
        self._repair = repair
        self._tree = tree
        self._index = index
        self._running: dict[str, tuple[asyncio.Task[RepairProgress], RepairProgress]] = {}

    async def start(self, user_id: str) -> RepairStatus:
        """Start the user's repair here unless it runs already; "unknown_user" when neither
        store holds anything of the user (nothing to repair, nothing started)."""
        if user_id in self._running:
            return await self.status(user_id)
        found = await self.status(user_id)
        if found.status == "unknown_user":
            return found
        progress = RepairProgress(user_id)

        def follow(p: RepairProgress) -> None:
            self._running[user_id] = (self._running[user_id][0], p)

        task = asyncio.create_task(self._repair.repair(user_id, follow), name=f"repair {user_id}")
        self._running[user_id] = (task, progress)
        task.add_done_callback(lambda t: self._finished(user_id, t))
        return await self.status(user_id)

    def _finished(self, user_id: str, task: asyncio.Task[RepairProgress]) -> None:
        self._running.pop(user_id, None)
        if not task.cancelled() and task.exception() is not None:
            log.error("repair of %s failed", user_id, exc_info=task.exception())

    async def status(self, user_id: str) -> RepairStatus:
        tree = {int(lv): await self._tree.count(user_id, lv) for lv in Level}
        index = {int(lv): await self._index.count(user_id, lv) for lv in Level}
        running = self._running.get(user_id)
        if running is not None:
            return RepairStatus("running", tree, index, running[1])
        if not any(tree.values()) and not any(index.values()):
            return RepairStatus("unknown_user", tree, index, None)
        agree = not levels_differing(tree, index)
        return RepairStatus("done" if agree else "needed", tree, index, None)

    async def close(self) -> None:
        """Stop the repairs under way (a later request resumes them)."""
        tasks = [t for t, _ in self._running.values()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
