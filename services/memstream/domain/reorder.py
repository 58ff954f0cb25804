"""A session's turns taken in `seq` order, whatever order they arrive in.

Several producer instances, or a retry, can deliver a session's turns out of order. The
reducer (`domain.windows`) pairs a message with its reply and names a session by its first
message, so it must see them in `seq` order: a turn whose `seq` is past the next one its
session expects is held in the user's state until the turns before it arrive, and then
the held turns go to the reducer in `seq` order.

The wait is bounded by a count, `WindowRules.reorder_turns` (the user's held turns), not by
a time: the log holds the same records in the same order on every replay, so a count holds
and releases the same turns each time, where a wall-clock wait would depend on how fast
the records were read. Past the bound, the session of the turn held longest goes on from
its lowest held `seq` (the missing turns, should they come, are late data: a turn of a
closed session is never held, nothing will come to fill its gap); a
`session_end` releases its session's held turns first, and a clock tick all of them (a
tick is due the idle timeout after the newest hold, `held_due`). A session's first `seq`
is 0 (the schema's minimum): a session that starts higher waits for the bound.

Held turns live in the window state, so they are committed with the step that held them
and a crash replays into the same holds.
"""

from __future__ import annotations

from datetime import datetime

from memstream.domain.frozen import replace
from memstream.domain.incarnations import starts_anew
from memstream.domain.models import ClockTicked, SessionEnded, Turn
from memstream.domain.windows import Output, UserWindows, WindowRules, apply, known_session


def apply_in_order(
    state: UserWindows,
    event: Turn | SessionEnded | ClockTicked,
    received_at: datetime,
    rules: WindowRules,
) -> tuple[UserWindows, list[Output]]:
    """`windows.apply`, with the user's turns taken in their sessions' `seq` order."""
    if isinstance(event, Turn):
        if not state.held and event.seq <= expected_seq(state, event, rules):
            return apply(state, event, received_at, rules)  # in order: the usual case
        state = replace(state, held=(*state.held, event), held_at=received_at)
        return _release(state, received_at, rules, keep=rules.reorder_turns)
    outputs: list[Output] = []
    if state.held:
        only = event.session_id if isinstance(event, SessionEnded) else None
        # Released turns count as received when the newest of them was: a tick that lets
        # them go can then find their session idle.
        at = state.held_at or received_at
        state, outputs = _release(state, at, rules, keep=0, only=only)
    state, more = apply(state, event, received_at, rules)
    return state, outputs + more


def expected_seq(state: UserWindows, turn: Turn, rules: WindowRules) -> int:
    """The highest `seq` `turn` may carry to be taken now: its session's next (0 for a
    session not seen yet). A turn that starts a new session under a used id expects the
    old session's next, or 0 if it counts again from 0; one of a closed session it does
    not start anew is late data, taken at once (nothing would come to fill its gap)."""
    info = known_session(state, turn.session_id)
    if info is None:
        return 0
    if starts_anew(info, turn, rules.reuse_gap):
        return info.next_seq if turn.seq >= info.next_seq else 0
    return turn.seq if info.closed else info.next_seq


def held_due(state: UserWindows, rules: WindowRules) -> datetime | None:
    """When a tick should release the held turns: the idle timeout after the newest hold."""
    return state.held_at + rules.session_idle if state.held and state.held_at else None


def _release(
    state: UserWindows,
    received_at: datetime,
    rules: WindowRules,
    keep: int,
    only: str | None = None,
) -> tuple[UserWindows, list[Output]]:
    """Apply every held turn that is next in its session, then, while more than `keep`
    turns (of session `only`, if given) are held, go on past the gap held longest."""
    outputs: list[Output] = []
    while True:
        turn = _next_in_order(state, rules)
        if turn is None:
            waiting = [t for t in state.held if only is None or t.session_id == only]
            if len(waiting) <= keep:
                break
            session = waiting[0].session_id
            turn = min((t for t in waiting if t.session_id == session), key=lambda t: t.seq)
        held = tuple(t for t in state.held if t is not turn)
        state = replace(state, held=held, held_at=state.held_at if held else None)
        state, out = apply(state, turn, received_at, rules)
        outputs += out
    return state, outputs


def _next_in_order(state: UserWindows, rules: WindowRules) -> Turn | None:
    """A held turn its session expects now (the lowest such `seq`), if any."""
    ready = [t for t in state.held if t.seq <= expected_seq(state, t, rules)]
    return min(ready, key=lambda t: t.seq, default=None)
