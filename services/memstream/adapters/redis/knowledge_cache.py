"""What a reader derived from a user's knowledge, held while the user's revision stays the same.

Recall and the API read a user's facts and entities on every request, and deriving them
(decoding every L1's contribution, the fact timelines, the entity index with its aliases
merged) costs milliseconds for a user of LoCoMo's size, far more than reading them. Every
transaction that changes a user's knowledge also sets the user's revision
(`keys.KNOWLEDGE_REVISION`) to a token never used before, so a reader that holds what it
derived under the revision it derived it at can tell with one GET whether that still holds.
A forget deletes the revision with the rest: a reader that finds none derives afresh and
keeps nothing, and the next write's new token can never meet an entry of the data forgotten
(a counter would: it would start again at 1).

Facts and entities are kept apart, each filled when first asked for, so the facts route
never pays for the entity index. Entries are frozen values shared by every request; the least
recently used user goes first beyond `size` users. A size of 0 keeps nothing.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace

from memstream.domain.entity_index import EntityIndex
from memstream.domain.fact_timeline import timelines_of
from memstream.domain.facts import AtomicFact
from memstream.domain.knowledge import Timelines

DEFAULT_USERS = 64  # a LoCoMo-sized user (680 L1s) holds about 0.5 MiB


@dataclass(frozen=True, slots=True)
class DerivedFacts:
    """A user's facts as extracted (observations) and the timelines they make."""

    observations: tuple[AtomicFact, ...]
    timelines: Timelines

    @classmethod
    def of(cls, observations: list[AtomicFact]) -> DerivedFacts:
        return cls(tuple(observations), timelines_of(observations))


@dataclass(frozen=True, slots=True)
class Derived:
    """What was derived from one revision of a user's knowledge, so far."""

    revision: bytes
    facts: DerivedFacts | None = None
    index: EntityIndex | None = None


class KnowledgeCache:
    """Derived knowledge by user, each valid for the one revision it was derived at."""

    def __init__(self, size: int = DEFAULT_USERS) -> None:
        if size < 0:
            raise ValueError("size must not be negative")
        self.size = size
        self._users: OrderedDict[str, Derived] = OrderedDict()

    def __contains__(self, user_id: str) -> bool:
        return user_id in self._users

    def __len__(self) -> int:
        return len(self._users)

    def at(self, user_id: str, revision: bytes | None) -> Derived | None:
        """What is held of the user at `revision`; None if nothing, or of another revision.
        No revision (a user forgotten, or written before revisions) drops what is held."""
        if revision is None:
            self.drop(user_id)
            return None
        held = self._users.get(user_id)
        if held is None or held.revision != revision:
            return None
        self._users.move_to_end(user_id)
        return held

    def drop(self, user_id: str) -> None:
        """Keep nothing of the user (it was forgotten)."""
        self._users.pop(user_id, None)

    def keep_facts(self, user_id: str, revision: bytes | None, facts: DerivedFacts) -> None:
        self._keep(user_id, revision, lambda held: replace(held, facts=facts))

    def keep_index(self, user_id: str, revision: bytes | None, index: EntityIndex) -> None:
        self._keep(user_id, revision, lambda held: replace(held, index=index))

    def _keep(
        self, user_id: str, revision: bytes | None, fill: Callable[[Derived], Derived]
    ) -> None:
        if revision is None or self.size == 0:
            return
        held = self._users.get(user_id)
        if held is None or held.revision != revision:
            held = Derived(revision)  # what an older revision gave is of no use now
        self._users[user_id] = fill(held)
        self._users.move_to_end(user_id)
        while len(self._users) > self.size:
            self._users.popitem(last=False)
