"""A session id names a conversation while it is in use, not for ever.

Producers reuse ids: a server with one id per process, an app with one id per user, a
client that ends a session and goes on under its id the next day. The reducer
(`domain.windows`) asks here whether a turn continues the session its id names or starts a
new one, and keeps the sessions an id named before, so a late turn of one of them still
finds its own session.

The rule reads event time only, so a replay of the log decides as the first run did: a turn
starts a new session when it is dated after the `session_end` that closed its id's session,
or at least the idle timeout after that session's last message. Otherwise it belongs to the
session (as a late turn if the session has closed). The new session's L2 id is named by its
own start (`domain.ids.window_node_id`: user, start, session id), the time of its first
message in `seq` order, so it differs from the earlier session's and is the same on replay.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from memstream.domain.models import Turn

# Earlier sessions under reused ids that are remembered for their late turns; past this the
# oldest are forgotten, and a late turn of one is late data of a forgotten session.
MAX_EARLIER_SESSIONS = 64


@dataclass(frozen=True, slots=True)
class SessionInfo:
    session_id: str
    start: datetime
    last_ts: datetime
    last_received: datetime
    closed: bool = False
    next_seq: int = 0  # one past the highest `seq` taken: the turn expected next
    ended: datetime | None = None  # the time its `session_end` gave, if one closed it
    tz: str | None = None  # the zone it began in, whose calendar its L2 reads
    # The lowest `seq` taken (None: unknown, a state saved before it was kept): a late turn
    # below it is the session's first message, whose time names the session.
    first_seq: int | None = None


def starts_anew(info: SessionInfo, turn: Turn, idle: timedelta) -> bool:
    """Whether `turn`, of `info`'s id, starts a new session rather than joining `info`."""
    if info.ended is not None and turn.ts > info.ended:
        return True
    return turn.ts - info.last_ts >= idle


def earlier_session(
    earlier: tuple[SessionInfo, ...], current: SessionInfo, turn: Turn
) -> SessionInfo | None:
    """The earlier session under `turn`'s id that a turn dated before `current` began
    belongs to: the latest that started by its time (None: none is remembered)."""
    if turn.ts >= current.start:
        return None
    candidates = [s for s in earlier if s.session_id == turn.session_id and s.start <= turn.ts]
    return max(candidates, key=lambda s: s.start, default=None)


def archived(earlier: tuple[SessionInfo, ...], info: SessionInfo) -> tuple[SessionInfo, ...]:
    """`earlier` with `info` (closed, its id now names a new session), the oldest dropped."""
    return (*earlier, info)[-MAX_EARLIER_SESSIONS:]


def updated(
    earlier: tuple[SessionInfo, ...], info: SessionInfo, start: datetime | None = None
) -> tuple[SessionInfo, ...]:
    """`earlier` with `info` in place of the session it updates (same id, and the start it
    had: `start`, if a late first message moved it, else its own)."""
    key = (info.session_id, info.start if start is None else start)
    return tuple(info if (s.session_id, s.start) == key else s for s in earlier)
