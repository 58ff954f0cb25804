"""The segmenter's decision: plain values in, a plan out (no store, no model, no clock)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from memstream.domain.forgetting import Tombstone
from memstream.domain.models import (
    ForgetRequested,
    InputEvent,
    RebuildRequested,
    SessionEnded,
    Turn,
)
from memstream.domain.step import (
    EXPIRY_BATCH,
    Arrival,
    UserSnapshot,
    asked_event_ids,
    content_mark,
    decide_step,
)
from memstream.domain.windows import WindowRules, initial_state

T0 = datetime(2024, 5, 6, 9, 0, tzinfo=UTC)
NOW = datetime(2024, 5, 6, 12, 0, tzinfo=UTC)
RULES = WindowRules()


def turn(event_id: str, minute: int, role: str = "user", **extra: object) -> Turn:
    speaker = "Ana" if role == "user" else "Bot"
    return Turn(
        event_id,
        "ana",
        "s1",
        minute,
        speaker,
        role,  # type: ignore[arg-type]
        f"{speaker} says {event_id}",
        T0 + timedelta(minutes=minute),
        **extra,  # type: ignore[arg-type]
    )


def arrivals(events: Sequence[InputEvent], received: float | None = 1.0) -> list[Arrival]:
    return [Arrival(e, 0, offset, received) for offset, e in enumerate(events)]


def snapshot(**fields: object) -> UserSnapshot:
    values: dict[str, object] = {
        "state": None,
        "stored": False,
        "tombstone": None,
        "seen": {},
        "forgotten": frozenset(),
        "expiries": (),
    }
    return UserSnapshot("ana", **(values | fields))  # type: ignore[arg-type]


def test_an_exchange_of_a_new_user_is_one_segment_and_its_markers() -> None:
    q, a = turn("q1", 0), turn("a1", 1, "assistant")
    plan = decide_step(snapshot(), arrivals([q, a]), NOW, RULES, None)
    assert not plan.idle
    assert [[m.event_id for m in s.messages] for s in plan.ready] == [["q1", "a1"]]
    assert plan.seen == {"q1": content_mark(q), "a1": content_mark(a)}
    assert plan.received == {"q1": 1.0, "a1": 1.0}
    assert plan.state is not None and plan.due is not None


def test_turns_seen_before_are_duplicates_and_other_content_is_a_conflict() -> None:
    q, a = turn("q1", 0), turn("a1", 1, "assistant")
    seen = {"q1": content_mark(q), "a1": content_mark(q)}  # a1 committed with q1's content
    plan = decide_step(snapshot(seen=seen), arrivals([q, a, q]), NOW, RULES, None)
    assert (plan.duplicates, plan.conflicts, plan.seen, plan.ready) == (3, ("a1",), {}, ())


def test_records_before_the_users_forget_are_dropped() -> None:
    stone = Tombstone(NOW.timestamp(), 0, 5, None)  # the forget was offset 5 of partition 0
    plan = decide_step(
        snapshot(tombstone=stone), arrivals([turn("q1", 0), turn("q2", 2)]), NOW, RULES, None
    )
    assert plan.predating_forget == 2
    assert plan.idle  # nothing left of a forgotten user, and no state: nothing to write


def test_forgotten_messages_are_dropped_and_forgotten_again() -> None:
    events = [turn("q1", 0), turn("a1", 1, "assistant"), ForgetRequested("ana", ("a1",))]
    held = snapshot(forgotten=frozenset({"q1"}))
    plan = decide_step(held, arrivals(events), NOW, RULES, None)
    assert (plan.forgotten_turns, plan.forget, plan.seen) == (2, ("a1",), {})
    assert not plan.idle  # a message forget for a user never seen leaves its tombstones


def test_a_tick_for_a_user_without_state_is_idle() -> None:
    plan = decide_step(snapshot(), arrivals([SessionEnded("ana", "s1", T0)]), NOW, RULES, None)
    assert plan.idle and plan.state is None


def test_a_stored_state_is_continued_and_a_pending_message_forgotten() -> None:
    q = turn("q1", 0)
    first = decide_step(snapshot(), arrivals([q]), NOW, RULES, None)
    assert first.state is not None and [t.event_id for t in first.state.pending] == ["q1"]
    stored = snapshot(state=first.state, stored=True, seen=dict(first.seen))
    plan = decide_step(stored, arrivals([ForgetRequested("ana", ("q1",))]), NOW, RULES, None)
    assert plan.state is not None and plan.state.pending == ()
    assert plan.forget == ("q1",)


def test_expired_turns_are_stored_nowhere_and_due_deadlines_forgotten() -> None:
    late = turn("q1", 0, expires_at=NOW - timedelta(seconds=1))
    keeps = turn("q2", 2, expires_at=NOW + timedelta(days=1))
    due = tuple((f"old{i}", NOW.timestamp() - 10) for i in range(EXPIRY_BATCH + 1))
    plan = decide_step(snapshot(expiries=due), arrivals([late, keeps]), NOW, RULES, None)
    assert plan.expired_turns == 1
    assert plan.expired == tuple(f"old{i}" for i in range(EXPIRY_BATCH))
    assert plan.forget == plan.expired
    assert plan.expiring == {"q2": NOW + timedelta(days=1)}
    assert plan.due == NOW  # more deadlines are due than one step forgets: tick again now


def test_the_newest_rebuild_request_names_the_rebuild() -> None:
    requests = [RebuildRequested("ana", "r1"), RebuildRequested("ana", "r2")]
    plan = decide_step(snapshot(stored=True), arrivals(requests), NOW, RULES, None)
    assert plan.rebuild == requests[-1]


def test_the_first_turns_zone_starts_a_new_users_calendar() -> None:
    plan = decide_step(snapshot(), arrivals([turn("q1", 0, tz="Europe/Paris")]), NOW, RULES, None)
    assert plan.state is not None and plan.state.tz == "Europe/Paris"
    assert initial_state("ana", RULES.default_tz).tz == "UTC"


def test_a_snapshot_is_asked_about_each_turn_once() -> None:
    events = [turn("q1", 0), ForgetRequested("ana", ("x",)), turn("q1", 0), turn("a1", 1)]
    assert asked_event_ids(arrivals(events)) == ["q1", "a1"]
