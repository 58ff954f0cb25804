"""The segmenter over in-memory fakes: L1s, dedup, forgets, the outbox, the L1 latency."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest
from tests.unit.fakes import FakeEmbedder, FakeIndex, FakeTree, FlakyPublisher

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
)
from memstream.domain.windows import WindowRules
from memstream.ports import UserCommit
from memstream.segmenter.handler import Segmenter, Topics

USER = "ana"
T0 = datetime(2024, 5, 6, 9, 0, tzinfo=UTC)
NOW = datetime(2024, 5, 6, 12, 0, tzinfo=UTC)  # the segmenter's wall clock
TOPICS = Topics(memories="memories", windows="windows")


class EchoWriter:
    """Writes an L1 as its messages quoted; notes the history it was given."""

    def __init__(self) -> None:
        self.histories: list[list[str]] = []

    async def write_segment(
        self, messages: Sequence[Turn], history: Sequence[MemoryNode]
    ) -> Summary:
        self.histories.append([h.id for h in history])
        return Summary(" / ".join(f"{m.speaker}: {m.text}" for m in messages))


@dataclass
class Forgets:
    tree: FakeTree
    users: list[str] = field(default_factory=list)

    async def __call__(self, user_id: str, tombstone: Tombstone) -> None:
        self.users.append(user_id)
        await self.tree.forget(user_id, tombstone, ttl_s=None)


@dataclass
class Rig:
    tree: FakeTree
    index: FakeIndex
    embedder: FakeEmbedder
    publisher: FlakyPublisher
    forgets: Forgets
    segmenter: Segmenter

    def published(self, topic: str = "memories") -> list[dict[str, object]]:
        return [o.value for o in self.publisher.sent if o.topic == topic]

    async def l1s(self, user: str = USER) -> list[MemoryNode]:
        return await self.tree.get_many(user, await self.tree.level_ids(user, Level.SEGMENT))


def rig(
    step_size: int = 1024,
    on_progress: Callable[[Mapping[int, int], str | None], None] | None = None,
    shared_topic: str | None = None,
) -> Rig:
    tree = FakeTree()
    index, embedder, publisher = FakeIndex(tree), FakeEmbedder(), FlakyPublisher()
    forgets = Forgets(tree)
    segmenter = Segmenter(
        tree=tree,
        index=index,  # type: ignore[arg-type]
        embedder=embedder,
        llm=EchoWriter(),  # type: ignore[arg-type]
        publisher=publisher,
        topics=TOPICS,
        forget=forgets,
        rules=WindowRules(),
        step_size=step_size,
        clock=lambda: NOW,
        on_progress=on_progress,
        shared_topic=shared_topic,
    )
    return Rig(tree, index, embedder, publisher, forgets, segmenter)


def turn(event_id: str, minute: int, role: str = "user", user: str = USER) -> Turn:
    speaker = "Ana" if role == "user" else "Bot"
    text = f"{speaker} says {event_id}"
    return Turn(event_id, user, "s1", minute, speaker, role, text, T0 + timedelta(minutes=minute))  # type: ignore[arg-type]


def exchange(n: int, user: str = USER) -> list[Turn]:
    """Question and answer number `n`: one L1."""
    return [turn(f"q{n}", 2 * n, "user", user), turn(f"a{n}", 2 * n + 1, "assistant", user)]


def consumed(
    events: Sequence[InputEvent], received: float | None = None
) -> list[Consumed[InputEvent]]:
    """Events as the edge hands them over, with consecutive offsets (and a broker time)."""
    return [Consumed(e, RawEvent(b"{}", "turns", 0, i, received)) for i, e in enumerate(events)]


async def test_each_exchange_becomes_one_l1_stored_indexed_and_published() -> None:
    r = rig()
    report = await r.segmenter.handle_batch(consumed(exchange(0) + exchange(1)))
    ids = [segment_id(USER, ["q0", "a0"]), segment_id(USER, ["q1", "a1"])]
    assert [n.id for n in report.segments] == ids
    assert [n.id for n in await r.l1s()] == ids
    assert [m.node.id for m in r.index.upserted] == ids
    assert [e["id"] for e in r.published()] == ids
    assert await r.tree.outbox(USER, "segmenter") == []  # published, then cleared
    assert (report.events, report.duplicates) == (4, 0)
    assert r.segmenter.handled == 4
    # Each L1 was written with the L1s before it as context.
    assert r.segmenter._llm.histories == [[], [ids[0]]]  # type: ignore[attr-defined]


async def test_a_step_loads_each_user_once_and_commits_each_once() -> None:
    r = rig()
    commits: list[str] = []
    commit_user = r.tree.commit_user

    async def counted(commit: UserCommit) -> bool:
        commits.append(commit.user_id)
        return await commit_user(commit)

    r.tree.commit_user = counted  # type: ignore[method-assign]
    await r.segmenter.handle_batch(consumed(exchange(0) + exchange(0, "bo") + exchange(1)))
    assert r.tree.loads == 2
    assert sorted(commits) == ["ana", "bo"]


async def test_a_step_clears_every_users_outbox_in_one_call_after_the_publish() -> None:
    r = rig()
    one_by_one: list[str] = []

    async def cleared_alone(user_id: str, count: int, name: str) -> None:
        one_by_one.append(user_id)

    r.tree.clear_outbox = cleared_alone  # type: ignore[method-assign]
    clear_outboxes = r.tree.clear_outboxes
    published_before_clear: list[int] = []

    async def cleared(counts: Mapping[str, int], name: str) -> None:
        published_before_clear.append(len(r.publisher.sent))
        await clear_outboxes(counts, name)  # type: ignore[arg-type]

    r.tree.clear_outboxes = cleared  # type: ignore[method-assign]
    batch = exchange(0) + exchange(0, "bo") + exchange(0, "cy")
    await r.segmenter.handle_batch(consumed(batch))
    assert one_by_one == []
    assert published_before_clear == [3]  # one call, once the step's three L1s were published
    for user in (USER, "bo", "cy"):
        assert await r.tree.outbox(user, "segmenter") == []


async def test_a_session_end_publishes_the_closure_after_the_memories() -> None:
    r = rig()
    end = SessionEnded(USER, "s1", T0 + timedelta(minutes=5))
    await r.segmenter.handle_batch(consumed([*exchange(0), turn("q1", 2), end]))
    topics = [o.topic for o in r.publisher.sent]
    assert topics == ["memories", "memories", "windows"]  # the lone question flushed first
    [closure] = [decode_window(v) for v in r.published("windows")]
    assert (closure.window.level, closure.reason) == (Level.SESSION, "session_end")
    assert [n.source_ids for n in await r.l1s()] == [("q0", "a0"), ("q1",)]


async def test_a_turn_twice_in_one_batch_is_handled_once() -> None:
    r = rig()
    q, a = exchange(0)
    report = await r.segmenter.handle_batch(consumed([q, q, a]))
    assert report.duplicates == 1
    assert [n.source_ids for n in await r.l1s()] == [("q0", "a0")]
    assert len(r.published()) == 1


async def test_a_replayed_batch_writes_and_publishes_nothing_new() -> None:
    r = rig()
    batch = consumed(exchange(0) + exchange(1))
    await r.segmenter.handle_batch(batch)
    sent = list(r.publisher.sent)
    report = await r.segmenter.handle_batch(batch)
    assert (report.duplicates, report.segments) == (4, [])
    assert r.publisher.sent == sent
    assert len(await r.l1s()) == 2


async def test_an_event_id_reused_for_other_content_is_a_reported_conflict() -> None:
    from dataclasses import replace

    r = rig()
    q, a = exchange(0)
    await r.segmenter.handle_batch(consumed([q, a]))
    same, changed = q, replace(q, text="something else entirely")
    report = await r.segmenter.handle_batch(consumed([same, changed]))
    assert (report.duplicates, report.conflicts) == (2, ["q0"])
    assert [n.source_ids for n in await r.l1s()] == [("q0", "a0")]  # the first copy stays
    # Within one batch too.
    report = await r.segmenter.handle_batch(
        consumed([turn("q9", 30), replace(turn("q9", 30), text="other")])
    )
    assert (report.duplicates, report.conflicts) == (1, ["q9"])


async def test_events_before_a_forget_are_moot_and_those_after_it_count() -> None:
    r = rig()
    await r.segmenter.handle_batch(consumed(exchange(0)))  # already stored before the forget
    other = exchange(0, user="mira")
    batch = consumed([*exchange(1), ForgetRequested(USER), *other, *exchange(0)])
    report = await r.segmenter.handle_batch(batch)
    assert r.forgets.users == [USER]
    assert report.forgotten == [USER]
    # The change feed says so, under the forget record's place in the turns topic.
    [forgotten] = [e for e in r.published() if e["type"] == "user_forgotten.v1"]
    assert (forgotten["user_id"], forgotten["forget_id"]) == (USER, "0:2")
    # q1/a1 came before the forget; q0/a0 again after it, and the forget cleared their markers.
    assert [n.source_ids for n in await r.l1s()] == [("q0", "a0")]
    assert report.duplicates == 0
    assert [n.source_ids for n in await r.l1s("mira")] == [("q0", "a0")]  # others untouched


async def test_a_replay_of_the_records_before_a_forget_does_not_bring_the_user_back() -> None:
    r = rig()
    log = consumed([*exchange(0), ForgetRequested(USER), *exchange(1)])
    await r.segmenter.handle_batch(log)
    assert [n.source_ids for n in await r.l1s()] == [("q1", "a1")]
    # The consumer group is reset: the log comes again, in pieces, from the start.
    report = await r.segmenter.handle_batch(log[:2])
    assert report.predating_forget == 2
    assert report.segments == []
    await r.segmenter.handle_batch(log[2:])
    assert [n.source_ids for n in await r.l1s()] == [("q1", "a1")]
    # Records appended after the forget (later offsets) are a fresh start for the user.
    fresh = [Consumed(e, RawEvent(b"{}", "turns", 0, 10 + i)) for i, e in enumerate(exchange(2))]
    await r.segmenter.handle_batch(fresh)
    assert [n.source_ids for n in await r.l1s()] == [("q1", "a1"), ("q2", "a2")]


async def test_a_forget_landing_during_a_step_drops_its_writes_and_points() -> None:
    r = rig()

    class ForgetsWhileWriting(EchoWriter):
        async def write_segment(
            self, messages: Sequence[Turn], history: Sequence[MemoryNode]
        ) -> Summary:
            # The API forgets the user directly on the stores while the L1 is being written.
            await r.tree.forget(USER, Tombstone(forgotten_at=0.0), ttl_s=None)
            return await super().write_segment(messages, history)

    r.segmenter._llm = ForgetsWhileWriting()  # type: ignore[assignment]
    report = await r.segmenter.handle_batch(consumed(exchange(0)))
    [written] = report.segments
    assert await r.l1s() == []
    assert await r.tree.load_state(USER) is None
    assert r.index.deleted == [(USER, written.id)]  # its point was indexed, then removed
    assert r.published() == []


async def test_a_crash_between_commit_and_publish_is_recovered_by_the_next_batch() -> None:
    r = rig()
    r.publisher.failures = 1
    with pytest.raises(ConnectionError):
        await r.segmenter.handle_batch(consumed(exchange(0)))
    first = segment_id(USER, ["q0", "a0"])
    assert [n.id for n in await r.l1s()] == [first]  # committed...
    assert r.publisher.sent == []  # ...but not published
    assert [e["value"]["id"] for e in await r.tree.outbox(USER, "segmenter")] == [first]

    await r.segmenter.handle_batch(consumed(exchange(1)))
    second = segment_id(USER, ["q1", "a1"])
    assert [e["id"] for e in r.published()] == [first, second]  # the leftover first, once
    assert await r.tree.outbox(USER, "segmenter") == []

    await r.segmenter.handle_batch(consumed(exchange(0)))  # the failed batch, delivered again
    assert [e["id"] for e in r.published()] == [first, second]


async def test_a_message_held_over_from_an_earlier_step_is_not_embedded_again() -> None:
    r = rig(step_size=3)
    q0, a0 = exchange(0)
    q1, a1 = exchange(1)
    q2, a2 = exchange(2)
    await r.segmenter.handle_batch(consumed([q0, a0, q1, a1, q2, a2]))  # [q0 a0 q1] [a1 q2 a2]
    assert [m.node.source_ids for m in r.index.upserted] == [
        ("q0", "a0"),
        ("q1", "a1"),
        ("q2", "a2"),
    ]
    # The question held in the window state across the steps was embedded with step 1.
    assert r.embedder.calls == [[q0.text, a0.text, q1.text], [a1.text, q2.text, a2.text]]


async def test_a_message_held_over_from_an_earlier_batch_is_embedded_again() -> None:
    r = rig(step_size=3)
    q0, a0 = exchange(0)
    q1, a1 = exchange(1)
    await r.segmenter.handle_batch(consumed([q0, a0, q1]))
    await r.segmenter.handle_batch(consumed([a1]))
    assert [m.node.source_ids for m in r.index.upserted] == [("q0", "a0"), ("q1", "a1")]
    assert r.embedder.calls == [
        [q0.text, a0.text, q1.text],
        [a1.text],
        [q1.text],  # the question held in the window state across the batches
    ]


async def test_l1_latency_runs_from_the_newest_message_record_to_the_commit() -> None:
    r = rig()
    received = NOW.timestamp() - 2.5
    report = await r.segmenter.handle_batch(consumed(exchange(0) + exchange(1), received))
    assert report.l1_latencies == [2.5, 2.5]

    # A lone question flushed later by a session end waited by design: not observed.
    await r.segmenter.handle_batch(consumed([turn("q2", 4)], received))
    end = SessionEnded(USER, "s1", T0 + timedelta(minutes=9))
    report = await r.segmenter.handle_batch(consumed([end], received))
    assert len(report.segments) == 1 and report.l1_latencies == []


async def test_records_without_a_broker_time_are_not_observed() -> None:
    r = rig()
    report = await r.segmenter.handle_batch(consumed(exchange(0)))
    assert len(report.segments) == 1 and report.l1_latencies == []


async def test_a_tick_or_session_end_for_a_user_without_state_writes_nothing() -> None:
    r = rig()
    # A tick already in flight when the user was forgotten must not leave a state behind.
    events = [ClockTicked(USER, NOW), SessionEnded(USER, "s1", T0)]
    report = await r.segmenter.handle_batch(consumed(events))
    assert report.closures == []
    assert await r.tree.load_state(USER) is None
    assert r.tree.due == {}


async def test_a_replayed_older_forget_does_not_replace_the_newer_tombstone() -> None:
    r = rig()
    log = consumed([*exchange(0), ForgetRequested(USER), *exchange(1), ForgetRequested(USER)])
    await r.segmenter.handle_batch(log)
    newest = await r.tree.tombstone(USER)
    assert newest is not None and newest.offset == 5
    await r.segmenter.handle_batch(log[:4])  # the log again, up to the first forget's reply
    assert await r.tree.tombstone(USER) == newest
    assert await r.l1s() == []  # q1/a1, between the two forgets, stay forgotten
