"""The segmenter's part of a rebuild (`domain.rebuild`): plan the job, re-derive a chunk.

`Rebuilder.step` runs inside the segmenter's handling of a user's records, so it is the one
writer of that user's tree: it plans the job for a new `rebuild_id` (nothing else: the
scheduler asks for every chunk, at the deployment's pace), or reads it and writes
again at most `chunk_leaves` leaves from their verbatim messages with the current derivation
(leaves already derived that way are passed over, at most `chunk_leaves * SKIP_FACTOR` per
chunk, so a rebuild that changes nothing still ends), and, with the last chunk, names the
windows to consolidate again. The segmenter indexes the leaves and commits them with the
advanced job in one transaction.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from memstream.domain.derivation import Derivation
from memstream.domain.models import Level, MemoryNode, RebuildRequested, WindowClosed
from memstream.domain.nodes import remaining_turns
from memstream.domain.rebuild import RebuildJob, needs_rederiving, plan_job
from memstream.domain.windows import late_data_closures
from memstream.ports import LanguageModel, SegmenterStore
from memstream.segmenter.rewrite import leaf_written_again, stored_ancestors

# A chunk reads up to this many times its size of leaves that are already current.
SKIP_FACTOR = 8
_PAGE = 500


@dataclass(frozen=True, slots=True)
class RebuildStep:
    job: RebuildJob  # as this step leaves it (to commit)
    leaves: list[tuple[MemoryNode, list[str]]]  # rewritten leaves, with their messages' texts
    closures: list[WindowClosed]  # with the last chunk: the windows to consolidate again


class Rebuilder:
    def __init__(
        self,
        *,
        tree: SegmenterStore,
        llm: LanguageModel,
        derivation: Derivation | None,
        history_window: int = 3,
        chunk_leaves: int = 16,
    ) -> None:
        if chunk_leaves <= 0:
            raise ValueError("chunk_leaves must be positive")
        self._tree = tree
        self._llm = llm
        self._derivation = derivation
        self._history = history_window
        self._chunk = chunk_leaves

    async def step(
        self, user_id: str, request: RebuildRequested, written: Collection[str] = ()
    ) -> RebuildStep | None:
        """One chunk of the user's rebuild named by `request`; None when it is finished (a
        replay or a second continuation). `written`: leaves this same step already wrote
        (with the current derivation): they count as handled."""
        job = await self._tree.rebuild_job(user_id)
        if job is None or job.rebuild_id != request.rebuild_id:
            job = await self._plan(user_id, request)  # a new id replaces an unfinished job
            if job.leaf_count:
                # Only planned: every chunk is asked for by the scheduler, at the deployment's
                # pace (`rebuild --all` would otherwise re-derive a chunk per user at once).
                return RebuildStep(job, [], [])
        elif job.finished:
            return None
        handled, leaves = await self._chunk_of(user_id, job, set(written))
        job = job.advanced(handled, len(leaves))
        above: list[WindowClosed] = []
        if job.finished:
            windows = job.plan.windows if job.plan else await self._tree.rebuild_windows(user_id)
            above = late_data_closures(await self._tree.get_many(user_id, list(windows)))
        return RebuildStep(job, leaves, above)

    async def _chunk_of(
        self, user_id: str, job: RebuildJob, written: set[str]
    ) -> tuple[int, list[tuple[MemoryNode, list[str]]]]:
        handled = 0
        rewritten: list[tuple[MemoryNode, list[str]]] = []
        most_read = self._chunk * SKIP_FACTOR
        page_size = min(_PAGE, most_read)
        for start in range(job.done, job.leaf_count, page_size):
            page = await self._leaf_ids(user_id, job, start, start + page_size)
            found = {n.id: n for n in await self._tree.get_many(user_id, list(page))}
            for leaf_id in page:
                if len(rewritten) >= self._chunk or handled >= most_read:
                    return handled, rewritten
                handled += 1
                leaf = found.get(leaf_id)  # gone (its messages forgotten): nothing to do
                if leaf is None or leaf_id in written:
                    continue
                if needs_rederiving(leaf, self._derivation):
                    rewritten.append(await self._rederive(leaf))
        return handled, rewritten

    async def _leaf_ids(self, user_id: str, job: RebuildJob, start: int, stop: int) -> list[str]:
        """The ids of the job's leaves `start` to `stop`: a range of the plan kept beside it."""
        if job.plan is not None:
            return list(job.plan.leaves[start:stop])
        return await self._tree.rebuild_leaves(user_id, start, stop)

    async def _rederive(self, leaf: MemoryNode) -> tuple[MemoryNode, list[str]]:
        """`leaf` written again from its verbatim messages: same id and parent, version + 1."""
        turns = remaining_turns(leaf, ())
        node = await leaf_written_again(
            self._tree,
            self._llm,
            leaf,
            turns,
            history_window=self._history,
            derivation=self._derivation,
        )
        return node, [t.text for t in turns]

    async def _plan(self, user_id: str, request: RebuildRequested) -> RebuildJob:
        """The job for a new rebuild: its leaves, and the stored windows it may change."""
        low = request.since.timestamp() if request.since else float("-inf")
        leaves = (
            await self._level(user_id, Level.SEGMENT, low)
            if Level.SEGMENT in request.levels
            else []
        )
        ancestors = await stored_ancestors(self._tree, user_id, leaves)
        upper: list[MemoryNode] = []
        for level in request.levels:
            if level != Level.SEGMENT:
                upper += await self._level(user_id, level, low)
        return plan_job(request, self._derivation, leaves, ancestors.values(), upper)

    async def _level(self, user_id: str, level: Level, low: float) -> list[MemoryNode]:
        nodes: list[MemoryNode] = []
        offset = 0
        while ids := await self._tree.level_ids(user_id, level, low, offset=offset, limit=_PAGE):
            nodes += await self._tree.get_many(user_id, ids)
            offset += len(ids)
        return nodes
