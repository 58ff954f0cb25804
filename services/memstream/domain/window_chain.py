"""The windows above a session: its L2, and the day, week and month it belongs to, each
linked to its parent, and the keys the reducer (`domain.windows`) tracks them by.

Which calendar window a session (and then its day, and its week) belongs to is decided by
`domain.calendar_windows` from the windows the user has had, so a zone change never opens a
second window over the same instant.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from itertools import repeat
from operator import is_

from memstream.domain.calendar_windows import calendar_window, remembered
from memstream.domain.ids import window_node_id
from memstream.domain.incarnations import SessionInfo
from memstream.domain.models import Level, Window


@dataclass(frozen=True, slots=True)
class OpenWindow:
    """A tracked window that has children not yet consolidated into it."""

    window: Window
    node_id: str
    parent_key: str | None


def window_key(level: Level, start: datetime, session_id: str | None = None) -> str:
    if level == Level.SESSION:  # the start tells apart the sessions one id has named
        return f"2|{session_id}|{start.isoformat()}"
    return f"{int(level)}|{start.isoformat()}"


def window_parts(window: Window) -> tuple[Level, datetime, str | None]:
    return window.level, window.start, window.session_id


def session_chain(
    user_id: str, tz: str, calendar: tuple[Window, ...], info: SessionInfo
) -> list[OpenWindow]:
    """The session's window and its ancestors, each linked to its parent's key: the session
    in the zone it began in, the calendar windows from those remembered in `calendar` or
    opened in `tz`, the user's zone now."""
    chain = [
        Window(user_id, Level.SESSION, info.start, info.last_ts, info.session_id, info.tz or tz)
    ]
    for level in (Level.DAY, Level.WEEK, Level.MONTH):
        # A session belongs to the day it starts on, a day to its week, a week to the month
        # of its start (its Monday, unless a zone change cut it short).
        chain.append(calendar_window(user_id, level, chain[-1].start, tz, calendar))
    linked: list[OpenWindow] = []
    for i, window in enumerate(chain):
        parent_key = window_key(*window_parts(chain[i + 1])) if i + 1 < len(chain) else None
        node_id = window_node_id(user_id, *window_parts(window))
        linked.append(OpenWindow(window, node_id, parent_key))
    return linked


def parent_node_id(user_id: str, ow: OpenWindow) -> str | None:
    if ow.parent_key is None:
        return None
    level, start = ow.parent_key.split("|", 1)
    return window_node_id(user_id, Level(int(level)), datetime.fromisoformat(start))


def remember_chain(calendar: tuple[Window, ...], chain: list[OpenWindow]) -> tuple[Window, ...]:
    """`calendar` with the chain's day, week and month (one may have grown)."""
    for ow in chain:
        # A window found in `calendar` is the very object there: new or grown ones are not.
        if ow.window.level > Level.SESSION and not any(map(is_, calendar, repeat(ow.window))):
            calendar = remembered(calendar, ow.window)
    return calendar
