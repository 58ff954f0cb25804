"""Forgetting single messages over the fakes: the segmenter rewrites or removes their L1s and
re-closes the ancestors; the consolidator (fed the published closures) rewrites or removes
them; nothing of the message is left, and it stays forgotten when it comes again."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from tests.unit.fakes import FakeEmbedder, FakeIndex, FakeTree, FlakyPublisher

from memstream.consolidator.handler import Consolidator
from memstream.contracts.catalog import load_catalog
from memstream.contracts.codec import decode_window
from memstream.contracts.records import Consumed, RawEvent
from memstream.domain.forgetting import Tombstone
from memstream.domain.ids import segment_id
from memstream.domain.models import (
    ClockTicked,
    ForgetRequested,
    InputEvent,
    Level,
    MemoryNode,
    SessionEnded,
    Summary,
    Turn,
    Window,
)
from memstream.domain.windows import WindowRules
from memstream.recall.service import MemoryService
from memstream.segmenter.handler import Segmenter, Topics

USER = "ana"
T0 = datetime(2024, 5, 6, 9, 0, tzinfo=UTC)
NOW = datetime(2024, 6, 30, 12, 0, tzinfo=UTC)
TOPICS = Topics(memories="memories", windows="windows")


class EchoWriter:
    """Every node quotes what it was made of, so a forgotten text would show through."""

    async def write_segment(
        self, messages: Sequence[Turn], history: Sequence[MemoryNode]
    ) -> Summary:
        return Summary(" / ".join(f"{m.speaker}: {m.text}" for m in messages))

    async def consolidate(
        self,
        level: Level,
        window: Window,
        children: Sequence[MemoryNode],
        history: Sequence[MemoryNode],
        knowledge: object = None,
    ) -> Summary:
        return Summary(f"{level.label}: " + "; ".join(c.text for c in children))


async def _no_user_forget(user_id: str, tombstone: Tombstone) -> None:
    raise AssertionError("a message forget must not forget the user")


@dataclass
class Rig:
    tree: FakeTree
    index: FakeIndex
    publisher: FlakyPublisher
    segmenter: Segmenter
    consolidator: Consolidator
    offset: int = 0

    async def send(self, *events: InputEvent) -> None:
        """Events through the segmenter, then every closure it published through the
        consolidator, as the two agents would in one partition."""
        batch = []
        for e in events:
            batch.append(Consumed(e, RawEvent(b"{}", "turns", 0, self.offset, None)))
            self.offset += 1
        before = len(self.publisher.sent)
        await self.segmenter.handle_batch(batch)
        closures = [
            decode_window(o.value)
            for o in self.publisher.sent[before:]
            if o.topic == TOPICS.windows
        ]
        await self.consolidator.handle_batch(closures)

    def removals(self) -> list[list[str]]:
        """The node ids of each `memory_removed.v1` published, checked against the schema."""
        found = []
        for o in self.publisher.sent:
            if o.value.get("type") == "memory_removed.v1":
                assert load_catalog().validate(None, o.value) == []
                found.append(list(o.value["ids"]))
        return found

    def versions(self) -> dict[str, int]:
        return {i: s.node.version for (u, i), s in self.tree.stored.items() if u == USER}

    def indexed(self) -> dict[str, MemoryNode]:
        """What the index holds now: each point's last write, minus the points deleted."""
        points = {m.node.id: m.node for m in self.index.upserted}
        for user, point_id in self.index.deleted:
            if user == USER:
                points.pop(point_id, None)
        return points

    def everywhere(self) -> str:
        """Every text the fakes keep for the user: nodes, index payloads, state, outboxes,
        and the facts and entity surfaces its L1s said."""
        nodes = [json.dumps(repr(s)) for (u, _), s in self.tree.stored.items() if u == USER]
        payloads = [repr(n) for n in self.indexed().values()]
        outboxes = [e for (u, _), box in self.tree.outboxes.items() if u == USER for e in box]
        knowledge = [
            *self.tree.leaf_facts.get(USER, {}).values(),
            *self.tree.leaf_entities.get(USER, {}).values(),
        ]
        return "\n".join([*nodes, *payloads, self.tree.states.get(USER, ""), *outboxes, *knowledge])


def rig(
    clock: Callable[[], datetime] = lambda: NOW,
    retention: timedelta | None = None,
    knowledge: bool = True,
    tree: FakeTree | None = None,
) -> Rig:
    tree = tree or FakeTree()
    index, embedder, publisher = FakeIndex(tree), FakeEmbedder(), FlakyPublisher()
    writer = EchoWriter()
    segmenter = Segmenter(
        tree=tree,
        index=index,  # type: ignore[arg-type]
        embedder=embedder,
        llm=writer,  # type: ignore[arg-type]
        publisher=publisher,
        topics=TOPICS,
        forget=_no_user_forget,
        rules=WindowRules(),
        clock=clock,
        retention=retention,
        knowledge=knowledge,
    )
    consolidator = Consolidator(
        tree=tree,
        index=index,  # type: ignore[arg-type]
        embedder=embedder,
        llm=writer,  # type: ignore[arg-type]
        publisher=publisher,
        memories_topic=TOPICS.memories,
    )
    return Rig(tree, index, publisher, segmenter, consolidator)


def turn(event_id: str, minute: int, role: str, text: str, session: str = "s1") -> Turn:
    speaker = "Ana" if role == "user" else "Bot"
    return Turn(
        event_id, USER, session, minute, speaker, role, text, T0 + timedelta(minutes=minute)
    )  # type: ignore[arg-type]


CONVERSATION = [
    turn("q0", 0, "user", "I adopted a kitten named Pistachio"),
    turn("a0", 1, "assistant", "Congratulations on the kitten"),
    turn("q1", 2, "user", "My sister lives in Lisbon"),
    turn("a1", 3, "assistant", "Lisbon is lovely in spring"),
]
SECRET = "Pistachio"


async def built() -> Rig:
    """The conversation as one closed session, consolidated up to the month."""
    r = rig()
    await r.send(*CONVERSATION, SessionEnded(USER, "s1", T0 + timedelta(minutes=4)))
    await r.send(ClockTicked(USER, NOW))  # the day, week and month are long over
    assert {s.node.level for s in r.tree.stored.values()} == set(Level)
    return r


async def test_forgetting_one_message_rewrites_its_leaf_and_exactly_its_ancestors() -> None:
    r = await built()
    assert SECRET in r.everywhere()
    before = r.versions()
    leaf = segment_id(USER, ["q0", "a0"])
    other = segment_id(USER, ["q1", "a1"])

    await r.send(ForgetRequested(USER, ("q0",)))

    after = r.versions()
    assert SECRET not in r.everywhere()
    assert after.keys() == before.keys()
    changed = {i for i in after if after[i] != before[i]}
    ancestors = set()
    parent = r.tree.stored[(USER, leaf)].node.parent_id
    while parent:
        ancestors.add(parent)
        parent = r.tree.stored[(USER, parent)].node.parent_id
    assert len(ancestors) == 4  # session, day, week, month
    assert changed == {leaf} | ancestors
    assert all(after[i] == before[i] + 1 for i in changed)
    assert after[other] == before[other]
    rewritten = r.tree.stored[(USER, leaf)].node
    assert rewritten.source_ids == ("a0",)
    assert [m.event_id for m in rewritten.messages] == ["a0"]
    assert all("q0" not in r.tree.stored[(USER, a)].node.source_ids for a in ancestors)
    assert await r.tree.forgotten_messages(USER, ["q0", "a0"]) == [True, False]


async def test_a_forgotten_message_takes_its_facts_and_names_and_leaves_the_others() -> None:
    r = await built()
    [pet] = [f for f in await r.tree.facts(USER) if f.attribute == "pet"]
    assert pet.value == "kitten named Pistachio" and pet.source_ids == ("q0",)
    assert await r.tree.entity(USER, SECRET) is not None

    await r.send(ForgetRequested(USER, ("q0",)))

    facts = await r.tree.facts(USER)
    assert [(f.subject, f.attribute, f.value) for f in facts] == [
        ("kin:ana:sister", "lives_in", "Lisbon")
    ]
    assert await r.tree.entity(USER, SECRET) is None
    assert await r.tree.entity(USER, "Lisbon") is not None


async def test_a_leaf_left_without_messages_is_removed_from_store_and_index() -> None:
    r = await built()
    leaf = segment_id(USER, ["q0", "a0"])
    await r.send(ForgetRequested(USER, ("q0", "a0")))
    assert (USER, leaf) not in r.tree.stored
    assert leaf not in r.indexed()
    session = next(s.node for s in r.tree.stored.values() if s.node.level == Level.SESSION)
    assert session.children == (segment_id(USER, ["q1", "a1"]),)
    assert SECRET not in r.everywhere() and "Congratulations" not in r.everywhere()
    assert r.removals() == [[leaf]]


async def test_forgetting_every_message_removes_the_whole_branch() -> None:
    r = await built()
    ids = set(r.versions())
    await r.send(ForgetRequested(USER, ("q0", "a0", "q1", "a1")))
    assert [i for (u, i) in r.tree.stored if u == USER] == []
    assert r.indexed() == {}
    # Announced as removed: the two leaves by the segmenter, then each level above.
    removals = r.removals()
    assert sorted(i for ids_ in removals for i in ids_) == sorted(ids)
    assert len(removals[0]) == 2


async def test_a_forgotten_message_that_comes_again_stays_forgotten() -> None:
    r = await built()
    await r.send(ForgetRequested(USER, ("q0",)))
    versions = r.versions()
    r.tree.seen[USER].clear()  # as if the idempotency markers had expired: only the tombstone
    report = await r.segmenter.handle_batch(
        [Consumed(CONVERSATION[0], RawEvent(b"{}", "turns", 0, 99, None))]
    )
    assert report.forgotten_turns == 1 and report.segments == []
    assert r.versions() == versions
    assert SECRET not in r.everywhere()


async def test_a_message_forgotten_before_it_arrives_never_enters() -> None:
    r = rig()
    await r.send(ForgetRequested(USER, ("q0",)), *CONVERSATION[:2])
    [leaf] = [s.node for s in r.tree.stored.values()]
    assert leaf.source_ids == ("a0",)
    assert SECRET not in r.everywhere()


async def test_a_message_waiting_for_its_reply_leaves_the_window_state() -> None:
    r = rig()
    await r.send(CONVERSATION[0])
    assert SECRET in r.tree.states[USER]
    await r.send(ForgetRequested(USER, ("q0",)))
    assert SECRET not in r.tree.states[USER]
    await r.send(CONVERSATION[1])
    [leaf] = [s.node for s in r.tree.stored.values()]
    assert leaf.source_ids == ("a0",)


async def test_a_waiting_message_forgotten_with_its_reply_in_one_batch_stays_out() -> None:
    r = rig()
    await r.send(CONVERSATION[0])
    await r.send(ForgetRequested(USER, ("q0",)), CONVERSATION[1])
    [leaf] = [s.node for s in r.tree.stored.values()]
    assert leaf.source_ids == ("a0",)
    assert SECRET not in r.everywhere()


async def test_a_replayed_forget_changes_nothing_more() -> None:
    r = await built()
    await r.send(ForgetRequested(USER, ("q0",)))
    versions = r.versions()
    await r.send(ForgetRequested(USER, ("q0",)))
    assert r.versions() == versions


class CountingTree(FakeTree):
    """The fake store, counting the nodes read by id and the reads of whole levels."""

    nodes_read = 0
    level_reads = 0

    async def get_many(self, user_id: str, node_ids: Sequence[str]) -> list[MemoryNode]:
        self.nodes_read += len(node_ids)
        return await super().get_many(user_id, node_ids)

    async def level_ids(self, *args: object, **kwargs: object) -> list[str]:
        self.level_reads += 1
        return await super().level_ids(*args, **kwargs)  # type: ignore[arg-type]


async def test_the_forget_status_reads_the_forgets_nodes_not_every_summary() -> None:
    # Forty sessions a week apart: 40 L2s, 40 days, ~40 weeks, ~10 months above the leaves.
    tree = CountingTree()
    r = rig(tree=tree)
    for n in range(40):
        at = 7 * 24 * 60 * n
        q, a = f"q{n}", f"a{n}"
        await r.send(
            turn(q, at, "user", f"Session {n}: I adopted a kitten", f"s{n}"),
            turn(a, at + 1, "assistant", "Congratulations", f"s{n}"),
            SessionEnded(USER, f"s{n}", T0 + timedelta(minutes=at + 2)),
        )
    await r.send(ClockTicked(USER, NOW + timedelta(days=365)))
    summaries = [s for (u, _), s in tree.stored.items() if u == USER and s.node.level > 1]
    assert len(summaries) >= 100
    service = MemoryService(
        tree=tree, forget_user=_no_forget_user, publisher=r.publisher, turns_topic="turns"
    )

    await r.send(ForgetRequested(USER, ("q20",)))
    assert await tree.forget_reaches(USER, "q20")  # recorded with its tombstone
    tree.nodes_read = tree.level_reads = 0
    assert await service.message_forgotten(USER, "q20")
    # The session, day, week and month above its leaf (and later profiles, which cite its
    # facts): bounded by the tree's depth, not by the user's summaries.
    assert tree.level_reads == 0
    assert 4 <= tree.nodes_read <= 4 + 3 * 4

    # A summary above it that still cites it (consolidated again, but by a consolidation
    # that read the message before the forget) is found.
    month = tree.stored[(USER, segment_id(USER, ["q20", "a20"]))].node
    while month.parent_id is not None:
        month = tree.stored[(USER, month.parent_id)].node
    tree.add(replace(month, source_ids=(*month.source_ids, "q20")))
    assert not await service.message_forgotten(USER, "q20")
    # A tombstone of before the record: every summary is read, as before.
    tree.reaches[USER].pop("q20")
    tree.level_reads = 0
    assert not await service.message_forgotten(USER, "q20")
    assert tree.level_reads > 0


async def _no_forget_user(user_id: str) -> dict[str, int]:
    raise AssertionError("no user is forgotten here")
