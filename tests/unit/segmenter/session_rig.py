"""A user's events through the real segmenter and consolidator handlers over the fakes
(no broker), and the tree they leave, for comparing trees node by node.

The LoCoMo helpers read a conversation in place (`../shared/data/locomo/`) as wire events,
in either role layout: `other` (two named speakers, as `memstream ingest` sends them) or
`assistant` (the second speaker as an assistant: replies pair with their questions).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.unit.fakes import FakeEmbedder, FakeIndex, FakeTree, FlakyPublisher
from tests.unit.segmenter.test_forget_messages import EchoWriter

from memstream.consolidator.handler import Consolidator
from memstream.contracts.codec import decode_input, decode_window
from memstream.contracts.records import Consumed, RawEvent
from memstream.domain.derivation import Derivation
from memstream.domain.models import ClockTicked, InputEvent, MemoryNode, Turn
from memstream.domain.windows import WindowRules
from memstream.entrypoints.embedded.locomo import conversation_events
from memstream.segmenter.handler import Segmenter, Topics
from memstream_lab.locomo import load_conversation, locomo_data_dir

TOPICS = Topics(memories="memories", windows="windows")
# After every LoCoMo date: the wall clock of the handlers, past every window's end.
NOW = datetime(2030, 1, 1, tzinfo=UTC)


async def _no_user_forget(user_id: str, tombstone: object) -> None:
    raise AssertionError("no user is forgotten here")


@dataclass
class HandlerRig:
    tree: FakeTree
    publisher: FlakyPublisher
    segmenter: Segmenter
    consolidator: Consolidator
    offset: int = 0

    async def send(self, *events: InputEvent) -> None:
        """One batch through the segmenter, then the closures it published through the
        consolidator, as the two agents would in one partition."""
        batch = []
        for event in events:
            batch.append(Consumed(event, RawEvent(b"{}", "turns", 0, self.offset, None)))
            self.offset += 1
        before = len(self.publisher.sent)
        await self.segmenter.handle_batch(batch)
        closures = [
            decode_window(o.value) for o in self.publisher.sent[before:] if o.topic == "windows"
        ]
        await self.consolidator.handle_batch(closures)

    async def send_in_batches(self, events: Sequence[InputEvent], sizes: Sequence[int]) -> None:
        """`events` in batches of the sizes given in turn (cycled), then a clock tick that
        closes every session and window left open (a day after the handlers' clock)."""
        at, i = 0, 0
        while at < len(events):
            size = sizes[i % len(sizes)]
            await self.send(*events[at : at + size])
            at, i = at + size, i + 1
        users = dict.fromkeys(e.user_id for e in events)
        await self.send(*(ClockTicked(u, NOW + timedelta(days=1)) for u in users))

    def nodes(self, user_id: str) -> dict[str, MemoryNode]:
        return {i: s.node for (u, i), s in self.tree.stored.items() if u == user_id}


def handler_rig(
    rules: WindowRules,
    *,
    llm: object | None = None,
    derivation: Derivation | None = None,
    stores: HandlerRig | None = None,
) -> HandlerRig:
    """Workers writing with `llm` (default: `EchoWriter`) and recording `derivation`; on the
    stores of `stores` if given (the same deployment after an upgrade), else new ones."""
    tree = stores.tree if stores else FakeTree()
    publisher = stores.publisher if stores else FlakyPublisher()
    index, embedder = FakeIndex(tree), FakeEmbedder()
    writer = llm or EchoWriter()
    segmenter = Segmenter(
        tree=tree,
        index=index,  # type: ignore[arg-type]
        embedder=embedder,
        llm=writer,  # type: ignore[arg-type]
        publisher=publisher,
        topics=TOPICS,
        forget=_no_user_forget,
        rules=rules,
        clock=lambda: NOW,
        derivation=derivation,
    )
    consolidator = Consolidator(
        tree=tree,
        index=index,  # type: ignore[arg-type]
        embedder=embedder,
        llm=writer,  # type: ignore[arg-type]
        publisher=publisher,
        memories_topic=TOPICS.memories,
        derivation=derivation,
    )
    offset = stores.offset if stores else 0
    return HandlerRig(tree, publisher, segmenter, consolidator, offset)


def locomo_events(
    conversation: str, sessions: int, layout: str, user_id: str = "locomo"
) -> list[InputEvent]:
    """The first `sessions` sessions of a LoCoMo conversation as decoded events, in order."""
    conv = load_conversation(locomo_data_dir() / f"{conversation}.json")
    kept = {s.id for s in conv.sessions[:sessions]}
    values = [v for v in conversation_events(conv, user_id) if v["session_id"] in kept]
    return [decode_input(_laid_out(v, layout)) for v in values]


def _laid_out(value: dict[str, Any], layout: str) -> dict[str, Any]:
    if value.get("role") == "other" and layout == "assistant":
        return {**value, "role": "assistant"}
    return value


def shuffled_within_sessions(
    events: Sequence[InputEvent], rng: random.Random, reach: int | None = None
) -> list[InputEvent]:
    """Each session's turns in another order (none moved further than `reach` places, if
    given), its `session_end` still after them."""
    out: list[InputEvent] = []
    run: list[InputEvent] = []
    for event in [*events, None]:
        if isinstance(event, Turn) and (not run or run[0].session_id == event.session_id):
            run.append(event)
            continue
        out += _permuted(run, rng, reach)
        run = [event] if isinstance(event, Turn) else []
        if event is not None and not isinstance(event, Turn):
            out.append(event)
    return out


def _permuted(run: list[InputEvent], rng: random.Random, reach: int | None) -> list[InputEvent]:
    if reach is None:
        return rng.sample(run, len(run))
    # Sort by place plus a bounded random shift: nothing moves more than `reach` places.
    keyed = sorted(range(len(run)), key=lambda i: i + rng.uniform(0, reach))
    return [run[i] for i in keyed]


def with_duplicates(events: list[InputEvent], rng: random.Random, share: float) -> list[InputEvent]:
    """`events` with copies of some turns put back in later (a producer's retries)."""
    out = list(events)
    turns = [e for e in events if isinstance(e, Turn)]
    for turn in rng.sample(turns, int(len(turns) * share)):
        after = out.index(turn)
        out.insert(rng.randint(after + 1, min(len(out), after + 6)), turn)
    return out


def turn_at(user: str, session: str, seq: int, ts: datetime, text: str) -> Turn:
    """A turn of a user/assistant conversation: even `seq` the user's, odd the reply."""
    role = "user" if seq % 2 == 0 else "assistant"
    return Turn(
        f"{session}-{ts:%Y%m%d%H%M}-{seq}",
        user,
        session,
        seq,
        "Ana" if role == "user" else "Bot",
        role,  # type: ignore[arg-type]
        text,
        ts,
    )


def minutes(n: float) -> timedelta:
    return timedelta(minutes=n)
