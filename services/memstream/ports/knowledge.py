"""What memstream asks of the knowledge store: facts and entities, read.

The segmenter writes a user's knowledge with its L1s, in the same transaction
(`UserCommit.knowledge`, a `domain.knowledge.KnowledgeChange`); what is stored is each L1's
contribution (its facts as extracted, its entity surfaces), and what is read is derived
from all of them (`domain.knowledge`), so a read always agrees with the L1s committed.
Readers (recall, the HTTP API) are typed with `KnowledgeReads`; the consolidator, which
builds each monthly profile from the facts, with `ProfileFacts`; the segmenter, which
announces the versions its commits change on the change feed, with `LeafFacts`.
`tests/integration/knowledge_contract.py` holds every implementation to it.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Protocol

from memstream.domain.entity_index import Entity, EntityIndex
from memstream.domain.fact_heads import SlotHead
from memstream.domain.facts import AtomicFact


class KnowledgeReads(Protocol):
    async def facts(
        self,
        user_id: str,
        subject: str | None = None,
        at: datetime | None = None,
        now: datetime | None = None,
    ) -> list[AtomicFact]:
        """The fact versions that hold now, or at `at` as far as is known today, of every
        subject or one ("speaker:maya"), by subject, attribute, then version; given `now`,
        with the changes told to begin after it (`domain.fact_timeline.current`)."""
        ...

    async def fact_history(self, user_id: str, subject: str, attribute: str) -> list[AtomicFact]:
        """Every version of one subject's attribute, oldest first, each closed by and linked
        to the next; empty when nothing was said of it."""
        ...

    async def fact_versions(self, user_id: str) -> list[AtomicFact]:
        """Every version of every subject's attributes, superseded ones closed and linked, by
        subject, attribute, then version (oldest first)."""
        ...

    async def entity_index(self, user_id: str) -> EntityIndex:
        """The user's entity index: its leaves' surfaces and the entities derived from them."""
        ...

    async def entities(self, user_id: str) -> list[Entity]:
        """The entities the user's memories name, by key."""
        ...

    async def entity(self, user_id: str, name: str) -> Entity | None:
        """The entity `name` stands for (its key, an alias key, or a name), or None."""
        ...


class ProfileFacts(Protocol):
    async def facts_said(self, user_id: str, before: datetime) -> list[AtomicFact]:
        """The facts as extracted from the user's L1s (observations: no version derived),
        of messages said before `before`, in no particular order."""
        ...


class LeafFacts(Protocol):
    async def slot_facts(
        self, user_id: str, slots: Collection[tuple[str, str]], leaf_ids: Collection[str]
    ) -> dict[str, tuple[AtomicFact, ...]]:
        """By L1 id, the user's stored facts as extracted (observations) of every (subject,
        attribute) in `slots` or said by one of `leaf_ids`, with their subjects' endings
        told without an attribute, and every fact of a subject whose such ending is among
        them (`fact_changes.facts_needed`): every fact whose versions a commit can change
        that writes facts of `slots` and rewrites or drops `leaf_ids`. The segmenter
        compares them with the commit's to announce the versions it changes."""
        ...

    async def slot_heads(
        self, user_id: str, slots: Collection[tuple[str, str]]
    ) -> dict[tuple[str, str, str], SlotHead]:
        """The heads kept of these (subject, attribute) slots, by (user, subject, attribute):
        what a commit that restates them steps forward (`domain.fact_heads`). A slot with
        none kept (never stated, or its heads dropped) is missing."""
        ...
