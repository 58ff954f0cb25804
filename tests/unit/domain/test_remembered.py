"""The window state with its closed sessions and window keys remembered apart decides every
step as the state that holds them all does.

Random users (session ids used again, late turns, session ends, clock ticks, more sessions
than the state remembers) are stepped twice: once with the whole state read and written at
every step (`remembered` None, as before the split), once as the segmenter now does it, the
document slim and the remembered sessions and keys in a store of their own, read only as the
reducer asks (`domain.remembered`). Every step's segments, closures and due time must be the
same, and so must what is remembered after the last step.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstream.contracts.codec import decode_state, encode_state
from memstream.domain import windows
from memstream.domain.incarnations import SessionInfo
from memstream.domain.models import ClockTicked, InputEvent, SessionEnded, Turn
from memstream.domain.remembered import Lookup, Remembered
from memstream.domain.step import (
    Arrival,
    StepPlan,
    UserSnapshot,
    as_answered,
    asked_session_ids,
    decide_step,
)
from memstream.domain.windows import MAX_REMEMBERED_CLOSED, UserWindows, WindowRules, apart

T0 = datetime(2024, 3, 1, 8, 0, tzinfo=UTC)
RULES = WindowRules(session_idle=timedelta(hours=2))
# With the reorder window on, a turn below its session's first `seq` renames the session
# (its old key is closed no more, `UserWindows.unclosed`).
REORDERING = WindowRules(session_idle=timedelta(hours=2), reorder_turns=3)
# Small enough that a few dozen sessions pass it: eviction is on the path tested.
BOUND = 5


@dataclass
class ApartStore:
    """The store's side of the split, in memory, as the Redis adapter keeps it."""

    doc: str | None = None
    sessions: dict[str, SessionInfo] = field(default_factory=dict)
    closed: dict[str, int] = field(default_factory=dict)
    lookups: int = 0
    shortcuts: int = 0  # lookups whose answers let the plan stand (`as_answered`)

    def read(self, sessions: Sequence[str], closed: Sequence[str], oldest: int) -> Remembered:
        ordered = sorted(self.sessions.values(), key=lambda s: (s.last_ts, s.session_id))
        return Remembered(
            sessions={sid: self.sessions.get(sid) for sid in sessions},
            closed={key: key in self.closed for key in closed},
            count=len(self.sessions),
            oldest=tuple((s.session_id, s.last_ts) for s in ordered[:oldest]),
        )

    def commit(self, state: UserWindows) -> None:
        document, changes = apart(state)
        for sid in changes.dropped:
            self.sessions.pop(sid, None)
        self.sessions.update({s.session_id: s for s in changes.sessions})
        for key in changes.unclosed:
            self.closed.pop(key, None)
        self.closed.update(dict(changes.closed))
        newest = sorted(self.closed, key=self.closed.__getitem__)[-MAX_REMEMBERED_CLOSED:]
        self.closed = {key: self.closed[key] for key in newest}
        self.doc = json.dumps(encode_state(document))


def _snapshot(doc: str | None, remembered: Remembered | None) -> UserSnapshot:
    return UserSnapshot(
        "ana",
        state=decode_state(json.loads(doc)) if doc else None,
        stored=doc is not None,
        tombstone=None,
        seen={},
        forgotten=frozenset(),
        expiries=(),
        remembered=remembered,
    )


def _arrivals(events: Sequence[InputEvent]) -> list[Arrival]:
    return [Arrival(e, 0, n, None) for n, e in enumerate(events)]


def step_whole(
    doc: str | None, events: Sequence[InputEvent], now: datetime, rules: WindowRules = RULES
) -> tuple[StepPlan, str | None]:
    plan = decide_step(_snapshot(doc, None), _arrivals(events), now, rules, None)
    assert plan.lookup is None
    return plan, doc if plan.state is None else json.dumps(encode_state(plan.state))


def step_apart(
    store: ApartStore, events: Sequence[InputEvent], now: datetime, rules: WindowRules = RULES
) -> StepPlan:
    arrivals = _arrivals(events)
    # One of the oldest read first, not `OLDEST_READ`: asking for more is on the path too.
    remembered = store.read(asked_session_ids(arrivals), (), 1)
    answered: StepPlan | None = None
    while True:
        plan = decide_step(_snapshot(store.doc, remembered), arrivals, now, rules, None)
        if answered is not None:  # the segmenter's shortcut must be this decision exactly
            store.shortcuts += 1
            assert answered == plan
        if plan.lookup is None:
            break
        asked: Lookup = plan.lookup
        store.lookups += 1
        more = store.read(sorted(asked.sessions), sorted(asked.closed), asked.oldest)
        assert remembered.merged(more) != remembered, "asked again for what it was told"
        answered = as_answered(plan, remembered, more)
        remembered = remembered.merged(more)
    if plan.state is not None:  # (None: an idle step writes nothing)
        store.commit(plan.state)
    return plan


def _turn(n: int, session: int, minutes: int, seq: int | None = None) -> Turn:
    return Turn(
        f"m{n}",
        "ana",
        f"s{session}",
        n if seq is None else seq,
        "Ana" if n % 2 == 0 else "Bot",
        "user" if n % 2 == 0 else "assistant",
        f"message {n}",
        T0 + timedelta(minutes=minutes),
        "UTC",
    )


# One event: a turn (session, minutes from the user's clock: mostly forward, sometimes far
# back, a late turn), a session end, or a tick of the wall clock.
events_drawn = st.lists(
    st.tuples(
        st.sampled_from(["turn", "turn", "turn", "turn", "end", "tick"]),
        st.integers(0, 40),  # the session (ids used again)
        st.integers(-3000, 400),  # minutes forward from the newest turn (back: late)
    ),
    min_size=1,
    max_size=90,
)
step_sizes = st.lists(st.integers(1, 12), min_size=1, max_size=30)


def _events(drawn: list[tuple[str, int, int]]) -> list[tuple[InputEvent, datetime]]:
    clock, newest, out = T0, 0, []
    for n, (kind, session, forward) in enumerate(drawn):
        minutes = max(0, newest + forward)
        newest = max(newest, minutes)
        clock = max(clock, T0 + timedelta(minutes=newest))
        event: InputEvent
        if kind == "turn":
            # A turn dated back also comes below the `seq`s taken: out of order.
            event = _turn(n, session, minutes, n if forward >= 0 else max(0, n - 7))
        elif kind == "end":
            event = SessionEnded("ana", f"s{session}", T0 + timedelta(minutes=minutes))
        else:
            clock += timedelta(hours=3)
            event = ClockTicked("ana", clock)
        out.append((event, clock))
    return out


def _remembered_whole(doc: str) -> tuple[dict[str, SessionInfo], set[str]]:
    state = decode_state(json.loads(doc))
    return dict(state.sessions), set(state.closed)


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(events_drawn, step_sizes, st.sampled_from([RULES, REORDERING]))
def test_a_state_kept_apart_decides_as_the_whole_state(
    monkeypatch: pytest.MonkeyPatch,
    drawn: list[tuple[str, int, int]],
    sizes: list[int],
    rules: WindowRules,
) -> None:
    monkeypatch.setattr(windows, "MAX_REMEMBERED_SESSIONS", BOUND)
    timed = _events(drawn)
    store, doc = ApartStore(), None
    at = 0
    for size in (*sizes, len(timed)):
        batch = timed[at : at + size]
        if not batch:
            break
        at += len(batch)
        events, now = [e for e, _ in batch], batch[-1][1]
        whole, doc = step_whole(doc, events, now, rules)
        split = step_apart(store, events, now, rules)
        assert split.ready == whole.ready
        assert split.closures == whole.closures
        assert split.due == whole.due
    if doc is None:
        assert store.doc is None
        return
    assert store.doc is not None
    sessions, closed = _remembered_whole(doc)
    slim = decode_state(json.loads(store.doc))
    assert {**store.sessions, **slim.sessions} == sessions
    assert set(store.closed) == closed
    assert len(sessions) <= BOUND


def test_a_state_written_before_the_split_moves_out_at_its_first_commit() -> None:
    # A state of today's format holding its closed sessions and keys: decoded, stepped with
    # an empty store beside it, then everything it remembered is in the store.
    whole = windows.initial_state("ana", "UTC")
    for n in range(6):
        at = T0 + timedelta(days=n)
        whole, _ = windows.apply(whole, _turn(n, n, n * 1440), at, RULES)
        whole, _ = windows.apply(whole, SessionEnded("ana", f"s{n}", at), at, RULES)
    old = json.dumps(encode_state(whole))
    assert len(json.loads(old)["sessions"]) == 6 and json.loads(old)["closed"]

    store = ApartStore(doc=old)
    step_apart(store, [_turn(99, 99, 9 * 1440)], T0 + timedelta(days=9))
    assert set(store.sessions) == {f"s{n}" for n in range(6)}
    assert set(whole.closed) <= set(store.closed)
    document = json.loads(store.doc or "")
    assert document["closed"] == [] and [row[0] for row in document["sessions"]] == ["s99"]
    # A late turn of an old session is still recognised, from the store.
    plan = step_apart(store, [_turn(100, 2, 2 * 1440 - 5)], T0 + timedelta(days=9, hours=1))
    assert [r.late for r in plan.ready] == [True]
    assert {c.reason for c in plan.closures} == {"late_data"}


def test_a_step_of_the_open_session_asks_for_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(windows, "MAX_REMEMBERED_SESSIONS", BOUND)
    store = ApartStore()
    for n in range(40):  # forty sessions, a day apart: far past the bound
        at = T0 + timedelta(days=n)
        step_apart(store, [_turn(2 * n, n, n * 1440), SessionEnded("ana", f"s{n}", at)], at)
    at = T0 + timedelta(days=41)
    step_apart(store, [_turn(100, 41, 41 * 1440)], at)  # closes the day before: asks its key
    asked_before = store.lookups
    for n in range(1, 6):
        step_apart(store, [_turn(100 + n, 41, 41 * 1440 + n)], at)
    assert store.lookups == asked_before
    assert len(store.sessions) == BOUND - 1  # the open session is the document's


def test_a_closed_session_renamed_by_its_first_message_is_closed_under_its_new_key() -> None:
    # With the reorder window on, a message below its closed session's first `seq` renames
    # the session: the old key is closed no more, the new one is; apart as whole.
    store, doc = ApartStore(), None
    at = T0 + timedelta(days=1)
    steps: list[tuple[list[InputEvent], datetime]] = [
        ([_turn(5, 1, 10, seq=5), _turn(6, 1, 11, seq=6)], at),
        ([SessionEnded("ana", "s1", T0 + timedelta(minutes=12))], at),
        ([_turn(3, 1, 5, seq=3)], at + timedelta(hours=1)),
    ]
    for events, now in steps:
        whole, doc = step_whole(doc, events, now, REORDERING)
        split = step_apart(store, events, now, REORDERING)
        assert (split.ready, split.closures) == (whole.ready, whole.closures)
    assert doc is not None
    renamed = f"2|s1|{(T0 + timedelta(minutes=5)).isoformat()}"
    assert renamed in decode_state(json.loads(doc)).closed
    assert set(store.closed) == set(decode_state(json.loads(doc)).closed)
    assert f"2|s1|{(T0 + timedelta(minutes=10)).isoformat()}" not in store.closed


def test_a_step_told_nothing_was_remembered_keeps_the_plan_it_made() -> None:
    # Each step closes a session and its day, and asks whether their keys were closed
    # before: they were not, so the plan stands (`as_answered`; `step_apart` checks it is
    # the plan deciding again gives). A late turn of a remembered session is told the
    # session and is decided again.
    store = ApartStore()
    for n in range(6):
        at = T0 + timedelta(days=n)
        step_apart(store, [_turn(2 * n, n, n * 1440), SessionEnded("ana", f"s{n}", at)], at)
    assert store.shortcuts >= 5
    assert store.shortcuts == store.lookups
    shortcuts = store.shortcuts
    at = T0 + timedelta(days=7)
    plan = step_apart(store, [_turn(100, 2, 2 * 1440 - 5)], at)
    assert [r.late for r in plan.ready] == [True]
    assert store.lookups > store.shortcuts == shortcuts


def test_a_plan_stands_only_when_every_answer_is_not_remembered() -> None:
    # The turns' own sessions are read before the first pass, so a session asked after it
    # is not on the reducer's path today; each answer that differs is refused all the same.
    store = ApartStore()
    step_apart(store, [_turn(0, 0, 0), SessionEnded("ana", "s0", T0)], T0)
    at = T0 + timedelta(days=3)
    arrivals = _arrivals([_turn(1, 1, 3 * 1440), SessionEnded("ana", "s1", at)])
    read = store.read(["s1"], (), 1)
    plan = decide_step(_snapshot(store.doc, read), arrivals, at, RULES, None)
    assert plan.lookup is not None and plan.lookup.closed
    keys = sorted(plan.lookup.closed)
    info = next(iter(store.sessions.values()))
    nothing = Remembered(closed=dict.fromkeys(keys, False), count=read.count, oldest=read.oldest)
    assert as_answered(plan, read, nothing) is not None
    differing = [
        replace(nothing, closed={**nothing.closed, keys[0]: True}),
        replace(nothing, sessions={"s9": info}),
        replace(nothing, count=read.count + 1),
        replace(nothing, oldest=(*read.oldest, ("s9", at))),
    ]
    for answers in differing:
        assert as_answered(plan, read, answers) is None
