"""Filling the stores for the scale benchmark, as the write path fills them, without Kafka.

A user's generated chat (`scale_chat`) goes through the segmenter's own window reducer
(`domain.windows.apply`, its time taken from the messages), the offline backend writes each
L1 and each summary (`OfflineLanguageModel`, as `MEMSTREAM_LLM_*` unset does), and the
results are written through the real adapters in the shape of the handlers' commits: a step
of `STEP_MESSAGES` turns is one `commit_user` (window state, seen markers, L1s with their
knowledge, due time) after its points are upserted, and each closed window is one
`commit_nodes` (node and fingerprint) after its point, bottom-up. The tree store writing
here runs on the messages' clock, so markers and tombstones age as if the chat had been
live. What is skipped is publishing: no outbox, no events, no consumer.

Dense vectors come from `Vectors`: either the real embedder (`real`: each L1's messages
embedded and averaged, each summary's head embedded, as the handlers do) or a bank of real
embeddings resampled (`resampled`): the embedder embeds `BANK_SIZE` LoCoMo messages once,
and each vector is a bank vector plus Gaussian noise of `NOISE` of its norm, normalised. It
keeps the real model's anisotropy (its vectors crowd into a cone) that uniform random
vectors lack, which is what an HNSW graph and a filtered search react to.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Protocol

from memstream.adapters.llm.offline import OfflineLanguageModel
from memstream.adapters.redis.tree import RedisTree
from memstream.contracts.codec import decode_input, encode_state
from memstream.domain.derivation import Derivation
from memstream.domain.incarnations import SessionInfo
from memstream.domain.knowledge import knowledge_change
from memstream.domain.models import (
    IndexedMemory,
    MemoryNode,
    SessionEnded,
    StoredNode,
    Turn,
    WindowClosed,
)
from memstream.domain.nodes import embedding_head, fingerprint, segment_node, window_node
from memstream.domain.remembered import RememberedChanges
from memstream.domain.sparse import document_vector
from memstream.domain.windows import (
    SegmentReady,
    UserWindows,
    WindowRules,
    apply,
    initial_state,
    next_due,
)
from memstream.ports import Embedder, UserCommit, VectorIndex
from memstream.segmenter.knowledge import fact_outbox

STEP_MESSAGES = 64  # turns per commit, as a consume step of a busy partition


@dataclass
class _KeptApart:
    """What the fill has written of the remembered sessions and window keys, so each commit
    writes what changed, as the segmenter keeps them (`domain.remembered`); the fill's own
    reducer holds the state whole."""

    sessions: dict[str, SessionInfo] = field(default_factory=dict)
    closed: set[str] = field(default_factory=set)
    seq: int = 0

    def split(self, state: UserWindows) -> tuple[UserWindows, RememberedChanges]:
        closed = {sid: s for sid, s in state.sessions.items() if s.closed}
        new_keys = [key for key in state.closed if key not in self.closed]
        changes = RememberedChanges(
            sessions=tuple(s for sid, s in closed.items() if self.sessions.get(sid) != s),
            dropped=tuple(sorted(self.sessions.keys() - closed.keys())),
            closed=tuple((key, self.seq + n) for n, key in enumerate(new_keys, 1)),
        )
        self.sessions, self.closed = closed, set(state.closed)
        self.seq += len(new_keys)
        document = replace(
            state,
            sessions={sid: s for sid, s in state.sessions.items() if not s.closed},
            closed=(),
            closed_seq=self.seq,
        )
        return document, changes


BANK_SIZE = 512
NOISE = 0.35


class Vectors(Protocol):
    async def for_groups(self, groups: Sequence[Sequence[str]]) -> list[list[float]]:
        """One unit vector per group of texts (an L1's messages, or a summary's head)."""
        ...


def _unit(values: Sequence[float]) -> list[float]:
    norm = sum(v * v for v in values) ** 0.5 or 1.0
    return [v / norm for v in values]


@dataclass
class EmbeddedVectors:
    """The real embedder: every text embedded, a group's vectors averaged."""

    embedder: Embedder

    async def for_groups(self, groups: Sequence[Sequence[str]]) -> list[list[float]]:
        texts = list(dict.fromkeys(t for g in groups for t in g))
        if not texts:
            return []
        by_text = dict(zip(texts, await self.embedder.embed(texts), strict=True))
        return [_unit([sum(c) for c in zip(*(by_text[t] for t in g), strict=True)]) for g in groups]


@dataclass
class ResampledVectors:
    """Real embeddings of LoCoMo messages, drawn again with noise (seeded)."""

    bank: list[list[float]]
    seed: int = 41
    _rnd: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self._rnd = random.Random(self.seed)

    async def for_groups(self, groups: Sequence[Sequence[str]]) -> list[list[float]]:
        out = []
        for _ in groups:
            base = self._rnd.choice(self.bank)
            sigma = NOISE / len(base) ** 0.5
            out.append(_unit([b + self._rnd.gauss(0.0, sigma) for b in base]))
        return out


@dataclass
class Filled:
    """What one user's fill wrote."""

    messages: int = 0
    l1: int = 0
    summaries: int = 0
    last_ts: datetime | None = None


class Filler:
    """Writes users' chats into the stores through the adapters (see the module's doc)."""

    def __init__(
        self,
        *,
        client: Any,
        namespace: str,
        index: VectorIndex,
        vectors: Vectors,
        rules: WindowRules,
        derivation: Derivation | None,
    ) -> None:
        self._client = client
        self._namespace = namespace
        self._index = index
        self._vectors = vectors
        self._rules = rules
        self._derivation = derivation
        self._llm = OfflineLanguageModel()

    async def fill_user(
        self,
        user_id: str,
        events: Iterable[dict[str, Any]],
        checkpoint: Callable[[Filled], Any] | None = None,
        every: int = 0,
    ) -> Filled:
        """Write the user's chat; `checkpoint(filled)` is awaited every `every` messages."""
        now: list[datetime] = []
        tree = RedisTree(self._client, namespace=self._namespace, clock=lambda: now[-1])
        state = initial_state(user_id, "UTC")
        filled = Filled()
        history: list[MemoryNode] = []
        below: dict[str, list[MemoryNode]] = {}
        ready: list[SegmentReady] = []
        closures: list[WindowClosed] = []
        seen: list[str] = []
        apart = _KeptApart()
        for value in events:
            event = decode_input(value)
            if not isinstance(event, Turn | SessionEnded):
                continue
            at = event.ts if isinstance(event, Turn) else (now[-1] if now else None)
            if at is None:
                continue
            now.append(at)
            del now[:-1]
            state, outputs = apply(state, event, at, self._rules)
            ready += [o for o in outputs if isinstance(o, SegmentReady)]
            closures += [o for o in outputs if isinstance(o, WindowClosed)]
            if isinstance(event, Turn):
                seen.append(event.event_id)
                filled.messages += 1
                filled.last_ts = at
            if len(seen) >= STEP_MESSAGES or (isinstance(event, SessionEnded) and seen):
                split = apart.split(state)
                await self._commit_step(tree, user_id, split, ready, seen, history, below)
                await self._consolidate(tree, user_id, closures, below, filled)
                filled.l1 += len(ready)
                ready, closures, seen = [], [], []
                if (
                    checkpoint is not None
                    and every
                    and filled.messages // every > ((filled.messages - STEP_MESSAGES) // every)
                ):
                    await checkpoint(filled)
        if seen or ready:
            await self._commit_step(tree, user_id, apart.split(state), ready, seen, history, below)
            filled.l1 += len(ready)
        await self._consolidate(tree, user_id, closures, below, filled)
        return filled

    async def _commit_step(
        self,
        tree: RedisTree,
        user_id: str,
        split: tuple[UserWindows, RememberedChanges],
        ready: list[SegmentReady],
        seen: list[str],
        history: list[MemoryNode],
        below: dict[str, list[MemoryNode]],
    ) -> None:
        leaves: list[MemoryNode] = []
        for segment in ready:
            summary = await self._llm.write_segment(segment.messages, history[-3:])
            leaf = segment_node(user_id, segment, summary, self._derivation)
            leaves.append(leaf)
            history.append(leaf)
            below.setdefault(segment.parent_id, []).append(leaf)
        del history[:-3]
        if leaves:
            groups = [[m.text for m in s.messages] for s in ready]
            vectors = await self._vectors.for_groups(groups)
            await self._index.upsert(
                [
                    IndexedMemory(n, v, document_vector(n.text))
                    for n, v in zip(leaves, vectors, strict=True)
                ]
            )
        state, remembered = split
        # With the heads of the slots the leaves state, as the segmenter commits them (the
        # change feed's events it would publish are not wanted here).
        _, knowledge = await fact_outbox(tree, "fill", user_id, knowledge_change(leaves))
        await tree.commit_user(
            UserCommit(
                user_id,
                encode_state(state),
                seen=dict.fromkeys(seen, 0),
                nodes=leaves,
                due=next_due(state, self._rules),
                knowledge=knowledge,
                remembered=remembered,
            )
        )

    async def _consolidate(
        self,
        tree: RedisTree,
        user_id: str,
        closures: list[WindowClosed],
        below: dict[str, list[MemoryNode]],
        filled: Filled,
    ) -> None:
        for closure in sorted(closures, key=lambda c: c.window.level):
            children = below.pop(closure.node_id, [])
            if not children:
                continue
            summary = await self._llm.consolidate(
                closure.window.level, closure.window, children, []
            )
            node = window_node(closure, children, summary, 1)
            if closure.parent_id:
                below.setdefault(closure.parent_id, []).append(node)
            [vector] = await self._vectors.for_groups([[embedding_head(node.text)]])
            await self._index.upsert([IndexedMemory(node, vector, document_vector(node.text))])
            print_ = fingerprint(children, self._derivation)
            await tree.commit_nodes(user_id, [StoredNode(node, print_)], outbox=[])
            filled.summaries += 1
