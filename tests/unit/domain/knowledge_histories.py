"""Random histories of a user's L1s, for the tests that compare knowledge stepped forward
with knowledge derived whole: L1s written, written again with other messages (a message
forgotten, a rebuild), and removed, in a seeded order.

The messages come from a small pool that states facts of a few slots again and again (so
timelines supersede, and a rewrite reopens what it had closed) and names people by full
name, first name and relation (so the entity index merges aliases and splits them again).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from memstream.domain.models import Level, MemoryNode, SourceMessage

START = datetime(2024, 1, 1, 9, 0, tzinfo=UTC)
SAID = [
    "I live in Porto with my sister Anna.",
    "Big news: we moved to Berlin!",
    "I live in Lisbon these days.",
    "I work as a nurse now.",
    "I work as a teacher now.",
    "My brother moved to Madrid.",
    "My sister Beth moved to Oslo.",
    "Melanie Smith came over for dinner.",
    "Mel and I went hiking yesterday.",
    "I had coffee with Caroline at the harbour.",
    "Caroline's brother lives in Tokyo.",
    "My favourite hobby is painting.",
    "I no longer like painting.",
    "I miss the sea.",
    "I've left Berlin.",
    "I quit painting last week.",
    "Game of Thrones is on tonight.",
    "Anna said hello.",
    # A speaker named by the other: the same person as when they speak (`fact_subjects`).
    "Jon moved to Lisbon.",
    "Maya works as a teacher now.",
]
# Values stated, restated, ended without their attribute and stated again; someone else's.
ENDINGS_SAID = (
    "I play for the Magpies.",
    "I joined the Magpies.",
    "I've left the Magpies.",
    "I play for the Hawks.",
    "I live in Porto.",
    "We moved to Berlin!",
    "I've left Berlin.",
    "My friend Ellie is doing keto.",
    "Ellie quit keto.",
    "I stopped going to the climbing gym.",
    "My favourite hobby is painting.",
    "I gave up painting.",
    "Jon joined the Hawks.",
)
SPEAKERS = ["Maya", "Jon"]


@dataclass
class History:
    """The L1s a user holds now, and the steps that led there."""

    rng: random.Random
    user: str = "ana"
    said: tuple[str, ...] = tuple(SAID)
    held: dict[str, MemoryNode] = field(default_factory=dict)
    messages: int = 0
    written: int = 0

    def step(self) -> tuple[list[MemoryNode], list[MemoryNode]]:
        """One commit: (L1s written, L1s removed), picked at random."""
        roll = self.rng.random()
        if self.held and roll < 0.2:
            gone = self.rng.sample(sorted(self.held), k=min(len(self.held), self.rng.randint(1, 2)))
            return [], [self.held.pop(leaf_id) for leaf_id in gone]
        if self.held and roll < 0.45:
            rewritten = [self._rewrite(self.held[i]) for i in self._some()]
            self.held.update({n.id: n for n in rewritten})
            return rewritten, []
        written = [self._new() for _ in range(self.rng.randint(1, 4))]
        self.held.update({n.id: n for n in written})
        return written, []

    def _some(self) -> list[str]:
        return self.rng.sample(sorted(self.held), k=min(len(self.held), self.rng.randint(1, 3)))

    def _message(self) -> SourceMessage:
        self.messages += 1
        at = START + timedelta(hours=self.rng.randint(0, 24 * 200))
        speaker = self.rng.choice(SPEAKERS)
        return SourceMessage(f"m{self.messages}", speaker, "user", self.rng.choice(self.said), at)

    def _node(self, leaf_id: str, messages: tuple[SourceMessage, ...], version: int) -> MemoryNode:
        return MemoryNode(
            id=leaf_id,
            user_id=self.user,
            level=Level.SEGMENT,
            t_start=min(m.ts for m in messages),
            t_end=max(m.ts for m in messages),
            text=" ".join(m.text for m in messages),
            parent_id="s1",
            source_ids=tuple(m.event_id for m in messages),
            messages=messages,
            version=version,
        )

    def _new(self) -> MemoryNode:
        self.written += 1
        messages = tuple(self._message() for _ in range(self.rng.randint(1, 2)))
        return self._node(f"l{self.written:04d}", messages, 1)

    def _rewrite(self, node: MemoryNode) -> MemoryNode:
        """The L1 written again: one message forgotten, or its messages said otherwise."""
        if len(node.messages) > 1 and self.rng.random() < 0.5:
            messages = node.messages[1:]
        else:
            messages = tuple(self._message() for _ in range(self.rng.randint(1, 2)))
        return self._node(node.id, messages, node.version + 1)
