"""The closed sessions and windows a user's window state remembers, kept apart from it.

The reducer (`domain.windows`) remembers up to `MAX_REMEMBERED_SESSIONS` sessions and
`MAX_REMEMBERED_CLOSED` closed window keys to recognise late data. Only a turn of a session
the open state does not hold, or a window closing, needs them; so the store keeps them
beside the state document and a step reads only the entries it asks for (`Remembered`).

When the reducer reaches a question the step has not read the answer to (a session id, a
window key, more of the oldest sessions), it notes it (`Questions`) and goes on as if the
answer were "not remembered", so that one pass gathers every question of the step; the
segmenter looks them up and decides the step again from the start. A step decided again with
more answers takes the same path up to its first unanswered question and goes further, so it
ends, and its result is the one the reducer gives with everything in memory
(`tests/unit/domain/test_remembered.py`). A step of the open session asks nothing; one that
closes sessions or windows asks once.

With no `Remembered` attached (`UserWindows.remembered` None) the state holds everything
itself, as it did before: the unit tests, the benchmarks' fills and a state written before
the split (its first commit moves its closed sessions and keys out: `apart`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from memstream.domain.incarnations import SessionInfo

# How many of the oldest remembered sessions a step reads before it is asked for more: the
# one a new session's turn compares its time with, and a few to evict.
OLDEST_READ = 4


@dataclass(frozen=True, slots=True)
class Lookup:
    """What the reducer asked for and the step had not read."""

    sessions: frozenset[str] = frozenset()
    closed: frozenset[str] = frozenset()
    oldest: int = 0  # how many of the oldest remembered sessions to read


@dataclass(slots=True)
class Questions:
    """What one decision asked and was not told (the one mutable part: a pass's notes)."""

    sessions: set[str] = field(default_factory=set)
    closed: set[str] = field(default_factory=set)
    oldest: int = 0

    def lookup(self) -> Lookup | None:
        if not (self.sessions or self.closed or self.oldest):
            return None
        return Lookup(frozenset(self.sessions), frozenset(self.closed), self.oldest)


@dataclass(frozen=True, slots=True)
class Remembered:
    """What a step has read of the remembered closed sessions and window keys.

    `sessions`: the ids looked up, each with its info (None: not remembered); `closed`: the
    window keys looked up, each with whether it is remembered as closed; `count`: how many
    closed sessions are remembered; `oldest`: the oldest of them, (id, last message time),
    oldest first, by time then id.
    """

    sessions: Mapping[str, SessionInfo | None] = field(default_factory=dict)
    closed: Mapping[str, bool] = field(default_factory=dict)
    count: int = 0
    oldest: tuple[tuple[str, datetime], ...] = ()
    # The questions of the decision under way: not part of what was read.
    questions: Questions = field(default_factory=Questions, compare=False, repr=False)

    def merged(self, more: Remembered) -> Remembered:
        """These answers and `more`'s (read after them, for the questions they left)."""
        return Remembered(
            sessions={**self.sessions, **more.sessions},
            closed={**self.closed, **more.closed},
            count=more.count,
            oldest=max(self.oldest, more.oldest, key=len),
        )

    def held(self, session_id: str) -> bool:
        """Whether the session is remembered apart (found by a lookup or among the oldest)."""
        return self.sessions.get(session_id) is not None or any(
            session_id == sid for sid, _ in self.oldest
        )

    def complete(self) -> bool:
        """Whether `oldest` lists every remembered session."""
        return len(self.oldest) >= self.count


@dataclass(frozen=True, slots=True)
class RememberedChanges:
    """What a step's commit writes of the remembered sessions and window keys: the sessions
    remembered (written whole, closed ones only), the ids no longer remembered apart
    (evicted, or open again and held by the document), and the window keys closed, in
    order, each with its place (`closed_seq` numbers them: the store keeps the newest)."""

    sessions: tuple[SessionInfo, ...] = ()
    dropped: tuple[str, ...] = ()
    closed: tuple[tuple[str, int], ...] = ()
    unclosed: tuple[str, ...] = ()  # keys closed no more (a session renamed: its old key)

    def __bool__(self) -> bool:
        return bool(self.sessions or self.dropped or self.closed or self.unclosed)
