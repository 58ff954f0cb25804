"""The segmenter's decision for one user's step: a snapshot and events in, a plan out.

A step has three phases. Load: the store reads what the step needs in one go (a
`UserSnapshot`). Decide: `decide_step`, a pure function of the snapshot, the events as
consumed, the clock and the rules, says what the step does (a `StepPlan`: which turns are
kept, the new window state, the segments ready to be written, the windows to close, the
messages to forget, the deadlines to schedule, when the user is due next). Commit: the
handler carries the plan out (the LLM writes the segments, the index takes their vectors)
and writes it as one value (`ports.UserCommit`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from memstream.domain.expiry import deadline, earliest, split_due
from memstream.domain.forgetting import Tombstone
from memstream.domain.models import (
    ForgetRequested,
    InputEvent,
    RebuildRequested,
    Turn,
    WindowClosed,
)
from memstream.domain.remembered import Lookup, Questions, Remembered
from memstream.domain.reorder import apply_in_order, held_due
from memstream.domain.windows import (
    Resegment,
    SegmentReady,
    UserWindows,
    WindowRules,
    initial_state,
    next_due,
    with_remembered,
)

# Most expired messages one user's step forgets (a forget.v1's bound): more wait a tick.
EXPIRY_BATCH = 100
# Deadlines a snapshot reads: one more than a step forgets, to tell "more are due" apart.
EXPIRY_READ = EXPIRY_BATCH + 1


@dataclass(frozen=True, slots=True)
class UserSnapshot:
    """What one user's step reads from the store, read together before anything is decided.

    `stored`: whether a window state is stored (`state` is None too when it is empty);
    `seen`: the content marks of the asked event ids already committed (0: none given);
    `forgotten`: the asked event ids a message tombstone holds; `expiries`: the earliest
    message deadlines (event id, epoch seconds), earliest first; `outbox`: events the last
    commit left unpublished (a crash between commit and publish), oldest first;
    `remembered`: what was read of the closed sessions and window keys the store remembers
    apart from the state (None: the state holds them itself), more of it read when the
    decision asks (`StepPlan.lookup`).
    """

    user_id: str
    state: UserWindows | None
    stored: bool
    tombstone: Tombstone | None
    seen: Mapping[str, int]
    forgotten: frozenset[str]
    expiries: tuple[tuple[str, float], ...]
    outbox: tuple[dict[str, Any], ...] = ()
    remembered: Remembered | None = None


@dataclass(frozen=True, slots=True)
class Arrival:
    """An event as consumed: its record's place and broker time (epoch s) in the log."""

    event: InputEvent
    partition: int
    offset: int
    timestamp: float | None


@dataclass(frozen=True, slots=True)
class StepPlan:
    """What one user's step does. `idle`: nothing to write (a tick or session end for a
    user with no state, one just forgotten whose tick was already in flight: writing a
    state would revive it); the counts are still the step's."""

    idle: bool
    state: UserWindows | None = None
    # event id -> content mark: the turns this step commits
    seen: Mapping[str, int] = field(default_factory=dict)
    # segments for the LLM to write, and late turns whose sessions are cut again, in order
    ready: tuple[SegmentReady | Resegment, ...] = ()
    closures: tuple[WindowClosed, ...] = ()  # windows the reducer closed
    forget: tuple[str, ...] = ()  # message ids forgotten now: asked for, or past their deadline
    # new messages with a deadline: the expiry schedule
    expiring: Mapping[str, datetime] = field(default_factory=dict)
    due: datetime | None = None  # the user's next tick: its first window or message deadline
    rebuild: RebuildRequested | None = None  # the newest rebuild request (one chunk per step)
    received: Mapping[str, float] = field(default_factory=dict)  # turn id -> its broker time
    # What was dropped, for the batch report.
    duplicates: int = 0
    conflicts: tuple[str, ...] = ()  # duplicates whose content differs from the first copy
    predating_forget: int = 0  # records older than the user's forget (a replay)
    forgotten_turns: int = 0  # turns of forgotten messages
    expired_turns: int = 0  # turns whose deadline had passed when they arrived
    expired: tuple[str, ...] = ()  # messages forgotten because their deadline passed
    # What the decision asked and had not read (`domain.remembered`): the rest of the plan
    # is the step as it is if every answer is "not remembered" (`as_answered`); otherwise
    # the step is decided again with the answers.
    lookup: Lookup | None = None


def decide_step(
    snapshot: UserSnapshot,
    arrivals: Sequence[Arrival],
    now: datetime,
    rules: WindowRules,
    retention: timedelta | None,
) -> StepPlan:
    """The plan of one user's step (`arrivals` are the user's, in log order)."""
    admitted = _admit(snapshot, arrivals, now, retention)
    expired, next_expiry = split_due(list(snapshot.expiries), now, EXPIRY_BATCH)
    forget = tuple(dict.fromkeys([*admitted.asked, *expired]))
    events = [a.event for a in admitted.kept]
    turns = [e for e in events if isinstance(e, Turn)]
    dropped: dict[str, Any] = {
        "predating_forget": admitted.predating,
        "forgotten_turns": admitted.forgotten,
        "expired_turns": admitted.expired,
        "expired": tuple(expired),
    }
    if not snapshot.stored and not turns and (not forget or snapshot.tombstone is not None):
        # (A message forget for a user never seen still leaves its message tombstones.)
        return StepPlan(idle=True, forget=forget, **dropped)
    first_tz = next((t.tz for t in turns if t.tz), None)
    state = snapshot.state or initial_state(snapshot.user_id, first_tz or rules.default_tz)
    questions = Questions()  # this decision's own (the snapshot may be decided again)
    if snapshot.remembered is not None:
        state = with_remembered(state, replace(snapshot.remembered, questions=questions))
    if forget:  # a message waiting in the state (for its reply) goes before it is used
        state = replace(
            state,
            pending=tuple(t for t in state.pending if t.event_id not in forget),
            written_tail=tuple(t for t in state.written_tail if t.event_id not in forget),
            held=tuple(t for t in state.held if t.event_id not in forget),
        )
    run = _reduce(state, events, snapshot.seen, now, rules)
    expiring = {
        t.event_id: at
        for t in turns
        if t.event_id in run.seen and (at := deadline(t, retention)) is not None
    }
    received: dict[str, float] = {}
    for a in admitted.kept:
        if isinstance(a.event, Turn) and a.timestamp is not None:
            received.setdefault(a.event.event_id, a.timestamp)
    requests = [e for e in events if isinstance(e, RebuildRequested)]
    return StepPlan(
        idle=False,
        state=run.state,
        seen=run.seen,
        ready=tuple(run.ready),
        closures=tuple(run.closures),
        forget=forget,
        expiring=expiring,
        due=earliest(
            next_due(run.state, rules),
            held_due(run.state, rules),
            next_expiry,
            *expiring.values(),
        ),
        rebuild=requests[-1] if requests else None,
        received=received,
        duplicates=run.duplicates,
        conflicts=tuple(run.conflicts),
        lookup=questions.lookup(),
        **dropped,
    )


def as_answered(plan: StepPlan, read: Remembered, more: Remembered) -> StepPlan | None:
    """`plan`, which asked `plan.lookup` of what the step had `read`, as the step decided
    again with the answers `more` would be; None when it must be decided again.

    The pass that asked went on as if each answer were "not remembered" (`domain.windows`:
    a session unknown, a window key not closed, no older session left). When every answer
    is just that and the count of remembered sessions is unchanged, a pass with the answers
    takes the same path at every question and asks nothing new: its plan is this one, with
    the answers attached to its state. A step that closes windows usually asks only whether
    the keys it closes were closed before, and they were not.
    """
    if plan.lookup is None or plan.state is None or plan.state.remembered is None:
        return None
    merged = read.merged(more)
    if (
        any(info is not None for info in more.sessions.values())
        or any(more.closed.values())
        or merged.oldest != read.oldest
        or merged.count != read.count
    ):
        return None
    return replace(plan, state=replace(plan.state, remembered=merged), lookup=None)


@dataclass(frozen=True, slots=True)
class _Admitted:
    kept: list[Arrival]  # what the step goes on with
    asked: list[str]  # message ids the kept forget requests name
    predating: int  # records older than the user's forget
    forgotten: int  # turns of forgotten messages
    expired: int  # turns already past their deadline


def _admit(
    snapshot: UserSnapshot,
    arrivals: Sequence[Arrival],
    now: datetime,
    retention: timedelta | None,
) -> _Admitted:
    """The arrivals without the records a forget or a deadline has already ruled out."""
    kept = list(arrivals)
    if (tombstone := snapshot.tombstone) is not None:
        kept = [a for a in kept if not tombstone.predates(a.partition, a.offset, a.timestamp)]
    predating = len(arrivals) - len(kept)
    asked = _forget_requests(kept)
    # Turns of forgotten messages: forgotten in this step, or held by a message tombstone
    # (a replay of the turns topic brings them again).
    gone = set(asked) | snapshot.forgotten
    unforgotten = [a for a in kept if not (isinstance(a.event, Turn) and a.event.event_id in gone)]
    unexpired = [a for a in unforgotten if not _expired(a.event, now, retention)]
    return _Admitted(
        unexpired,
        asked,
        predating,
        len(kept) - len(unforgotten),
        len(unforgotten) - len(unexpired),
    )


@dataclass(frozen=True, slots=True)
class _Run:
    state: UserWindows
    seen: dict[str, int]
    ready: list[SegmentReady | Resegment]
    closures: list[WindowClosed]
    duplicates: int
    conflicts: list[str]


def _reduce(
    state: UserWindows,
    events: Sequence[InputEvent],
    committed: Mapping[str, int],
    now: datetime,
    rules: WindowRules,
) -> _Run:
    """The window reducer over the step's events; a turn seen before (committed, or earlier
    in the step) is a duplicate, a conflict when its content differs from the first copy."""
    seen: dict[str, int] = {}
    ready: list[SegmentReady | Resegment] = []
    closures: list[WindowClosed] = []
    duplicates = 0
    conflicts: list[str] = []
    for event in events:
        if isinstance(event, ForgetRequested | RebuildRequested):
            continue
        if isinstance(event, Turn):
            mark = content_mark(event)
            first = seen.get(event.event_id, committed.get(event.event_id))
            if first is not None:
                duplicates += 1
                if first not in (0, mark):  # 0: committed before marks existed
                    conflicts.append(event.event_id)
                continue
            seen[event.event_id] = mark
        state, outputs = apply_in_order(state, event, now, rules)
        for out in outputs:
            if isinstance(out, SegmentReady | Resegment):
                ready.append(out)
            else:
                closures.append(out)
    return _Run(state, seen, ready, closures, duplicates, conflicts)


def asked_session_ids(arrivals: Sequence[Arrival]) -> list[str]:
    """The session ids of the step's turns: the remembered sessions a snapshot reads first."""
    return list(dict.fromkeys(a.event.session_id for a in arrivals if isinstance(a.event, Turn)))


def asked_event_ids(arrivals: Sequence[Arrival]) -> list[str]:
    """The turn ids a snapshot is asked about (their seen marks and message tombstones)."""
    return list(dict.fromkeys(a.event.event_id for a in arrivals if isinstance(a.event, Turn)))


def content_mark(turn: Turn) -> int:
    """21 bits (never 0) of what a turn says, stored with its idempotency marker so a later
    copy of the same event id with other content is recognised (a miss is one in two
    million)."""
    fields = (turn.session_id, turn.speaker, turn.role, turn.text, turn.ts.isoformat())
    digest = hashlib.blake2b("\x1f".join(fields).encode("utf-8", "surrogatepass"), digest_size=8)
    return (int.from_bytes(digest.digest(), "big") % ((1 << 21) - 1)) + 1


def _forget_requests(arrivals: Sequence[Arrival]) -> list[str]:
    return list(
        dict.fromkeys(
            i for a in arrivals if isinstance(a.event, ForgetRequested) for i in a.event.message_ids
        )
    )


def _expired(event: InputEvent, now: datetime, retention: timedelta | None) -> bool:
    return isinstance(event, Turn) and (at := deadline(event, retention)) is not None and at <= now
