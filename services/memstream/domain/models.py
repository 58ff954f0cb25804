"""Events, levels, windows and memory nodes: the vocabulary every part of memstream speaks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import IntEnum
from typing import Literal, get_args

from memstream.domain.derivation import Derivation

Role = Literal["user", "assistant", "other"]
ClosureReason = Literal["session_end", "new_session", "idle", "watermark", "clock", "late_data"]
# How much of the tree a query needs: leaves and sessions, + days, + weeks (the planner's call).
Complexity = Literal["simple", "hybrid", "complex"]
# What a caller may ask for: one of the above, or "auto" to let the planner decide.
RequestedComplexity = Literal["auto", "simple", "hybrid", "complex"]
COMPLEXITIES: tuple[Complexity, ...] = get_args(Complexity)
REQUESTED_COMPLEXITIES: tuple[RequestedComplexity, ...] = get_args(RequestedComplexity)


class Level(IntEnum):
    """Tree levels, from fine-grained segments to the monthly profile."""

    SEGMENT = 1
    SESSION = 2
    DAY = 3
    WEEK = 4
    MONTH = 5

    @property
    def label(self) -> str:
        return f"L{int(self)}"

    @property
    def noun(self) -> str:
        """What one node of the level spans: "segment", "session", "day", "week", "month"."""
        return self.name.lower()


@dataclass(frozen=True, slots=True)
class Turn:
    """One message of a conversation, as a producer published it (`turn.v1`)."""

    event_id: str
    user_id: str
    session_id: str
    seq: int
    speaker: str
    role: Role
    text: str
    ts: datetime
    tz: str | None = None
    metadata: dict[str, object] = field(default_factory=dict)
    expires_at: datetime | None = None  # when it must be forgotten (domain.expiry)
    flush: bool = False  # a segment of its own at once, not waiting for its reply


@dataclass(frozen=True, slots=True)
class SessionEnded:
    """A producer declared a session over (`session_end.v1`)."""

    user_id: str
    session_id: str
    ts: datetime


@dataclass(frozen=True, slots=True)
class ForgetRequested:
    """Right to be forgotten (`forget.v1`): everything about a user, or, when `message_ids`
    names some, only those messages (and what was derived from them)."""

    user_id: str
    message_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ClockTicked:
    """The scheduler's wall clock reached `now` for a user (`tick.v1`, internal).

    Ticks travel on the turns topic, keyed by user, so the segmenter stays the only writer
    of a user's window state and sees ticks in order with that user's turns.
    """

    user_id: str
    now: datetime


@dataclass(frozen=True, slots=True)
class RebuildRequested:
    """Re-derive a user's tree from the stored messages (`rebuild.v1`): the leaves (ending on
    or after `since`, of `levels`) with the current backend, prompts and embedder, then the
    windows above them. The same `rebuild_id` again continues that rebuild."""

    user_id: str
    rebuild_id: str
    since: datetime | None = None
    levels: tuple[Level, ...] = tuple(Level)


InputEvent = Turn | SessionEnded | ForgetRequested | ClockTicked | RebuildRequested


@dataclass(frozen=True, slots=True)
class Window:
    """A half-open interval [start, end) of one level; `session_id` only for L2; `tz`, the
    IANA zone it was opened in, whose calendar its title and dates read (None: a window
    recorded without one, read on its start's own offset)."""

    user_id: str
    level: Level
    start: datetime
    end: datetime
    session_id: str | None = None
    tz: str | None = None

    def contains(self, instant: datetime) -> bool:
        return self.start <= instant < self.end


@dataclass(frozen=True, slots=True)
class WindowClosed:
    """A window will receive no more children (for now): consolidate it (`window.v1`)."""

    window: Window
    reason: ClosureReason
    node_id: str
    parent_id: str | None = None


@dataclass(frozen=True, slots=True)
class SourceMessage:
    """A message as spoken, kept verbatim in the L1 it belongs to: what a leaf quotes, what a
    fact's provenance points at, and what forgetting one message removes."""

    event_id: str
    speaker: str
    role: Role
    text: str
    ts: datetime
    caption: str | None = None  # what a shared image shows (metadata, not words spoken)
    # Its place in its session and the zone it was dated in (None: stored before they were
    # kept): what cutting the session again in `seq` order, and a rebuild, read back.
    seq: int | None = None
    tz: str | None = None
    # Sent to be written at once, alone (`Turn.flush`): a cut of its session keeps it so.
    flush: bool = False


@dataclass(frozen=True, slots=True)
class Fact:
    """One sentence or bullet of a summary with the ids of the messages it comes from."""

    text: str
    source_ids: tuple[str, ...]
    at: datetime | None = None  # when it was said (its first message), for dating it above


@dataclass(frozen=True, slots=True)
class MemoryNode:
    """One node of a user's Temporal Memory Tree."""

    id: str
    user_id: str
    level: Level
    t_start: datetime
    t_end: datetime
    text: str
    parent_id: str | None = None
    children: tuple[str, ...] = ()
    source_ids: tuple[str, ...] = ()
    version: int = 1
    degraded: bool = False
    session_id: str | None = None
    speakers: tuple[str, ...] = ()
    messages: tuple[SourceMessage, ...] = ()  # L1 only: its source messages, verbatim
    facts: tuple[Fact, ...] = ()  # L2-L5: the text's facts with their provenance
    derivation: Derivation | None = None  # what wrote it (None: written before it was kept)
    # L2-L5: the zone its window was opened in, whose calendar its dates read (None: stored
    # before it was kept, or an L1, whose messages each keep theirs).
    tz: str | None = None


@dataclass(frozen=True, slots=True)
class StoredNode:
    """A node as the tree store keeps it, with the fingerprint of the children it was built
    from (empty for L1, which has none)."""

    node: MemoryNode
    fingerprint: str


@dataclass(frozen=True, slots=True)
class SparseVector:
    """Lexical term weights: hashed term ids and their (BM25 term-frequency) weights."""

    indices: tuple[int, ...]
    values: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class IndexedMemory:
    """A node with both of its vectors, ready for the vector index."""

    node: MemoryNode
    dense: Sequence[float]
    sparse: SparseVector


@dataclass(frozen=True, slots=True)
class ScoredId:
    id: str
    score: float


@dataclass(frozen=True, slots=True)
class Summary:
    """What a language model (or the offline rules) wrote for one node."""

    text: str
    degraded: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    facts: tuple[Fact, ...] = ()  # per-fact provenance of a consolidated text


@dataclass(frozen=True, slots=True)
class Plan:
    """How recall will search for a query: how deep to climb, which words matter."""

    complexity: Complexity
    keywords: tuple[str, ...]
    degraded: bool = False
