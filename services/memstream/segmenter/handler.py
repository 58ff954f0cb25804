"""The segmenter: turns in, L1 memories and window closures out.

The edge hands it batches of decoded events, each paired with its record (`Consumed`). A
batch is handled in steps of consecutive records, the messages of every step embedded ahead
(`embed_ahead`). In a step, the events are grouped by user and run through the window
reducer; the ready segments become L1 memories (written by the LLM backend with the newest
L1s as context); then the vectors go to Qdrant, and per user the new state, nodes,
idempotency markers and outgoing events go to the tree store in one transaction (the
outbox), every user's commit side by side. Once a step is committed, the offset after its last
record is marked per partition (what read-your-writes waits on); only then are the users'
events published, in one call, and their outboxes cleared. A crash at any point
replays the batch: ids are deterministic, markers skip what was committed, and an outbox a
crash left behind is published before anything new.

Each user's step has three phases. Load: one read of the store (`load_user`, one round
trip) gives a `UserSnapshot`: the window state, the tombstone, the seen marks and message
tombstones of the step's turns, the earliest message deadlines and an outbox a crash left,
and what the state remembers apart of the step's sessions (`domain.remembered`; a step that
closes a window or meets a late turn reads the keys it asks for, once, and decides again).
Decide: `domain.step.decide_step`, a pure function, turns the snapshot, the events, the
clock and the window rules into a `StepPlan` (the turns kept, the new state, the segments
ready, the windows closed, the messages to forget, when the user is due next). Commit: the
handler carries the plan out (the LLM writes the segments and rewrites the leaves a forget
reaches, the index takes the vectors) and writes it as one `UserCommit`, in the order above,
with what the L1s written say (their facts and entity surfaces, `domain.knowledge`; the facts
read by the offline rules, or by the LLM backend when one is configured) and without what
the L1s removed said.

A `rebuild.v1` of a user plans or advances that user's rebuild by one chunk of leaves
(`segmenter.rebuild`), written, indexed and committed with the step like any other L1s.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from memstream import faults
from memstream.contracts.codec import encode_state, encode_window, memory_event, removed_event
from memstream.contracts.feed_events import rebuild_finished_event, user_forgotten_event
from memstream.contracts.records import Consumed, Outbound
from memstream.domain.derivation import Derivation
from memstream.domain.fact_frames import Frames
from memstream.domain.forgetting import Guard, Tombstone
from memstream.domain.models import (
    ForgetRequested,
    IndexedMemory,
    InputEvent,
    MemoryNode,
    Turn,
    WindowClosed,
)
from memstream.domain.nodes import mean_direction, remaining_turns
from memstream.domain.rebuild import RebuildJob
from memstream.domain.sparse import document_vector
from memstream.domain.step import (
    Arrival,
    StepPlan,
    UserSnapshot,
    as_answered,
    asked_event_ids,
    asked_session_ids,
    decide_step,
)
from memstream.domain.windows import WindowRules, apart, late_data_closures
from memstream.ports import (
    Embedder,
    FactReader,
    LanguageModel,
    Publisher,
    SegmenterStore,
    UserCommit,
    VectorIndex,
)
from memstream.segmenter.embed_ahead import STEP_GROWTH, EmbeddingsAhead, step_sizes
from memstream.segmenter.knowledge import (
    FramePrototypes,
    Vectors,
    fact_outbox,
    read_by,
    read_knowledge,
)
from memstream.segmenter.rebuild import Rebuilder
from memstream.segmenter.rewrite import later_profiles, leaf_written_again, stored_ancestors
from memstream.segmenter.segments import Segment, SegmentWriter

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Topics:
    memories: str
    windows: str


@dataclass
class BatchReport:
    """What one batch did, for metrics and tests."""

    events: int = 0
    duplicates: int = 0
    segments: list[MemoryNode] = field(default_factory=list)
    closures: list[WindowClosed] = field(default_factory=list)
    forgotten: list[str] = field(default_factory=list)
    # Duplicates (counted in `duplicates` too) whose content differs from the first copy:
    # the first copy stays; these are logged and counted, the producer reused an event_id.
    conflicts: list[str] = field(default_factory=list)
    # Records of a forgotten user that were in the log before the forget (a replay): dropped.
    predating_forget: int = 0
    # Turns of forgotten messages (in this batch or held by a message tombstone): dropped.
    forgotten_turns: int = 0
    # Turns whose deadline (`domain.expiry`) had passed when they arrived: stored nowhere.
    expired_turns: int = 0
    # Messages forgotten because their deadline passed.
    expired: list[str] = field(default_factory=list)
    # Per L1 stored: seconds from the broker time of its newest message in this batch to the
    # commit that stored it. An L1 none of whose messages came in this batch (a lone message
    # flushed by a session end or the clock) waited by design and is not counted.
    l1_latencies: list[float] = field(default_factory=list)
    # Turns a tenant's share sent to the overflow topic, by tenant (`segmenter.fair_share`).
    diverted: dict[str, int] = field(default_factory=dict)
    # Seconds from the broker time of the newest record handled from the overflow topic (in
    # the turns topic) to its commit; None for a batch of the turns topic.
    overflow_lag: float | None = None


@dataclass(frozen=True, slots=True)
class _UserWork:
    commit: UserCommit  # what the step writes for the user
    segments: list[Segment]  # the L1s among `commit.nodes`, with what their vectors encode


class Segmenter:
    def __init__(
        self,
        *,
        tree: SegmenterStore,
        index: VectorIndex,
        embedder: Embedder,
        llm: LanguageModel,
        publisher: Publisher,
        topics: Topics,
        forget: Callable[[str, Tombstone], Awaitable[object]],
        rules: WindowRules,
        history_window: int = 3,
        step_size: int = 1024,
        step_growth: int = STEP_GROWTH,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        phase: Callable[[str], AbstractContextManager[object]] | None = None,
        retention: timedelta | None = None,
        derivation: Derivation | None = None,
        rebuild_chunk_leaves: int = 16,
        knowledge: bool = True,
        facts: FactReader | None = None,
        frames: FramePrototypes | None = None,
        on_progress: Callable[[Mapping[int, int], str | None], None] | None = None,
        shared_topic: str | None = None,
    ) -> None:
        """`phase(name)` is entered around a named step of the work (today "reduce", the
        reducer pass): the composition root gives a span there when tracing is on.
        `retention`: the longest a message is kept (None: until forgotten; `domain.expiry`).
        `on_progress` is told each progress mark once it is written, with its topic (reads
        waiting for it in this process then answer at once). `shared_topic`: with a turns
        topic per tenant (`contracts.tenant_topics`), the shared turns topic, whose records
        are marked by partition as without the mode; every other topic's records are marked
        under their topic (`ports.ProgressMarks`). None: every record is the shared topic's."""
        self._on_progress = on_progress
        self._shared_topic = shared_topic
        self._retention = retention
        self._knowledge = knowledge
        self._facts = facts  # the LLM backend's reader of L1 facts; None: the offline rules
        # With the rules: the frames the messages' vectors imply facts by (None: not read).
        self._frames = frames
        self._tree = tree
        self._index = index
        self._embedder = embedder
        self._llm = llm
        self._publisher = publisher
        self._topics = topics
        self._forget = forget
        self._rules = rules
        self._history = history_window
        if step_size <= 0:
            raise ValueError("step_size must be positive")
        self._step_size = step_size
        self._step_growth = step_growth
        self._clock = clock
        self._phase = phase or _unmarked
        self._derivation = derivation  # recorded on every L1 written (`domain.derivation`)
        self._writer = SegmentWriter(tree, rules, history_window)
        self._rebuilder = Rebuilder(
            tree=tree,
            llm=llm,
            derivation=derivation,
            history_window=history_window,
            chunk_leaves=rebuild_chunk_leaves,
        )
        self.handled = 0  # records fully processed by this instance, for progress checks

    async def handle_batch(
        self,
        batch: Sequence[Consumed[InputEvent]],
        *,
        progress: Mapping[int, int] | None = None,
    ) -> BatchReport:
        """`progress`: the marks to write once the batch is committed, when they are not
        the batch's own (`segmenter.fair_share`: a batch the share thinned out marks past
        the records it diverted; one from the overflow marks nothing)."""
        report = BatchReport(events=len(batch))
        sizes = step_sizes(len(batch), self._step_size, self._step_growth)
        bounds = [0, *itertools.accumulate(sizes)]
        steps = [batch[lo:hi] for lo, hi in itertools.pairwise(bounds)]
        # The messages' embeddings do not depend on the window state, so every step's texts
        # go to the embedder now; a step waits only for its own.
        ahead = EmbeddingsAhead(self._embedder, [_texts(step) for step in steps])
        await asyncio.sleep(0)  # let it hand the first texts to the embedder before we go on
        try:
            for index, step in enumerate(steps):
                committed = await self._handle_step(step, report, ahead, index)
                # The step's records are in the tree (or dropped): a read holding a write
                # token for one of them may answer now, not once the batch's later steps and
                # this step's outboxes, which are in the tree too, are through.
                last = index == len(steps) - 1
                await self._mark(_step_marks(step, progress, last=last, shared=self._shared_topic))
                faults.reach("l1.before_publish")
                # What each commit put in its outbox is all it holds: the load published and
                # cleared what a crash had left, and the segmenter is the outbox's one writer.
                await self._publish_outboxes({w.commit.user_id: w.commit.outbox for w in committed})
        finally:
            await ahead.close()
        if not steps and progress:  # every record went elsewhere (the share diverted them)
            await self._mark({None: progress})
        self.handled += len(batch)
        return report

    async def _mark(self, marks: Mapping[str | None, Mapping[int, int]]) -> None:
        """Write the progress marks of each turns topic (None: the shared one), what
        read-your-writes waits on, and tell this process."""
        for topic, topic_marks in marks.items():
            if topic_marks:
                await self._tree.mark_progress(topic_marks, topic)
                if self._on_progress is not None:
                    self._on_progress(topic_marks, topic)

    async def _handle_step(
        self,
        step: Sequence[Consumed[InputEvent]],
        report: BatchReport,
        ahead: EmbeddingsAhead,
        index: int,
    ) -> list[_UserWork]:
        """Store and commit a step; the users committed, whose outboxes are to publish."""
        per_user: dict[str, list[Consumed[InputEvent]]] = {}
        for item in step:
            per_user.setdefault(item.event.user_id, []).append(item)
        # Users are independent: their LLM calls and store reads overlap.
        results = await asyncio.gather(
            *(
                self._user_work(user_id, items, report, ahead, index)
                for user_id, items in per_user.items()
            )
        )
        work = [w for w in results if w is not None]
        segments = [s for w in work for s in w.segments]
        if segments:
            ahead.also(index, (text for s in segments for text in s.texts))
            await self._store_vectors(segments, await ahead.through(index))
            faults.reach("l1.before_commit")
        if any(w.commit.rebuild is not None for w in work):
            faults.reach("rebuild.before_commit")
        # Each user's commit is a transaction of its own keys: they go side by side, so a
        # step waits for about one round trip, not one per user.
        done = await _all_settled([self._tree.commit_user(w.commit) for w in work])
        stored_at = self._clock().timestamp()
        committed: list[_UserWork] = []
        for w, written in zip(work, done, strict=True):
            if not written:
                # Forgotten while this step ran: its L1s must not stay indexed.
                log.info("user forgotten during the step; dropping its writes")
                await self._index.delete_points(w.commit.user_id, [s.node.id for s in w.segments])
                continue
            committed.append(w)
            report.l1_latencies += [
                max(0.0, stored_at - s.received) for s in w.segments if s.received is not None
            ]
        return committed

    async def _user_work(
        self,
        user_id: str,
        items: list[Consumed[InputEvent]],
        report: BatchReport,
        ahead: EmbeddingsAhead,
        step_index: int,
    ) -> _UserWork | None:
        items = await self._apply_forgets(user_id, items, report)
        if not items:
            return None
        return await self._load_decide_carry_out(user_id, items, report, ahead, step_index)

    async def _apply_forgets(
        self, user_id: str, items: list[Consumed[InputEvent]], report: BatchReport
    ) -> list[Consumed[InputEvent]]:
        """A forget of the whole user wipes it; events before it in the batch are moot."""
        last_forget = max((i for i, c in enumerate(items) if _forgets_user(c.event)), default=None)
        if last_forget is None:
            return items
        raw = items[last_forget].raw
        newer = await self._tree.tombstone(user_id)
        if newer is None or not newer.predates(raw.partition, raw.offset, raw.timestamp):
            # (A replayed forget older than the tombstone is not applied again: its tombstone
            # would let the records between the two forgets back in.)
            stone = Tombstone(self._clock().timestamp(), raw.partition, raw.offset, raw.timestamp)
            await self._forget(user_id, stone)
            await self._announce_forgotten(user_id, stone)
            report.forgotten.append(user_id)
        return items[last_forget + 1 :]

    async def _announce_forgotten(self, user_id: str, stone: Tombstone) -> None:
        """`user_forgotten.v1` on the change feed, published at once: the forget wiped the
        user's outbox. A crash before it replays the forget (same place: not older than its
        own tombstone), which announces it again under the same `forget_id`."""
        value = user_forgotten_event(
            user_id, stone.partition or 0, stone.offset or 0, stone.forgotten_at
        )
        await self._publisher.publish([Outbound(self._topics.memories, user_id, value)])

    async def _load_decide_carry_out(
        self,
        user_id: str,
        items: list[Consumed[InputEvent]],
        report: BatchReport,
        ahead: EmbeddingsAhead,
        step_index: int,
    ) -> _UserWork | None:
        """Load, decide, carry out: the step's one read of the store, the domain's plan,
        then the LLM writes and the forgets the plan asks for (committed by the caller)."""
        arrivals = [Arrival(c.event, c.raw.partition, c.raw.offset, c.raw.timestamp) for c in items]
        # Read first: a forget after this read changes the tombstone, and the commit is then
        # refused (its guard).
        snapshot = await self._tree.load_user(
            user_id, asked_event_ids(arrivals), asked_session_ids(arrivals)
        )
        await self._publish_outboxes({user_id: snapshot.outbox})
        plan = await self._decide(snapshot, arrivals)
        _count(report, user_id, plan)
        if plan.idle or plan.state is None:
            return None
        fresh = await self._writer.write(
            user_id, list(plan.ready), plan.received, self._llm, self._derivation
        )
        segments, replaced = fresh.segments, fresh.removed
        if replaced:
            # Before the commit, as a forget does: a crash after it would leave the points
            # with nothing to find them by; one before it replays the step, which cuts again.
            await self._index.delete_points(user_id, [n.id for n in replaced])
        closures = list(plan.closures)
        forgotten: list[MemoryNode] = []
        checked_from: tuple[str, ...] = ()
        if plan.forget:
            rewritten, forgotten, above = await self._forget_messages(user_id, plan.forget)
            segments += rewritten
            closures += above
            checked_from = _forget_reaches(rewritten, forgotten, above)
        removed = [*replaced, *forgotten]
        rebuild: RebuildJob | None = None
        if plan.rebuild is not None:
            written = {s.node.id for s in segments} | {n.id for n in removed}
            step = await self._rebuilder.step(user_id, plan.rebuild, written)
            if step is not None:
                segments += [Segment(node, texts, None) for node, texts in step.leaves]
                closures += step.closures
                rebuild = step.job
        # Bottom-up across all: a window the clock closes now (a new day above a session a
        # forget or a rebuild rewrites) is consolidated after its rewritten children.
        closures.sort(key=lambda c: c.window.level)
        # What the L1s say, read from their messages before they are written: each records
        # what read it (the model, or the rules it fell back to).
        knowledge, extraction = await read_knowledge(
            [s.node for s in segments],
            removed,
            enabled=self._knowledge,
            reader=self._facts,
            frames=await self._frames_of(segments, ahead, step_index),
        )
        segments = [replace(s, node=read_by(s.node, extraction.get(s.node.id))) for s in segments]
        report.segments.extend(s.node for s in segments)
        report.closures.extend(closures)
        # Memories before closures: a consumer of both sees a window's children first.
        outbox = [Outbound(self._topics.memories, user_id, memory_event(s.node)) for s in segments]
        if replaced:
            gone = removed_event(user_id, [n.id for n in replaced], "replaced")
            outbox.append(Outbound(self._topics.memories, user_id, gone))
        if forgotten:
            gone = removed_event(user_id, [n.id for n in forgotten])
            outbox.append(Outbound(self._topics.memories, user_id, gone))
        announced, knowledge = await fact_outbox(
            self._tree, self._topics.memories, user_id, knowledge
        )
        outbox += announced
        outbox += _rebuild_announced(self._topics.memories, user_id, rebuild)
        outbox += [Outbound(self._topics.windows, user_id, encode_window(c)) for c in closures]
        document, remembered = apart(plan.state)
        commit = UserCommit(
            user_id,
            encode_state(document),
            remembered=remembered,
            seen=plan.seen,
            nodes=[s.node for s in segments],
            outbox=[o.to_json() for o in outbox],
            due=plan.due,
            guard=Guard(snapshot.tombstone),
            removed=removed,
            moved=fresh.moved,
            forgotten=plan.forget,
            forget_reaches=checked_from,
            expiring=plan.expiring,
            rebuild=rebuild,
            # Committed with the L1s, so the facts and entities never disagree with the
            # leaves (a forget's rewrite included).
            knowledge=knowledge,
        )
        return _UserWork(commit, segments)

    async def _decide(self, snapshot: UserSnapshot, arrivals: list[Arrival]) -> StepPlan:
        """The step's plan; decided again, from the start, after reading what a decision
        asked of the remembered sessions and window keys (`domain.remembered`)."""
        now = self._clock()  # one time for every decision of the step: they must agree
        while True:
            with self._phase("reduce"):  # no await inside: the phase is the decision's CPU
                plan = decide_step(snapshot, arrivals, now, self._rules, self._retention)
            if plan.lookup is None:
                return plan
            known = snapshot.remembered
            assert known is not None  # only a state kept apart asks
            more = await self._tree.look_up(snapshot.user_id, plan.lookup)
            if (answered := as_answered(plan, known, more)) is not None:
                return answered  # what deciding again would give: no need to
            snapshot = replace(snapshot, remembered=known.merged(more))
            if snapshot.remembered == known:  # asked again what it was told: a bug, not a loop
                raise RuntimeError(f"the window reducer asked again for {plan.lookup}")

    async def _forget_messages(
        self, user_id: str, message_ids: Sequence[str]
    ) -> tuple[list[Segment], list[MemoryNode], list[WindowClosed]]:
        """Every L1 citing one of `message_ids` written again from its other messages (same
        id, version + 1) or, with none left, removed; and the closures that consolidate
        again, bottom-up, every stored ancestor of those L1s (as late data does) and, with
        the knowledge write on, every later profile (it may state their facts)."""
        forgotten = set(message_ids)
        citing = await self._tree.leaves_citing(user_id, message_ids)
        leaves = [
            n for n in await self._tree.get_many(user_id, citing) if forgotten & set(n.source_ids)
        ]
        rewritten: list[Segment] = []
        removed: list[MemoryNode] = []
        for leaf in leaves:
            turns = remaining_turns(leaf, forgotten)
            if not turns:
                removed.append(leaf)
                continue
            node = await leaf_written_again(
                self._tree,
                self._llm,
                leaf,
                turns,
                history_window=self._history,
                derivation=self._derivation,
            )
            rewritten.append(Segment(node, [t.text for t in turns], None))
        if removed:
            # Before the commit: a crash after it would leave the points with nothing to
            # find them by; a crash before it replays the forget, which finds the leaves again.
            await self._index.delete_points(user_id, [n.id for n in removed])
        above = await stored_ancestors(self._tree, user_id, leaves)
        if self._knowledge:  # later profiles may state the facts of these messages as current
            above |= {n.id: n for n in await later_profiles(self._tree, user_id, leaves, above)}
        return rewritten, removed, late_data_closures(above.values())

    async def _frames_of(
        self, segments: list[Segment], ahead: EmbeddingsAhead, step_index: int
    ) -> tuple[Frames, Vectors] | None:
        """The frames' prototypes and the L1s' messages' vectors, when the rules read the
        L1s' facts and the frames are on: the vectors the L1s are indexed with, so waiting
        for them here embeds nothing more."""
        if self._frames is None or not self._knowledge or self._facts is not None:
            return None
        if not segments:
            return None
        ahead.also(step_index, (text for s in segments for text in s.texts))
        return await self._frames.frames(), await ahead.through(step_index)

    async def _store_vectors(
        self, segments: list[Segment], embedded: Mapping[str, list[float]]
    ) -> None:
        """Index the new L1s; each dense vector is the mean of its messages' embeddings
        (`embedded` holds every one: `EmbeddingsAhead.through`, with `also`).

        The memory's text (dated, third person) feeds the lexical channel and readers; the
        dense channel encodes the messages as the speakers wrote them, closer to how people
        phrase questions, at exactly the embedder's cost for the raw messages.
        """
        await self._index.upsert(
            [
                IndexedMemory(
                    s.node,
                    mean_direction([embedded[t] for t in s.texts]),
                    document_vector(s.node.text),
                )
                for s in segments
            ]
        )

    async def _publish_outboxes(self, pending: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
        """Publish the events these users' outboxes hold, in one call (the producer's acks
        are awaited once, not once per user), then drop them from the outboxes, in one
        round trip."""
        events = [Outbound.from_json(dict(e)) for held in pending.values() for e in held]
        if events:
            await self._publisher.publish(events)
            # One round trip for every user, not one each side by side: in a live batch of a
            # few records the trims were as many calls through the event loop as users.
            counts = {user_id: len(held) for user_id, held in pending.items() if held}
            await self._tree.clear_outboxes(counts, "segmenter")


def _forget_reaches(
    rewritten: Sequence[Segment], removed: Sequence[MemoryNode], above: Sequence[WindowClosed]
) -> tuple[str, ...]:
    """The nodes above the leaves a message forget rewrote or removed: their parents (stored
    or not yet) and every window it consolidates again. Kept with the message tombstones:
    the forget-status route reads these and their ancestors, not every summary."""
    parents = {s.node.parent_id for s in rewritten} | {n.parent_id for n in removed}
    return tuple(sorted({p for p in parents if p} | {c.node_id for c in above}))


def _rebuild_announced(topic: str, user_id: str, job: RebuildJob | None) -> list[Outbound]:
    """`rebuild_finished.v1` when this step wrote the rebuild's last chunk (in the outbox,
    committed with the finished job: announced at least once)."""
    if job is None or not job.finished:
        return []
    return [Outbound(topic, user_id, rebuild_finished_event(user_id, job))]


def _count(report: BatchReport, user_id: str, plan: StepPlan) -> None:
    """What the plan dropped, in the batch report."""
    report.predating_forget += plan.predating_forget
    report.forgotten_turns += plan.forgotten_turns
    report.expired_turns += plan.expired_turns
    report.expired += plan.expired
    report.duplicates += plan.duplicates
    report.conflicts += plan.conflicts
    for event_id in plan.conflicts:
        log.warning(
            "event %r of user %r seen before with other content; kept the first",
            event_id,
            user_id,
        )


def _unmarked(name: str) -> AbstractContextManager[object]:
    return nullcontext()


async def _all_settled(writes: Sequence[Awaitable[T]]) -> list[T]:
    """The writes' results, side by side; the first error raised only once every write has
    ended, so none of a failed step's writes lands after its retry has begun."""
    results = await asyncio.gather(*writes, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results  # type: ignore[return-value]


def _step_marks(
    step: Sequence[Consumed[InputEvent]],
    progress: Mapping[int, int] | None,
    *,
    last: bool,
    shared: str | None = None,
) -> Mapping[str | None, Mapping[int, int]]:
    """The marks once `step` is committed, per turns topic: past its records (an earlier
    step's mark of a partition it has none of stays); with the shared topic's marks given
    for the batch (`handle_batch`'s `progress`), those, and only after its last step."""
    if progress is not None:
        return {None: progress} if last else {}
    return marks_by_topic(step, shared)


def next_offsets(batch: Sequence[Consumed[InputEvent]]) -> dict[int, int]:
    """Per partition of the batch, the offset after its last record (records that came from
    no partition, such as a rebuild's replays, mark nothing)."""
    return marks_by_topic(batch).get(None, {})


def marks_by_topic(
    batch: Sequence[Consumed[InputEvent]], shared: str | None = None
) -> dict[str | None, dict[int, int]]:
    """Per turns topic and partition of the batch, the offset after its last record. The
    topic is None for the shared one (`shared`; every record's, when `shared` is None), else
    the tenant's topic's name: the same partition number is in each."""
    ahead: dict[str | None, dict[int, int]] = {}
    for item in batch:
        if item.raw.partition >= 0:
            topic = None if shared is None or item.raw.topic == shared else item.raw.topic
            marks = ahead.setdefault(topic, {})
            at = item.raw.partition
            marks[at] = max(marks.get(at, 0), item.raw.offset + 1)
    return ahead


def _forgets_user(event: InputEvent) -> bool:
    return isinstance(event, ForgetRequested) and not event.message_ids


def _texts(step: Sequence[Consumed[InputEvent]]) -> list[str]:
    """The distinct texts of a step's turns."""
    return list(dict.fromkeys(c.event.text for c in step if isinstance(c.event, Turn)))
