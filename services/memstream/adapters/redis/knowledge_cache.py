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

When the revision moved on, what is held is not thrown away: it is a view
(`domain.knowledge_view`) that the reader steps forward with the L1s changed since, which the
user's change log names (`keys.KNOWLEDGE_CHANGES`, `knowledge_log`); only when the log no
longer reaches back to the revision held is the user derived whole again.

Facts and entities are kept apart, each filled when first asked for, so the facts route
never pays for the entity index. Entries are frozen values shared by every request; the least
recently used user goes first beyond `size` users. A size of 0 keeps nothing.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Generic, TypeVar

from memstream.domain.knowledge_view import EntitiesView, FactsView

DEFAULT_USERS = 64  # a LoCoMo-sized user (680 L1s) holds about 0.5 MiB

View = TypeVar("View", FactsView, EntitiesView)


@dataclass(frozen=True, slots=True)
class Held(Generic[View]):
    """One part of a user's knowledge as derived at one revision."""

    revision: bytes
    view: View


@dataclass(frozen=True, slots=True)
class Derived:
    """What is held of one user: each part at the revision it was last derived or stepped to
    (the two may differ: each is read when asked for)."""

    facts: Held[FactsView] | None = None
    entities: Held[EntitiesView] | None = None


class KnowledgeCache:
    """Derived knowledge by user, each part with the revision it is valid for."""

    def __init__(self, size: int = DEFAULT_USERS) -> None:
        if size < 0:
            raise ValueError("size must not be negative")
        self.size = size
        self._users: OrderedDict[str, Derived] = OrderedDict()

    def __contains__(self, user_id: str) -> bool:
        return user_id in self._users

    def __len__(self) -> int:
        return len(self._users)

    def facts(self, user_id: str) -> Held[FactsView] | None:
        """The user's facts as last derived, at whatever revision (the reader compares it)."""
        held = self._touch(user_id)
        return held.facts if held is not None else None

    def entities(self, user_id: str) -> Held[EntitiesView] | None:
        held = self._touch(user_id)
        return held.entities if held is not None else None

    def drop(self, user_id: str) -> None:
        """Keep nothing of the user (it was forgotten)."""
        self._users.pop(user_id, None)

    def keep_facts(self, user_id: str, revision: bytes | None, view: FactsView) -> None:
        if revision is not None:
            self._keep(user_id, facts=Held(revision, view))

    def keep_entities(self, user_id: str, revision: bytes | None, view: EntitiesView) -> None:
        if revision is not None:
            self._keep(user_id, entities=Held(revision, view))

    def _touch(self, user_id: str) -> Derived | None:
        held = self._users.get(user_id)
        if held is not None:
            self._users.move_to_end(user_id)
        return held

    def _keep(
        self,
        user_id: str,
        facts: Held[FactsView] | None = None,
        entities: Held[EntitiesView] | None = None,
    ) -> None:
        if self.size == 0:
            return
        held = self._users.get(user_id, Derived())
        self._users[user_id] = Derived(facts or held.facts, entities or held.entities)
        self._users.move_to_end(user_id)
        while len(self._users) > self.size:
            self._users.popitem(last=False)
