"""What a rebuild has left to do, read from the tree store (for the API, the CLI, metrics).

A rebuild is done when the segmenter has handled every leaf of its job (and committed the
closures of the windows above) and the consolidator has nothing left to do for those
windows: each is current, its fingerprint (children and derivation) the one the job's
derivation gives. Until the leaves are done, every window of the job counts as pending.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from memstream.domain.models import Level
from memstream.domain.nodes import fingerprint, is_current
from memstream.domain.rebuild import RebuildJob
from memstream.ports import NodeReader, RecallReads


@dataclass(frozen=True, slots=True)
class RebuildProgress:
    rebuild_id: str
    # nothing_to_do: no job and no memory of the user (an unknown id, a lost tree): the
    # segmenter passes over a rebuild of a user it holds nothing for, so none will start.
    status: Literal["pending", "done", "nothing_to_do"]
    leaves: int  # in the job (0: the segmenter has not planned it yet)
    leaves_done: int
    leaves_rewritten: int  # of those done, how many were written again
    windows: int
    windows_pending: int


async def has_memories(tree: NodeReader, user_id: str) -> bool:
    """Whether the user has any node: what a rebuild needs to have anything to do."""
    for level in Level:
        if await tree.count(user_id, level):
            return True
    return False


async def pending_windows(tree: RecallReads, user_id: str, job: RebuildJob) -> int:
    """Windows of the job the consolidator has still to write again."""
    if not job.finished:
        return job.window_count
    pending = 0
    windows = job.plan.windows if job.plan else await tree.rebuild_windows(user_id)
    for node_id in windows:
        stored = await tree.get(user_id, node_id)
        if stored is None:
            continue  # removed meanwhile (its messages forgotten): nothing to wait for
        children = await tree.get_many(user_id, await tree.children_ids(user_id, node_id))
        if not is_current(stored, fingerprint(children, job.derivation)):
            pending += 1
    return pending


async def rebuild_progress(tree: RecallReads, user_id: str, rebuild_id: str) -> RebuildProgress:
    """The rebuild's progress; "pending" with nothing counted while its command waits in
    the turns topic (or after a newer rebuild of the user replaced it); "nothing_to_do" at
    once for a user with no job and no memory."""
    job = await tree.rebuild_job(user_id)
    if job is None and not await has_memories(tree, user_id):
        return RebuildProgress(rebuild_id, "nothing_to_do", 0, 0, 0, 0, 0)
    if job is None or job.rebuild_id != rebuild_id:
        return RebuildProgress(rebuild_id, "pending", 0, 0, 0, 0, 0)
    pending = await pending_windows(tree, user_id, job)
    done = job.finished and pending == 0
    return RebuildProgress(
        rebuild_id,
        "done" if done else "pending",
        job.leaf_count,
        job.done,
        job.rewritten,
        job.window_count,
        pending,
    )


async def pending_over_users(tree: RecallReads) -> int:
    """Windows every listed rebuild has still to consolidate; a finished rebuild with none
    left is settled (taken off the list), so each is counted until it is done, then never."""
    total = 0
    for user_id in await tree.rebuilding_users():
        job = await tree.rebuild_job(user_id)
        if job is None:
            await tree.settle_rebuild(user_id, None)
            continue
        pending = await pending_windows(tree, user_id, job)
        if job.finished and pending == 0:
            # Only if the job is still this one: a new rebuild committed since the read stays.
            await tree.settle_rebuild(user_id, job.rebuild_id)
        total += pending
    return total
