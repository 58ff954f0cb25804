"""Expiry over the fakes: a message past its deadline (its own `expires_at` or the
deployment's retention) is forgotten on the user's tick exactly as a message forget forgets
it; one already past its deadline when it arrives is stored nowhere."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from tests.unit.segmenter.test_forget_messages import (
    CONVERSATION,
    NOW,
    SECRET,
    T0,
    USER,
    Rig,
    built,
    rig,
)

from memstream.contracts.codec import decode_window
from memstream.contracts.records import Consumed, RawEvent
from memstream.domain.ids import segment_id
from memstream.domain.models import ClockTicked, ForgetRequested, InputEvent, SessionEnded
from memstream.domain.step import EXPIRY_BATCH


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def expiring(deadline: datetime) -> list[InputEvent]:
    """The conversation with its first message due at `deadline`, as one closed session."""
    first = replace(CONVERSATION[0], expires_at=deadline)
    return [first, *CONVERSATION[1:], SessionEnded(USER, "s1", T0 + timedelta(minutes=4))]


async def ticked(r: Rig, now: datetime) -> None:
    await r.send(ClockTicked(USER, now))


async def test_a_message_past_its_deadline_is_forgotten_as_a_message_forget_would() -> None:
    clock = Clock(NOW)
    deadline = NOW + timedelta(hours=1)
    r = rig(clock)
    await r.send(*expiring(deadline))
    await ticked(r, NOW)  # the day, week and month are long over: all levels exist
    assert SECRET in r.everywhere()
    assert await r.tree.expiries(USER) == [("q0", deadline.timestamp())]
    # Nothing else is open, so the user's next tick is due at the deadline.
    assert r.tree.due[USER] == deadline.timestamp()
    before = r.versions()

    clock.now = deadline - timedelta(seconds=1)
    await ticked(r, clock.now)
    assert r.versions() == before and SECRET in r.everywhere()

    clock.now = deadline
    sent = len(r.publisher.sent)
    report = await r.segmenter.handle_batch(
        [Consumed(ClockTicked(USER, deadline), RawEvent(b"{}", "turns", 0, 1000, None))]
    )
    assert report.expired == ["q0"]
    closures = [decode_window(o.value) for o in r.publisher.sent[sent:] if o.topic == "windows"]
    assert [c.reason for c in closures] == ["late_data"] * 4  # session, day, week, month
    await r.consolidator.handle_batch(closures)

    # Compared with a forget of the same message on a twin built the same way.
    twin = await built()
    await twin.send(ForgetRequested(USER, ("q0",)))
    assert r.versions() == twin.versions()
    assert SECRET not in r.everywhere()
    assert await r.tree.forgotten_messages(USER, ["q0"]) == [True]
    assert await r.tree.expiries(USER) == []
    assert USER not in r.tree.due  # nothing left to close or expire
    leaf = r.tree.stored[(USER, segment_id(USER, ["q0", "a0"]))].node
    assert leaf.source_ids == ("a0",)


async def test_a_message_already_past_its_deadline_is_stored_nowhere() -> None:
    r = rig()
    past = replace(CONVERSATION[0], expires_at=NOW - timedelta(seconds=1))
    report = await r.segmenter.handle_batch(
        [Consumed(e, RawEvent(b"{}", "turns", 0, i, None)) for i, e in enumerate([past])]
    )
    assert report.expired_turns == 1 and report.segments == []
    assert SECRET not in r.everywhere()
    assert await r.tree.seen_marks(USER, ["q0"]) == [None]
    assert await r.tree.expiries(USER) == []
    await r.send(CONVERSATION[1])
    [leaf] = [s.node for s in r.tree.stored.values()]
    assert leaf.source_ids == ("a0",)


async def test_the_retention_counts_from_each_messages_own_time() -> None:
    clock = Clock(T0 + timedelta(hours=1))
    r = rig(clock, retention=timedelta(days=30))
    await r.send(*CONVERSATION, SessionEnded(USER, "s1", T0 + timedelta(minutes=4)))
    first = T0 + timedelta(days=30)
    assert [at for _, at in await r.tree.expiries(USER)] == [
        (t.ts + timedelta(days=30)).timestamp() for t in CONVERSATION
    ]
    assert r.tree.due[USER] <= first.timestamp()
    # A message's own expires_at wins when it comes earlier than the retention.
    early = replace(CONVERSATION[0], event_id="q9", seq=9, expires_at=T0 + timedelta(days=2))
    await r.send(early)
    assert (await r.tree.expiries(USER))[0] == ("q9", early.expires_at.timestamp())  # type: ignore[union-attr]

    clock.now = T0 + timedelta(days=31)  # every message is past the retention
    await ticked(r, clock.now)
    assert [i for (u, i) in r.tree.stored if u == USER] == []
    assert r.indexed() == {}
    assert SECRET not in r.everywhere() and "Lisbon" not in r.everywhere()
    assert await r.tree.expiries(USER) == []


async def test_a_replay_of_an_expired_message_stays_out() -> None:
    clock = Clock(NOW)
    r = rig(clock)
    await r.send(*expiring(NOW + timedelta(minutes=5)))
    clock.now = NOW + timedelta(minutes=5)
    await ticked(r, clock.now)
    versions = r.versions()
    r.tree.seen[USER].clear()  # as if the idempotency markers had expired
    await r.send(replace(CONVERSATION[0], expires_at=None))  # even if it came without one
    assert r.versions() == versions
    assert SECRET not in r.everywhere()


async def test_more_messages_due_than_one_step_forgets_wait_for_the_next_tick() -> None:
    clock = Clock(NOW)
    r = rig(clock)
    deadline = NOW + timedelta(minutes=1)
    many = [
        replace(CONVERSATION[i % 2], event_id=f"m{i}", seq=i, expires_at=deadline)
        for i in range(EXPIRY_BATCH + 20)
    ]
    await r.send(*many)
    assert len(await r.tree.expiries(USER, 1000)) == EXPIRY_BATCH + 20
    clock.now = deadline
    await ticked(r, deadline)
    assert len(await r.tree.expiries(USER, 1000)) == 20
    assert r.tree.due[USER] == deadline.timestamp()  # the rest at once, on the next tick
    await ticked(r, deadline)
    assert await r.tree.expiries(USER, 1000) == []
    assert [i for (u, i) in r.tree.stored if u == USER] == []
