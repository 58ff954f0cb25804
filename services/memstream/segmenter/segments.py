"""Writing a step's L1s: each segment the reducer made ready, and each session a turn later
than the reorder window cuts again (`domain.resegment`), read as the step sees it: stored,
with what the step itself has written and removed so far."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from memstream.domain.derivation import Derivation
from memstream.domain.frozen import replace
from memstream.domain.ids import segment_id
from memstream.domain.models import Level, MemoryNode
from memstream.domain.nodes import segment_node
from memstream.domain.resegment import SessionCut, cut_again
from memstream.domain.windows import Resegment, SegmentReady, WindowRules
from memstream.ports import LanguageModel, SegmenterStore


@dataclass(frozen=True, slots=True)
class Segment:
    node: MemoryNode
    texts: list[str]  # its messages, as the speakers wrote them: what its vector encodes
    received: float | None  # broker time of its newest message in this batch


@dataclass
class Written:
    """A step's L1s as written so far: new and rewritten, the stored ones that go, and the
    stored ones written again under another parent (as they were stored)."""

    segments: list[Segment] = field(default_factory=list)
    removed: list[MemoryNode] = field(default_factory=list)
    moved: list[MemoryNode] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Made:
    """What writes the L1s of a step, and what they record of it."""

    llm: LanguageModel
    derivation: Derivation | None


@dataclass(frozen=True, slots=True)
class SegmentWriter:
    tree: SegmenterStore
    rules: WindowRules
    history_window: int

    async def write(
        self,
        user_id: str,
        ready: list[SegmentReady | Resegment],
        received: Mapping[str, float],
        llm: LanguageModel,
        derivation: Derivation | None,
    ) -> Written:
        """The L1s of the segments ready, in order, each written by `llm` with the newest
        L1s as context (and recording `derivation`); a late turn's session is cut again over
        what is written so far."""
        made = _Made(llm, derivation)
        done = Written()
        if not ready:
            return done
        history = await self.tree.recent(user_id, Level.SEGMENT, self.history_window)
        for out in ready:
            if isinstance(out, SegmentReady):
                done.segments.append(await self._segment(made, user_id, out, 1, history, received))
                continue
            mine = {s.node.id: s.node for s in done.segments}
            gone = {n.id for n in done.removed}
            cut, stored = await self._cut(user_id, out, mine, gone)
            again = {
                segment_id(user_id, [m.event_id for m in seg.messages]) for seg, _ in cut.written
            }
            dropped = {n.id for n in cut.removed} | again
            done.segments = [s for s in done.segments if s.node.id not in dropped]
            # A leaf an earlier cut of the step removed may be written again (count mode: a
            # message taken back into the group gathered, then out of it): it stays.
            done.removed = [n for n in done.removed if n.id not in again]
            done.removed += [n for n in cut.removed if n.id in stored]
            done.moved += [n for n in cut.moved if n.id not in {m.id for m in done.moved}]
            for seg, version in cut.written:
                done.segments.append(await self._segment(made, user_id, seg, version, history, {}))
        return done

    async def _segment(
        self,
        made: _Made,
        user_id: str,
        seg: SegmentReady,
        version: int,
        history: list[MemoryNode],
        received: Mapping[str, float],
    ) -> Segment:
        """One L1, with `history` (the newest L1s) as context; `history` grows by it."""
        context = history[-self.history_window :] if self.history_window else []
        summary = await made.llm.write_segment(seg.messages, context)
        node = replace(segment_node(user_id, seg, summary, made.derivation), version=version)
        history.append(node)
        times = [received[m.event_id] for m in seg.messages if m.event_id in received]
        return Segment(node, [m.text for m in seg.messages], max(times, default=None))

    async def _cut(
        self,
        user_id: str,
        late: Resegment,
        written: Mapping[str, MemoryNode],
        gone: Collection[str],
    ) -> tuple[SessionCut, set[str]]:
        """The cut of `late`'s session, and the ids of its leaves the store holds. `written`:
        the L1s this step wrote so far (not yet committed), `gone`: the stored ones it
        removed."""
        parents = {late.parent_id, late.in_order_parent_id}
        ids: set[str] = set()
        for parent in sorted(parents):  # the in-order parent holds leaves only on a replay
            ids.update(await self.tree.children_ids(user_id, parent))
        mine = {i: n for i, n in written.items() if n.parent_id in parents}
        # As the store holds them: a leaf this step moved is still under its old parent, and
        # one it removed is still there (written again, its version goes on).
        stored = {n.id: n for n in await self.tree.get_many(user_id, sorted(ids | set(mine)))}
        leaves = {i: n for i, n in stored.items() if i in ids and i not in gone} | mine
        cut = cut_again(
            list(leaves.values()),
            stored,
            late.turn,
            late.in_order_parent_id,
            self.rules,
            late.pending,
            late.still_pending,
        )
        return cut, set(stored)
