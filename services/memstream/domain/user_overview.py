"""What an operator sees of a user before opening its tree: a search result and an overview.

Both are read from indexes the stores keep anyway (the users registry, the level indexes,
the window state, the degraded index): never by reading every node.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from memstream.domain.models import Level
from memstream.domain.windows import UserWindows


@dataclass(frozen=True, slots=True)
class UserListing:
    """One user found by a search: when its messages were last written, how many
    exchanges (L1 memories) it has."""

    user_id: str
    last_seen: datetime | None
    memories: int


@dataclass(frozen=True, slots=True)
class PendingWindow:
    """A window not consolidated yet: an open calendar window, or the messages waiting to
    become an exchange (level 1, no end yet)."""

    level: Level
    start: datetime
    end: datetime | None


@dataclass(frozen=True, slots=True)
class UserOverview:
    user_id: str
    counts: Mapping[Level, int]
    first_at: datetime | None  # the start of its first exchange
    last_at: datetime | None  # the end of its last exchange
    last_written_at: datetime | None  # when its messages were last committed
    pending_windows: tuple[PendingWindow, ...]
    degraded: int  # nodes the offline fallback wrote, waiting to be written again


def pending_windows(state: UserWindows | None) -> tuple[PendingWindow, ...]:
    """The messages held for the next exchange, then the open windows, by level and start."""
    if state is None:
        return ()
    held = [PendingWindow(Level.SEGMENT, state.pending[0].ts, None)] if state.pending else []
    opened = sorted(
        (
            PendingWindow(ow.window.level, ow.window.start, ow.window.end)
            for ow in state.open_windows.values()
        ),
        key=lambda w: (int(w.level), w.start),
    )
    return (*held, *opened)
