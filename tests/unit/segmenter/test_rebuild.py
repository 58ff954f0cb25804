"""Rebuilding over the fakes: the segmenter re-derives leaves chunk by chunk from their stored
messages, the consolidator (fed the closures) the windows above; a changed derivation
rewrites every node once (version + 1, same ids and links), an unchanged one nothing."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from tests.unit.fakes import FakeEmbedder, FakeIndex, FakeTree, FlakyPublisher
from tests.unit.segmenter.test_forget_messages import EchoWriter, _no_user_forget

from memstream.consolidator.handler import Consolidator
from memstream.contracts.codec import decode_input, decode_window
from memstream.contracts.records import Consumed, RawEvent
from memstream.domain.derivation import Derivation
from memstream.domain.models import (
    ClockTicked,
    ForgetRequested,
    InputEvent,
    Level,
    MemoryNode,
    RebuildRequested,
    SessionEnded,
    Turn,
)
from memstream.domain.windows import WindowRules
from memstream.recall.rebuilds import pending_over_users, rebuild_progress
from memstream.scheduler.rebuilds import RebuildPacer, pace
from memstream.segmenter.handler import Segmenter, Topics

USER = "ana"
T0 = datetime(2024, 5, 6, 9, 0, tzinfo=UTC)  # a Monday
NOW = datetime(2024, 6, 30, 12, 0, tzinfo=UTC)
TOPICS = Topics(memories="memories", windows="windows")
FIRST = Derivation("offline", "rules", "1", "fake:8")
SECOND = Derivation("offline", "rules", "2", "fake:8")


@dataclass
class Workers:
    segmenter: Segmenter
    consolidator: Consolidator


class Rig:
    def __init__(self) -> None:
        self.tree = FakeTree()
        self.index = FakeIndex(self.tree)
        self.embedder = FakeEmbedder()
        self.publisher = FlakyPublisher()
        self.offset = 0
        self.workers = self.deploy(FIRST)

    def deploy(self, derivation: Derivation, chunk: int = 2) -> Workers:
        """Workers with `derivation` (a new prompt version, say) on the same stores."""
        writer = EchoWriter()
        self.workers = Workers(
            Segmenter(
                tree=self.tree,
                index=self.index,  # type: ignore[arg-type]
                embedder=self.embedder,
                llm=writer,  # type: ignore[arg-type]
                publisher=self.publisher,
                topics=TOPICS,
                forget=_no_user_forget,
                rules=WindowRules(),
                clock=lambda: NOW,
                derivation=derivation,
                rebuild_chunk_leaves=chunk,
            ),
            Consolidator(
                tree=self.tree,
                index=self.index,  # type: ignore[arg-type]
                embedder=self.embedder,
                llm=writer,  # type: ignore[arg-type]
                publisher=self.publisher,
                memories_topic=TOPICS.memories,
                derivation=derivation,
            ),
        )
        return self.workers

    async def send(self, *events: InputEvent) -> None:
        batch = []
        for e in events:
            batch.append(Consumed(e, RawEvent(b"{}", "turns", 0, self.offset, None)))
            self.offset += 1
        before = len(self.publisher.sent)
        await self.workers.segmenter.handle_batch(batch)
        closures = [
            decode_window(o.value) for o in self.publisher.sent[before:] if o.topic == "windows"
        ]
        await self.workers.consolidator.handle_batch(closures)

    async def rebuild(self, request: RebuildRequested) -> int:
        """The request, then its continuations (what the pacer sends) until it is finished;
        returns how many commands it took."""
        await self.send(request)
        commands = 1
        pacer = RebuildPacer(
            tree=self.tree, publisher=self.publisher, turns_topic="turns", users_per_run=1
        )
        while True:
            before = len(self.publisher.sent)
            if not await pacer.run_once():
                return commands
            [command] = self.publisher.sent[before:]
            event = decode_input(command.value)
            assert isinstance(event, RebuildRequested) and event.rebuild_id == request.rebuild_id
            self.tree.rebuilds[USER] = 0.0  # the lease is the pacer's business, not this test's
            await self.send(event)
            commands += 1
            assert commands < 50, "the rebuild does not end"

    def nodes(self) -> dict[str, MemoryNode]:
        return {i: s.node for (u, i), s in self.tree.stored.items() if u == USER}


def turn(event_id: str, at: datetime, role: str, text: str, session: str) -> Turn:
    speaker = "Ana" if role == "user" else "Bot"
    return Turn(event_id, USER, session, 0, speaker, role, text, at)  # type: ignore[arg-type]


async def built() -> Rig:
    """Two sessions on two days of one week, three exchanges each, consolidated to L5."""
    r = Rig()
    for day in range(2):
        session = f"s{day}"
        start = T0 + timedelta(days=day)
        events: list[InputEvent] = []
        for i in range(3):
            at = start + timedelta(minutes=2 * i)
            events.append(turn(f"d{day}q{i}", at, "user", f"question {day}.{i}", session))
            events.append(
                turn(f"d{day}a{i}", at + timedelta(minutes=1), "assistant", f"answer {i}", session)
            )
        await r.send(*events, SessionEnded(USER, session, start + timedelta(minutes=10)))
    await r.send(ClockTicked(USER, NOW))
    assert {n.level for n in r.nodes().values()} == set(Level)
    assert all(n.derivation == FIRST for n in r.nodes().values())
    return r


def shape(nodes: dict[str, MemoryNode]) -> dict[str, tuple[object, ...]]:
    return {i: (n.level, n.parent_id, n.children, n.source_ids) for i, n in nodes.items()}


async def test_a_new_derivation_rewrites_every_node_once_with_the_same_ids_and_shape() -> None:
    r = await built()
    before = r.nodes()
    r.deploy(SECOND, chunk=2)

    commands = await r.rebuild(RebuildRequested(USER, "r1"))

    after = r.nodes()
    assert commands == 4  # the plan, then six leaves two a chunk
    assert shape(after) == shape(before)
    assert {i: n.version for i, n in after.items()} == {i: n.version + 1 for i, n in before.items()}
    assert all(n.derivation == SECOND for n in after.values())
    assert {m.node.id: m.node.derivation for m in r.index.upserted if m.node.id in after} == (
        dict.fromkeys(after, SECOND)
    )
    job = await r.tree.rebuild_job(USER)
    assert job is not None and job.finished and job.rewritten == 6
    announced = [o.value for o in r.publisher.sent if o.value["type"] == "rebuild_finished.v1"]
    assert announced == [
        {
            "type": "rebuild_finished.v1",
            "user_id": USER,
            "rebuild_id": "r1",
            "leaves": 6,
            "leaves_rewritten": 6,
        }
    ]
    windows = await r.tree.rebuild_windows(USER)
    assert sorted(windows) == sorted(i for i, n in before.items() if n.level > 1)


async def test_the_same_rebuild_again_changes_nothing() -> None:
    r = await built()
    r.deploy(SECOND)
    await r.rebuild(RebuildRequested(USER, "r1"))
    before = r.nodes()
    upserts = len(r.index.upserted)

    await r.rebuild(RebuildRequested(USER, "r2"))

    assert r.nodes() == before
    assert len(r.index.upserted) == upserts  # nothing indexed again either
    job = await r.tree.rebuild_job(USER)
    assert job is not None and job.finished and job.rewritten == 0


async def test_a_replayed_command_of_a_finished_rebuild_does_nothing() -> None:
    r = await built()
    r.deploy(SECOND)
    await r.rebuild(RebuildRequested(USER, "r1"))
    before, sent = r.nodes(), len(r.publisher.sent)

    await r.send(RebuildRequested(USER, "r1"))

    assert r.nodes() == before
    assert len(r.publisher.sent) == sent


async def test_from_and_levels_narrow_what_is_rederived() -> None:
    r = await built()
    before = r.nodes()
    r.deploy(SECOND)
    second_day = T0 + timedelta(days=1)

    await r.rebuild(RebuildRequested(USER, "r1", second_day, (Level.SEGMENT,)))

    after = r.nodes()
    changed = {i for i in after if after[i].version != before[i].version}
    day1_leaves = {i for i, n in before.items() if n.level == 1 and n.t_end >= second_day}
    ancestors = {i for i, n in before.items() if n.level > 1 and n.t_end >= second_day}
    # The second day's leaves, and every window above them (whatever level was asked).
    assert changed == day1_leaves | ancestors
    assert {before[i].level for i in ancestors} == {2, 3, 4, 5}
    assert len(day1_leaves) == 3


def test_the_pace_keeps_the_rate_whatever_the_chunk() -> None:
    assert pace(20.0, 16) == pace(20.0, 16)
    slow = pace(20.0, 16)
    assert (slow.period_s, slow.users_per_run) == (0.8, 1)  # one chunk of 16 every 0.8 s
    fast = pace(1000.0, 16)
    assert fast.users_per_run * 16 / fast.period_s <= 1000.0
    assert fast.period_s >= 0.2


async def test_the_pacer_leases_whom_it_sent_and_skips_finished_jobs() -> None:
    r = await built()
    r.deploy(SECOND, chunk=1)
    await r.send(RebuildRequested(USER, "r1"))
    assert r.tree.rebuilds == {USER: 0.0}  # due at once (the fake's commits are at 0)
    pacer = RebuildPacer(
        tree=r.tree, publisher=r.publisher, turns_topic="turns", users_per_run=5, clock=lambda: 10
    )
    assert await pacer.run_once() == 1
    assert r.tree.rebuilds == {USER: 40.0}  # leased: not sent again before then
    assert await pacer.run_once() == 0


async def test_pending_windows_count_until_the_rebuild_is_done_then_it_is_settled() -> None:
    r = await built()
    r.deploy(SECOND, chunk=2)
    windows = sum(1 for n in r.nodes().values() if n.level > 1)
    await r.send(RebuildRequested(USER, "r1"))  # planned
    await r.send(RebuildRequested(USER, "r1"))  # one chunk of three
    job = await r.tree.rebuild_job(USER)
    assert job is not None and (job.done, job.finished) == (2, False)
    assert await pending_over_users(r.tree) == windows
    assert (await rebuild_progress(r.tree, USER, "r1")).status == "pending"

    await r.rebuild(RebuildRequested(USER, "r1"))

    progress = await rebuild_progress(r.tree, USER, "r1")
    assert (progress.status, progress.windows_pending, progress.leaves_done) == ("done", 0, 6)
    assert await pending_over_users(r.tree) == 0
    assert r.tree.rebuilds == {}  # settled: off the list


async def test_a_new_embedder_indexes_every_node_again() -> None:
    r = await built()
    before = r.nodes()
    upserts = len(r.index.upserted)
    r.deploy(replace(FIRST, embedder="fake:8-v2"))

    await r.rebuild(RebuildRequested(USER, "r1"))

    again = [m.node for m in r.index.upserted[upserts:]]
    assert sorted(n.id for n in again) == sorted(before)  # each node once
    assert all(n.version == before[n.id].version + 1 for n in again)
    assert {n.derivation.embedder for n in again if n.derivation} == {"fake:8-v2"}


async def test_a_forget_in_the_same_batch_as_a_rebuild_stays_forgotten() -> None:
    r = await built()
    r.deploy(SECOND, chunk=2)

    await r.send(ForgetRequested(USER, ("d0q0",)), RebuildRequested(USER, "r1"))
    await r.rebuild(RebuildRequested(USER, "r1"))

    after = r.nodes()
    assert not [n.id for n in after.values() if "d0q0" in n.source_ids]
    assert not [n.id for n in after.values() for m in n.messages if m.event_id == "d0q0"]
    assert {n.derivation for n in after.values()} == {SECOND}
    job = await r.tree.rebuild_job(USER)
    assert job is not None and job.finished
