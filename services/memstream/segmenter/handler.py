"""The segmenter: turns in, L1 memories and window closures out.

A batch of raw events is handled in steps of consecutive records, each embedded ahead of
its turn (`embed_ahead`). In a step, invalid events go to the dead-letter topic; the rest
are grouped by user and run through the window reducer; the ready segments become L1
memories (written by the LLM backend with the newest L1s as context); then, per user, the
vectors go to Qdrant, and the new state, nodes, idempotency markers and outgoing events go
to Redis in one transaction (the outbox); only then are the events published. A crash at
any point replays the batch: ids are deterministic and markers skip what was committed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from memstream.adapters.redis.tree import RedisTree
from memstream.contracts.codec import (
    TURN_TYPE,
    decode_input,
    decode_state,
    encode_state,
    encode_window,
    memory_event,
)
from memstream.contracts.records import Outbound, RawEvent
from memstream.domain.ids import segment_id
from memstream.domain.models import (
    ForgetRequested,
    IndexedMemory,
    InputEvent,
    Level,
    MemoryNode,
    Turn,
    WindowClosed,
)
from memstream.domain.sparse import document_vector
from memstream.domain.windows import SegmentReady, WindowRules, apply, initial_state, next_due
from memstream.entrypoints.faust.dead_letters import DeadLetters
from memstream.ports import Embedder, LanguageModel, Publisher, VectorIndex
from memstream.segmenter.embed_ahead import EmbeddingsAhead

log = logging.getLogger(__name__)


class InvalidEvent(Exception):
    def __init__(self, reason: str, field_path: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.field_path = field_path


Validator = Callable[[bytes], dict[str, object]]


@dataclass(frozen=True, slots=True)
class Topics:
    memories: str
    windows: str


@dataclass
class BatchReport:
    """What one batch did, for metrics and tests."""

    events: int = 0
    duplicates: int = 0
    dead_letters: list[str] = field(default_factory=list)
    segments: list[MemoryNode] = field(default_factory=list)
    closures: list[WindowClosed] = field(default_factory=list)
    forgotten: list[str] = field(default_factory=list)
    embed_texts: dict[str, list[str]] = field(default_factory=dict)  # L1 id -> its messages


@dataclass
class _UserWork:
    user_id: str
    state: dict[str, object]
    seen: list[str]
    nodes: list[MemoryNode]
    outbox: list[Outbound]
    due: datetime | None


class Segmenter:
    def __init__(
        self,
        *,
        tree: RedisTree,
        index: VectorIndex,
        embedder: Embedder,
        llm: LanguageModel,
        publisher: Publisher,
        topics: Topics,
        dead_letters: DeadLetters,
        validate: Validator,
        forget: Callable[[str], Awaitable[object]],
        rules: WindowRules,
        history_window: int = 3,
        step_size: int = 1024,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._tree = tree
        self._index = index
        self._embedder = embedder
        self._llm = llm
        self._publisher = publisher
        self._dead_letters = dead_letters
        self._topics = topics
        self._validate = validate
        self._forget = forget
        self._rules = rules
        self._history = history_window
        if step_size <= 0:
            raise ValueError("step_size must be positive")
        self._step_size = step_size
        self._previous_step_vectors: dict[str, list[float]] = {}
        self._clock = clock
        self.handled = 0  # records fully processed by this instance, for progress checks

    async def handle_batch(self, raws: Sequence[RawEvent]) -> BatchReport:
        report = await self._handle(raws)
        self.handled += len(raws)
        return report

    async def _handle(self, raws: Sequence[RawEvent]) -> BatchReport:
        report = BatchReport(events=len(raws))
        steps = [raws[i : i + self._step_size] for i in range(0, len(raws), self._step_size)]
        # The messages' embeddings depend neither on validation nor on the window state, so
        # every step's texts go to the embedder now; a step waits only for its own.
        ahead = EmbeddingsAhead(self._embedder, [_turn_texts(step) for step in steps])
        await asyncio.sleep(0)  # let it hand the first texts to the embedder before we go on
        try:
            for index, step in enumerate(steps):
                await self._handle_step(step, report, ahead, index)
        finally:
            await ahead.close()
        return report

    async def _handle_step(
        self, raws: Sequence[RawEvent], report: BatchReport, ahead: EmbeddingsAhead, index: int
    ) -> None:
        per_user: dict[str, list[InputEvent]] = {}
        for raw in raws:
            event = await self._decode_or_dead_letter(raw, report)
            if event is not None:
                per_user.setdefault(event.user_id, []).append(event)
        # Users are independent: their LLM calls and store reads overlap.
        results = await asyncio.gather(
            *(self._user_work(user_id, events, report) for user_id, events in per_user.items())
        )
        work = [w for w in results if w is not None]
        step_vectors = await ahead.vectors(index)
        # A segment may hold a message of the step before (a question waiting for its reply).
        embedded = self._previous_step_vectors | step_vectors
        self._previous_step_vectors = step_vectors

        await self._store_vectors([n for w in work for n in w.nodes], report.embed_texts, embedded)
        for w in work:
            await self._tree.commit_user(
                w.user_id,
                state=w.state,
                seen=w.seen,
                nodes=w.nodes,
                outbox=[o.to_json() for o in w.outbox],
                due=w.due,
            )
        for w in work:
            await self._flush_outbox(w.user_id)

    async def _decode_or_dead_letter(self, raw: RawEvent, report: BatchReport) -> InputEvent | None:
        try:
            return decode_input(dict(self._validate(raw.value)))
        except InvalidEvent as bad:
            reason, field_path = bad.reason, bad.field_path
        except (ValueError, KeyError, TypeError) as bad:
            reason, field_path = f"undecodable event: {bad}", None
        report.dead_letters.append(reason)
        await self._dead_letters.send(raw, reason, field_path)
        log.warning("dead-lettered %s/%s@%s: %s", raw.topic, raw.partition, raw.offset, reason)
        return None

    async def _user_work(
        self, user_id: str, events: list[InputEvent], report: BatchReport
    ) -> _UserWork | None:
        events = await self._apply_forgets(user_id, events, report)
        return await self._reduce(user_id, events, report) if events else None

    async def _apply_forgets(
        self, user_id: str, events: list[InputEvent], report: BatchReport
    ) -> list[InputEvent]:
        """A forget request wipes the user; events before it in the batch are moot."""
        last_forget = max(
            (i for i, e in enumerate(events) if isinstance(e, ForgetRequested)), default=None
        )
        if last_forget is None:
            return events
        await self._forget(user_id)
        report.forgotten.append(user_id)
        return events[last_forget + 1 :]

    async def _reduce(
        self, user_id: str, events: list[InputEvent], report: BatchReport
    ) -> _UserWork:
        await self._flush_outbox(user_id)  # left over by a crash between commit and publish
        stored = await self._tree.load_state(user_id)
        first_tz = next((e.tz for e in events if isinstance(e, Turn) and e.tz), None)
        state = (
            decode_state(stored)
            if stored
            else initial_state(user_id, first_tz or self._rules.default_tz)
        )
        turns = [e for e in events if isinstance(e, Turn)]
        fresh = dict(
            zip(
                [t.event_id for t in turns],
                await self._tree.unseen(user_id, [t.event_id for t in turns]),
                strict=True,
            )
        )

        now = self._clock()
        seen: list[str] = []
        segments: list[SegmentReady] = []
        closures: list[WindowClosed] = []
        for event in events:
            if isinstance(event, ForgetRequested):
                continue
            if isinstance(event, Turn):
                if not fresh.get(event.event_id, False) or event.event_id in seen:
                    report.duplicates += 1
                    continue
                seen.append(event.event_id)
            state, outputs = apply(state, event, now, self._rules)
            for out in outputs:
                if isinstance(out, SegmentReady):
                    segments.append(out)
                else:
                    closures.append(out)

        nodes = await self._write_segments(user_id, segments, report.embed_texts)
        report.segments.extend(nodes)
        report.closures.extend(closures)
        # Memories before closures: a consumer of both sees a window's children first.
        outbox = [Outbound(self._topics.memories, user_id, memory_event(n)) for n in nodes]
        outbox += [Outbound(self._topics.windows, user_id, encode_window(c)) for c in closures]
        return _UserWork(
            user_id, encode_state(state), seen, nodes, outbox, next_due(state, self._rules)
        )

    async def _write_segments(
        self, user_id: str, segments: list[SegmentReady], embed_texts: dict[str, list[str]]
    ) -> list[MemoryNode]:
        if not segments:
            return []
        history = await self._tree.recent(user_id, Level.SEGMENT, self._history)
        nodes: list[MemoryNode] = []
        for seg in segments:
            summary = await self._llm.write_segment(
                seg.messages, history[-self._history :] if self._history else []
            )
            msgs = seg.messages
            node = MemoryNode(
                id=segment_id(user_id, [m.event_id for m in msgs]),
                user_id=user_id,
                level=Level.SEGMENT,
                t_start=min(m.ts for m in msgs),
                t_end=max(m.ts for m in msgs),
                text=summary.text,
                parent_id=seg.parent_id,
                source_ids=tuple(m.event_id for m in msgs),
                degraded=summary.degraded,
                session_id=msgs[0].session_id,
                speakers=tuple(dict.fromkeys(m.speaker for m in msgs)),
            )
            nodes.append(node)
            history.append(node)
            embed_texts[node.id] = [m.text for m in msgs]
        return nodes

    async def _store_vectors(
        self,
        nodes: list[MemoryNode],
        embed_texts: dict[str, list[str]],
        embedded: dict[str, list[float]],
    ) -> None:
        """Index the new L1s; each dense vector is the mean of its messages' embeddings.

        The memory's text (dated, third person) feeds the lexical channel and readers; the
        dense channel encodes the messages as the speakers wrote them, closer to how people
        phrase questions, at exactly the embedder's cost for the raw messages.
        """
        if not nodes:
            return
        groups = [embed_texts.get(n.id) or [n.text] for n in nodes]
        # Messages kept pending since before the last step were not embedded ahead.
        missing = list(dict.fromkeys(t for g in groups for t in g if t not in embedded))
        if missing:
            embedded = embedded | dict(
                zip(missing, await self._embedder.embed(missing), strict=True)
            )
        dense = [mean_direction([embedded[t] for t in group]) for group in groups]
        await self._index.upsert(
            [
                IndexedMemory(n, d, document_vector(n.text))
                for n, d in zip(nodes, dense, strict=True)
            ]
        )

    async def _flush_outbox(self, user_id: str) -> None:
        pending = await self._tree.outbox(user_id)
        if pending:
            await self._publisher.publish([Outbound.from_json(p) for p in pending])
            await self._tree.clear_outbox(user_id, len(pending))


def _turn_texts(raws: Sequence[RawEvent]) -> list[str]:
    """The distinct texts of the records that look like turns, read without validating them.

    Validating takes longer than reading the text straight from the JSON, which lets
    embedding start at once. A text of an event that then fails validation is embedded for
    nothing, and is never stored.
    """
    texts: dict[str, None] = {}
    for raw in raws:
        try:
            value = json.loads(raw.value)
        except ValueError:  # includes undecodable bytes; validation reports it
            continue
        if isinstance(value, dict) and value.get("type") == TURN_TYPE:
            text = value.get("text")
            if isinstance(text, str):
                texts[text] = None
    return list(texts)


def mean_direction(vectors: Sequence[Sequence[float]]) -> list[float]:
    """The normalised mean of unit vectors (cosine-friendly centroid)."""
    if len(vectors) == 1:
        return list(vectors[0])
    summed = [sum(column) for column in zip(*vectors, strict=True)]
    norm = math.sqrt(sum(v * v for v in summed)) or 1.0
    return [v / norm for v in summed]
