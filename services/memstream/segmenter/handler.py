"""The segmenter: turns in, L1 memories and window closures out.

The edge hands it batches of decoded events, each paired with its record (`Consumed`). A
batch is handled in steps of consecutive records, the messages of every step embedded ahead
(`embed_ahead`). In a step, the events are grouped by user and run through the window
reducer; the ready segments become L1 memories (written by the LLM backend with the newest
L1s as context); then the vectors go to Qdrant, and per user the new state, nodes,
idempotency markers and outgoing events go to the tree store in one transaction (the
outbox); only then are the events published and the outbox cleared. A crash at any point
replays the batch: ids are deterministic, markers skip what was committed, and an outbox a
crash left behind is published before anything new.

A `rebuild.v1` of a user plans or advances that user's rebuild by one chunk of leaves
(`segmenter.rebuild`), written, indexed and committed with the step like any other L1s.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from memstream import faults
from memstream.contracts.codec import (
    decode_state,
    encode_state,
    encode_window,
    memory_event,
    removed_event,
)
from memstream.contracts.records import Consumed, Outbound
from memstream.domain.derivation import Derivation
from memstream.domain.expiry import deadline, earliest, split_due
from memstream.domain.forgetting import Guard, Tombstone
from memstream.domain.models import (
    ForgetRequested,
    IndexedMemory,
    InputEvent,
    Level,
    MemoryNode,
    RebuildRequested,
    Turn,
    WindowClosed,
)
from memstream.domain.nodes import (
    mean_direction,
    remaining_turns,
    segment_node,
)
from memstream.domain.rebuild import RebuildJob
from memstream.domain.sparse import document_vector
from memstream.domain.windows import (
    SegmentReady,
    WindowRules,
    apply,
    initial_state,
    late_data_closures,
    next_due,
)
from memstream.ports import Embedder, LanguageModel, Publisher, TreeStore, VectorIndex
from memstream.segmenter.embed_ahead import EmbeddingsAhead, step_sizes
from memstream.segmenter.rebuild import Rebuilder
from memstream.segmenter.rewrite import leaf_written_again, stored_ancestors

log = logging.getLogger(__name__)

# Most expired messages one user's step forgets (a forget.v1's bound): more wait a tick.
EXPIRY_BATCH = 100


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


@dataclass(frozen=True, slots=True)
class _Segment:
    node: MemoryNode
    texts: list[str]  # its messages, as the speakers wrote them: what its vector encodes
    received: float | None  # broker time of its newest message in this batch


@dataclass
class _UserWork:
    user_id: str
    state: dict[str, object]
    seen: dict[str, int]  # event id -> content mark
    segments: list[_Segment]
    outbox: list[Outbound]
    due: datetime | None
    guard: Guard
    removed: list[MemoryNode]  # L1s left with no message by a forget
    forgotten: list[str]  # event ids forgotten in this step: their message tombstones
    expiring: dict[str, datetime]  # new messages with a deadline: the expiry schedule
    rebuild: RebuildJob | None = None  # the user's rebuild job, advanced by this step


class Segmenter:
    def __init__(
        self,
        *,
        tree: TreeStore,
        index: VectorIndex,
        embedder: Embedder,
        llm: LanguageModel,
        publisher: Publisher,
        topics: Topics,
        forget: Callable[[str, Tombstone], Awaitable[object]],
        rules: WindowRules,
        history_window: int = 3,
        step_size: int = 1024,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        phase: Callable[[str], AbstractContextManager[object]] | None = None,
        retention: timedelta | None = None,
        derivation: Derivation | None = None,
        rebuild_chunk_leaves: int = 16,
    ) -> None:
        """`phase(name)` is entered around a named step of the work (today "reduce", the
        reducer pass): the composition root gives a span there when tracing is on.
        `retention`: the longest a message is kept (None: until forgotten; `domain.expiry`)."""
        self._retention = retention
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
        self._clock = clock
        self._phase = phase or _unmarked
        self._derivation = derivation  # recorded on every L1 written (`domain.derivation`)
        self._rebuilder = Rebuilder(
            tree=tree,
            llm=llm,
            derivation=derivation,
            history_window=history_window,
            chunk_leaves=rebuild_chunk_leaves,
        )
        self.handled = 0  # records fully processed by this instance, for progress checks

    async def handle_batch(self, batch: Sequence[Consumed[InputEvent]]) -> BatchReport:
        report = BatchReport(events=len(batch))
        bounds = [0, *itertools.accumulate(step_sizes(len(batch), self._step_size))]
        steps = [batch[lo:hi] for lo, hi in itertools.pairwise(bounds)]
        # The messages' embeddings do not depend on the window state, so every step's texts
        # go to the embedder now; a step waits only for its own.
        ahead = EmbeddingsAhead(self._embedder, [_texts(step) for step in steps])
        await asyncio.sleep(0)  # let it hand the first texts to the embedder before we go on
        try:
            for index, step in enumerate(steps):
                await self._handle_step(step, report, ahead, index)
        finally:
            await ahead.close()
        self.handled += len(batch)
        return report

    async def _handle_step(
        self,
        step: Sequence[Consumed[InputEvent]],
        report: BatchReport,
        ahead: EmbeddingsAhead,
        index: int,
    ) -> None:
        per_user: dict[str, list[Consumed[InputEvent]]] = {}
        for item in step:
            per_user.setdefault(item.event.user_id, []).append(item)
        # Users are independent: their LLM calls and store reads overlap.
        results = await asyncio.gather(
            *(self._user_work(user_id, items, report) for user_id, items in per_user.items())
        )
        work = [w for w in results if w is not None]
        segments = [s for w in work for s in w.segments]
        if segments:
            ahead.also(index, (text for s in segments for text in s.texts))
            await self._store_vectors(segments, await ahead.through(index))
            faults.reach("l1.before_commit")
        if any(w.rebuild is not None for w in work):
            faults.reach("rebuild.before_commit")
        committed: list[_UserWork] = []
        for w in work:
            written = await self._tree.commit_user(
                w.user_id,
                state=w.state,
                seen=w.seen,
                nodes=[s.node for s in w.segments],
                outbox=[o.to_json() for o in w.outbox],
                due=w.due,
                guard=w.guard,
                removed=w.removed,
                forgotten=w.forgotten,
                expiring=w.expiring,
                rebuild=w.rebuild,
            )
            if not written:  # forgotten while this step ran: its L1s must not stay indexed
                log.info("user forgotten during the step; dropping its writes")
                await self._index.delete_points(w.user_id, [s.node.id for s in w.segments])
                continue
            committed.append(w)
            stored_at = self._clock().timestamp()
            report.l1_latencies += [
                max(0.0, stored_at - s.received) for s in w.segments if s.received is not None
            ]
        faults.reach("l1.before_publish")
        for w in committed:
            await self._flush_outbox(w.user_id)

    async def _user_work(
        self, user_id: str, items: list[Consumed[InputEvent]], report: BatchReport
    ) -> _UserWork | None:
        items = await self._apply_forgets(user_id, items, report)
        return await self._reduce(user_id, items, report) if items else None

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
            report.forgotten.append(user_id)
        return items[last_forget + 1 :]

    async def _reduce(
        self, user_id: str, items: list[Consumed[InputEvent]], report: BatchReport
    ) -> _UserWork | None:
        await self._flush_outbox(user_id)  # left over by a crash between commit and publish
        # Read first: a forget after this read changes it, and the commit is then refused.
        tombstone = await self._tree.tombstone(user_id)
        if tombstone is not None:
            kept = [
                c
                for c in items
                if not tombstone.predates(c.raw.partition, c.raw.offset, c.raw.timestamp)
            ]
            report.predating_forget += len(items) - len(kept)
            items = kept
        forget_ids = list(
            dict.fromkeys(
                i
                for c in items
                if isinstance(c.event, ForgetRequested)
                for i in c.event.message_ids
            )
        )
        items = await self._without_forgotten(user_id, items, set(forget_ids), report)
        now = self._clock()
        items = self._unexpired(items, now, report)
        expired, next_expiry = await self._due_expiries(user_id, now)
        report.expired += expired
        forget_ids = list(dict.fromkeys([*forget_ids, *expired]))
        events = [c.event for c in items]
        stored = await self._tree.load_state(user_id)
        first_tz = next((e.tz for e in events if isinstance(e, Turn) and e.tz), None)
        state = (
            decode_state(stored)
            if stored
            else initial_state(user_id, first_tz or self._rules.default_tz)
        )
        turns = [e for e in events if isinstance(e, Turn)]
        if stored is None and not turns and (not forget_ids or tombstone is not None):
            # A tick or session end for a user with no state (one just forgotten, whose tick
            # was already in flight) has nothing to close: writing a state would revive it.
            # (A message forget for a user never seen still leaves its message tombstones.)
            return None
        if forget_ids:  # a message waiting in the state (for its reply) goes before it is used
            kept_pending = tuple(t for t in state.pending if t.event_id not in forget_ids)
            state = replace(state, pending=kept_pending)
        committed = dict(
            zip(
                [t.event_id for t in turns],
                await self._tree.seen_marks(user_id, [t.event_id for t in turns]),
                strict=True,
            )
        )
        received: dict[str, float] = {}
        for c in items:
            if isinstance(c.event, Turn) and c.raw.timestamp is not None:
                received.setdefault(c.event.event_id, c.raw.timestamp)

        seen: dict[str, int] = {}
        ready: list[SegmentReady] = []
        closures: list[WindowClosed] = []
        with self._phase("reduce"):  # no await inside: the phase is the reducer's CPU time
            for event in events:
                if isinstance(event, ForgetRequested | RebuildRequested):
                    continue
                if isinstance(event, Turn):
                    mark = content_mark(event)
                    first = seen.get(event.event_id, committed.get(event.event_id))
                    if first is not None:
                        report.duplicates += 1
                        if first not in (0, mark):  # 0: committed before marks existed
                            report.conflicts.append(event.event_id)
                            log.warning(
                                "event %r of user %r seen before with other content; "
                                "kept the first",
                                event.event_id,
                                user_id,
                            )
                        continue
                    seen[event.event_id] = mark
                state, outputs = apply(state, event, now, self._rules)
                for out in outputs:
                    if isinstance(out, SegmentReady):
                        ready.append(out)
                    else:
                        closures.append(out)

        segments = await self._write_segments(user_id, ready, received)
        removed: list[MemoryNode] = []
        if forget_ids:
            rewritten, removed, above = await self._forget_messages(user_id, forget_ids)
            segments += rewritten
            closures += above
        rebuild: RebuildJob | None = None
        requests = [e for e in events if isinstance(e, RebuildRequested)]
        if requests:  # one chunk per step; the newest request names the rebuild
            written = {s.node.id for s in segments} | {n.id for n in removed}
            step = await self._rebuilder.step(user_id, requests[-1], written)
            if step is not None:
                segments += [_Segment(node, texts, None) for node, texts in step.leaves]
                closures += step.closures
                rebuild = step.job
        # Bottom-up across all: a window the clock closes now (a new day above a session a
        # forget or a rebuild rewrites) is consolidated after its rewritten children.
        closures.sort(key=lambda c: c.window.level)
        report.segments.extend(s.node for s in segments)
        report.closures.extend(closures)
        # Memories before closures: a consumer of both sees a window's children first.
        outbox = [Outbound(self._topics.memories, user_id, memory_event(s.node)) for s in segments]
        if removed:
            gone = removed_event(user_id, [n.id for n in removed])
            outbox.append(Outbound(self._topics.memories, user_id, gone))
        outbox += [Outbound(self._topics.windows, user_id, encode_window(c)) for c in closures]
        expiring = {
            t.event_id: at
            for t in turns
            if t.event_id in seen and (at := deadline(t, self._retention)) is not None
        }
        return _UserWork(
            user_id,
            encode_state(state),
            seen,
            segments,
            outbox,
            # The clock's tick for the user comes at its first window or message deadline.
            earliest(next_due(state, self._rules), next_expiry, *expiring.values()),
            Guard(tombstone),
            removed,
            forget_ids,
            expiring,
            rebuild,
        )

    async def _due_expiries(self, user_id: str, now: datetime) -> tuple[list[str], datetime | None]:
        """The user's messages past their deadline (at most EXPIRY_BATCH) and when the next
        one is due. Usually nothing is due: one read of the earliest deadline says so."""
        earliest_one = await self._tree.expiries(user_id, 1)
        if not earliest_one or earliest_one[0][1] > now.timestamp():
            return split_due(earliest_one, now, EXPIRY_BATCH)
        return split_due(await self._tree.expiries(user_id, EXPIRY_BATCH + 1), now, EXPIRY_BATCH)

    def _unexpired(
        self, items: list[Consumed[InputEvent]], now: datetime, report: BatchReport
    ) -> list[Consumed[InputEvent]]:
        """`items` without the turns whose deadline has already passed: stored nowhere."""
        kept = [
            c
            for c in items
            if not (
                isinstance(c.event, Turn)
                and (at := deadline(c.event, self._retention)) is not None
                and at <= now
            )
        ]
        report.expired_turns += len(items) - len(kept)
        return kept

    async def _without_forgotten(
        self,
        user_id: str,
        items: list[Consumed[InputEvent]],
        forgetting: set[str],
        report: BatchReport,
    ) -> list[Consumed[InputEvent]]:
        """`items` without the turns of forgotten messages: those forgotten in this batch and
        those a message tombstone holds (a replay of the turns topic brings them again)."""
        ids = [c.event.event_id for c in items if isinstance(c.event, Turn)]
        held = await self._tree.forgotten_messages(user_id, ids)
        gone = forgetting | {i for i, h in zip(ids, held, strict=True) if h}
        kept = [c for c in items if not (isinstance(c.event, Turn) and c.event.event_id in gone)]
        report.forgotten_turns += len(items) - len(kept)
        return kept

    async def _forget_messages(
        self, user_id: str, message_ids: Sequence[str]
    ) -> tuple[list[_Segment], list[MemoryNode], list[WindowClosed]]:
        """Every L1 citing one of `message_ids` written again from its other messages (same
        id, version + 1) or, with none left, removed; and the closures that consolidate
        again, bottom-up, every stored ancestor of those L1s (as late data does)."""
        forgotten = set(message_ids)
        citing = await self._tree.leaves_citing(user_id, message_ids)
        leaves = [
            n for n in await self._tree.get_many(user_id, citing) if forgotten & set(n.source_ids)
        ]
        rewritten: list[_Segment] = []
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
            rewritten.append(_Segment(node, [t.text for t in turns], None))
        if removed:
            # Before the commit: a crash after it would leave the points with nothing to
            # find them by; a crash before it replays the forget, which finds the leaves again.
            await self._index.delete_points(user_id, [n.id for n in removed])
        ancestors = await stored_ancestors(self._tree, user_id, leaves)
        return rewritten, removed, late_data_closures(ancestors.values())

    async def _write_segments(
        self, user_id: str, ready: list[SegmentReady], received: dict[str, float]
    ) -> list[_Segment]:
        if not ready:
            return []
        history = await self._tree.recent(user_id, Level.SEGMENT, self._history)
        segments: list[_Segment] = []
        for seg in ready:
            summary = await self._llm.write_segment(
                seg.messages, history[-self._history :] if self._history else []
            )
            node = segment_node(user_id, seg, summary, self._derivation)
            history.append(node)
            times = [received[m.event_id] for m in seg.messages if m.event_id in received]
            segments.append(
                _Segment(node, [m.text for m in seg.messages], max(times, default=None))
            )
        return segments

    async def _store_vectors(
        self, segments: list[_Segment], embedded: Mapping[str, list[float]]
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

    async def _flush_outbox(self, user_id: str) -> None:
        pending = await self._tree.outbox(user_id, "segmenter")
        if pending:
            await self._publisher.publish([Outbound.from_json(p) for p in pending])
            await self._tree.clear_outbox(user_id, len(pending), "segmenter")


def _unmarked(name: str) -> AbstractContextManager[object]:
    return nullcontext()


def content_mark(turn: Turn) -> int:
    """21 bits (never 0) of what a turn says, stored with its idempotency marker so a later
    copy of the same event id with other content is recognised (a miss is one in two
    million)."""
    fields = (turn.session_id, turn.speaker, turn.role, turn.text, turn.ts.isoformat())
    digest = hashlib.blake2b("\x1f".join(fields).encode("utf-8", "surrogatepass"), digest_size=8)
    return (int.from_bytes(digest.digest(), "big") % ((1 << 21) - 1)) + 1


def _forgets_user(event: InputEvent) -> bool:
    return isinstance(event, ForgetRequested) and not event.message_ids


def _texts(step: Sequence[Consumed[InputEvent]]) -> list[str]:
    """The distinct texts of a step's turns."""
    return list(dict.fromkeys(c.event.text for c in step if isinstance(c.event, Turn)))
