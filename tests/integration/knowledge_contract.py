"""Behaviour every store of the knowledge the segmenter commits shows, as a base class.

A store's test module subclasses `KnowledgeContract` (as `TestSomething`) and provides a
`tree` fixture: an empty `TreeStore` no other test sees. The knowledge is written the way
the segmenter writes it (`UserCommit.knowledge`, from the L1s of the commit) and read
through `ports.KnowledgeReads`, so RedisTree and the unit tests' FakeTree answer alike.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from memstream.contracts.codec import encode_state
from memstream.domain.facts import ENDED, AtomicFact
from memstream.domain.forgetting import Guard, Tombstone
from memstream.domain.knowledge import KnowledgeChange, knowledge_change
from memstream.domain.models import Level, MemoryNode, SourceMessage
from memstream.domain.windows import initial_state
from memstream.ports import TreeStore, UserCommit

JAN = datetime(2024, 1, 10, 9, 0, tzinfo=UTC)
APR = datetime(2024, 4, 2, 18, 30, tzinfo=UTC)
MAYA = "speaker:maya"


def leaf(leaf_id: str, *said: tuple[str, str, datetime], user: str = "ana") -> MemoryNode:
    """An L1 of Maya's messages: (event id, text, when)."""
    messages = tuple(SourceMessage(e, "Maya", "user", text, at) for e, text, at in said)
    return MemoryNode(
        id=leaf_id,
        user_id=user,
        level=Level.SEGMENT,
        t_start=min(at for _, _, at in said),
        t_end=max(at for _, _, at in said),
        text=" ".join(text for _, text, _ in said),
        parent_id="s1",
        source_ids=tuple(e for e, _, _ in said),
        messages=messages,
    )


PORTO = leaf("l1", ("m1", "I live in Porto with my sister Anna.", JAN))
BERLIN = leaf("l2", ("m2", "Big news: we moved to Berlin!", APR), ("m3", "I miss the sea.", APR))
# m2 forgotten: l2 written again, as the segmenter writes it (the next version)
BERLIN_FORGOTTEN = replace(leaf("l2", ("m3", "I miss the sea.", APR)), version=2)
MADRID = leaf("l3", ("m4", "My brother moved to Madrid.", APR + timedelta(days=1)))


async def write(
    tree: TreeStore,
    *nodes: MemoryNode,
    removed: tuple[MemoryNode, ...] = (),
    user: str = "ana",
    guard: Guard | None = None,
) -> bool:
    """A segmenter commit of these L1s (and removals) with what they say."""
    return await tree.commit_user(
        UserCommit(
            user,
            encode_state(initial_state(user, "UTC")),
            nodes=nodes,
            removed=removed,
            guard=guard,
            knowledge=knowledge_change(nodes, removed),
        )
    )


def values(facts: list[AtomicFact]) -> list[str]:
    """The places of `facts`: what these tests follow. The messages say more ("my sister
    Anna" is Maya's sister), which supersedes nothing here."""
    return [f.value for f in facts if f.attribute == "lives_in"]


class KnowledgeContract:
    async def test_nothing_committed_reads_as_nothing(self, tree: TreeStore) -> None:
        assert await tree.facts("ana") == []
        assert await tree.fact_history("ana", MAYA, "lives_in") == []
        assert await tree.entities("ana") == []
        assert await tree.entity("ana", "Maya") is None
        assert (await tree.entity_index("ana")).entities == {}

    async def test_facts_committed_with_their_l1s_supersede_by_event_time(
        self, tree: TreeStore
    ) -> None:
        assert await write(tree, BERLIN)
        assert await write(tree, PORTO)  # older news arriving later lands in its place
        assert values(await tree.facts("ana", MAYA)) == ["Berlin"]
        porto, berlin = await tree.fact_history("ana", MAYA, "lives_in")
        assert (porto.value, porto.valid_to, porto.superseded_by) == ("Porto", APR, berlin.fact_id)
        assert (berlin.supersedes, berlin.valid_to, berlin.source_ids) == (
            porto.fact_id,
            None,
            ("m2",),
        )
        assert values(await tree.facts("ana", MAYA, at=JAN + timedelta(days=1))) == ["Porto"]
        assert values(await tree.facts("ana", MAYA, at=JAN - timedelta(days=1))) == []

    async def test_every_version_is_listed_by_subject_attribute_then_time(
        self, tree: TreeStore
    ) -> None:
        assert await tree.fact_versions("ana") == []
        await write(tree, BERLIN, MADRID)
        await write(tree, PORTO)
        versions = [f for f in await tree.fact_versions("ana") if f.attribute == "lives_in"]
        assert [(f.subject, f.value) for f in versions] == [
            ("kin:maya:brother", "Madrid"),
            (MAYA, "Porto"),
            (MAYA, "Berlin"),
        ]
        porto, berlin = versions[1:]
        assert (porto.valid_to, porto.superseded_by) == (APR, berlin.fact_id)
        assert await tree.fact_versions("ana") == await tree.fact_versions("ana")

    async def test_facts_about_someone_else_are_theirs(self, tree: TreeStore) -> None:
        await write(tree, PORTO, MADRID)
        facts = await tree.facts("ana")
        assert [(f.subject, f.value) for f in facts if f.attribute == "lives_in"] == [
            ("kin:maya:brother", "Madrid"),
            (MAYA, "Porto"),
        ]
        assert values(await tree.facts("ana", "kin:maya:brother")) == ["Madrid"]

    async def test_entities_are_derived_from_every_leaf_with_aliases(self, tree: TreeStore) -> None:
        await write(tree, PORTO, BERLIN)
        keys = [e.key for e in await tree.entities("ana")]
        assert keys == sorted(keys) and {"anna", "berlin", "maya", "porto"} <= set(keys)
        anna = await tree.entity("ana", "maya's sister")
        assert anna is not None and anna.key == "anna" and "maya's sister" in anna.aliases
        maya = await tree.entity("ana", "Maya")
        assert maya is not None and maya.leaf_ids == ("l1", "l2")
        assert maya.first_seen == JAN and maya.last_seen == APR
        index = await tree.entity_index("ana")
        assert set(index.leaves) == {"l1", "l2"}

    async def test_a_leaf_written_again_replaces_what_it_said(self, tree: TreeStore) -> None:
        await write(tree, PORTO, BERLIN)
        await write(tree, BERLIN_FORGOTTEN)  # a forget of m2 rewrote l2 from m3
        [porto] = [f for f in await tree.facts("ana", MAYA) if f.attribute == "lives_in"]
        assert (porto.value, porto.valid_to, porto.superseded_by) == ("Porto", None, None)
        assert values(await tree.fact_history("ana", MAYA, "lives_in")) == ["Porto"]
        assert await tree.entity("ana", "Berlin") is None
        maya = await tree.entity("ana", "maya")
        assert maya is not None and maya.leaf_ids == ("l1", "l2")  # "I miss the sea"

    async def test_a_removed_leaf_takes_what_it_said_with_it(self, tree: TreeStore) -> None:
        await write(tree, PORTO, BERLIN)
        await write(tree, removed=(BERLIN,))
        assert values(await tree.facts("ana")) == ["Porto"]
        maya = await tree.entity("ana", "maya")
        assert maya is not None and maya.leaf_ids == ("l1",)
        await write(tree, removed=(PORTO,))
        assert await tree.facts("ana") == [] and await tree.entities("ana") == []

    async def test_a_replayed_commit_changes_nothing(self, tree: TreeStore) -> None:
        await write(tree, PORTO, BERLIN, MADRID)
        facts, entities = await tree.facts("ana"), await tree.entities("ana")
        history = await tree.fact_history("ana", MAYA, "lives_in")
        await write(tree, PORTO, BERLIN, MADRID)
        await write(tree, BERLIN)
        assert await tree.facts("ana") == facts
        assert await tree.entities("ana") == entities
        assert await tree.fact_history("ana", MAYA, "lives_in") == history

    async def test_a_commit_without_knowledge_leaves_it_alone(self, tree: TreeStore) -> None:
        await write(tree, PORTO)
        await tree.commit_user(UserCommit("ana", encode_state(initial_state("ana", "UTC"))))
        await tree.commit_user(
            UserCommit(
                "ana", encode_state(initial_state("ana", "UTC")), knowledge=KnowledgeChange()
            )
        )
        assert values(await tree.facts("ana")) == ["Porto"]

    async def test_users_are_apart_and_a_forget_takes_all_of_one(self, tree: TreeStore) -> None:
        for user in ("an*", "[a]na", "an"):
            await write(tree, leaf("l1", ("m1", "I live in Porto.", JAN), user=user), user=user)
        await write(tree, leaf("l2", ("m2", "I live in Oslo now.", APR), user="an"), user="an")
        assert values(await tree.facts("an*")) == ["Porto"]
        assert values(await tree.facts("an")) == ["Oslo"]
        await tree.forget("an*", Tombstone(1.0), ttl_s=None)
        await tree.delete_user("[a]na")
        for gone in ("an*", "[a]na"):
            assert await tree.facts(gone) == [] and await tree.entities(gone) == []
        assert values(await tree.facts("an")) == ["Oslo"]
        assert [e.key for e in await tree.entities("an")] == ["maya", "oslo", "porto"]

    async def test_a_refused_commit_writes_no_knowledge(self, tree: TreeStore) -> None:
        await tree.forget("ana", Tombstone(5.0), ttl_s=None)
        assert not await write(tree, PORTO, guard=Guard(None))  # planned before the forget
        assert await tree.facts("ana") == [] and await tree.entities("ana") == []
        assert await write(tree, PORTO, guard=Guard(Tombstone(5.0)))
        assert values(await tree.facts("ana")) == ["Porto"]

    # A reader may keep what it derives (RedisTree does, by revision): each test below reads
    # before every change, so a store that served what it kept after a change fails it.

    async def test_every_write_is_read_by_the_next_read(self, tree: TreeStore) -> None:
        await write(tree, PORTO)
        assert values(await tree.facts("ana", MAYA)) == ["Porto"]
        assert await tree.entity("ana", "Berlin") is None
        await write(tree, BERLIN)
        assert values(await tree.facts("ana", MAYA)) == ["Berlin"]
        assert values(await tree.fact_history("ana", MAYA, "lives_in")) == ["Porto", "Berlin"]
        berlin = await tree.entity("ana", "Berlin")
        assert berlin is not None and berlin.leaf_ids == ("l2",)
        await write(tree, BERLIN_FORGOTTEN)  # a message forget rewrites l2
        assert values(await tree.facts("ana", MAYA)) == ["Porto"]
        assert await tree.entity("ana", "Berlin") is None
        await write(tree, MADRID)
        assert "madrid" in {e.key for e in await tree.entities("ana")}

    async def test_a_leaf_gone_with_its_expired_messages_is_gone_from_the_next_read(
        self, tree: TreeStore
    ) -> None:
        await write(tree, PORTO, BERLIN)
        assert values(await tree.facts("ana", MAYA)) == ["Berlin"]
        assert (await tree.entity_index("ana")).leaves.keys() == {"l1", "l2"}
        await write(tree, removed=(BERLIN,))  # what an expiry of all of l2's messages commits
        assert values(await tree.facts("ana", MAYA)) == ["Porto"]
        assert (await tree.entity_index("ana")).leaves.keys() == {"l1"}

    async def test_a_forgotten_user_written_again_reads_only_what_came_after(
        self, tree: TreeStore
    ) -> None:
        await write(tree, PORTO)
        assert values(await tree.facts("ana")) == ["Porto"]
        assert await tree.entity("ana", "Porto") is not None
        await tree.forget("ana", Tombstone(1.0), ttl_s=None)
        # The same leaf id again, the first write after the forget as it was before it, and
        # no read between (which could notice the forget).
        oslo = leaf("l1", ("m9", "I live in Oslo.", APR))
        assert await write(tree, oslo, guard=Guard(Tombstone(1.0)))
        assert values(await tree.facts("ana")) == ["Oslo"]
        assert await tree.entity("ana", "Porto") is None
        assert await tree.entity("ana", "Oslo") is not None

    async def test_a_deleted_user_reads_as_nothing_at_once(self, tree: TreeStore) -> None:
        await write(tree, PORTO, BERLIN)
        assert await tree.facts("ana") and await tree.entities("ana")
        await tree.delete_user("ana")
        assert await tree.facts("ana") == [] and await tree.entities("ana") == []
        assert await tree.fact_history("ana", MAYA, "lives_in") == []

    async def test_facts_said_are_the_observations_said_before_an_instant(
        self, tree: TreeStore
    ) -> None:
        await write(tree, PORTO, BERLIN, MADRID)
        before_april = await tree.facts_said("ana", APR)
        said = [(f.value, f.valid_to, f.superseded_by) for f in before_april]
        # As said: no version derived, none closed ("my sister Anna" is said with Porto).
        assert sorted(said) == [("Anna", None, None), ("Porto", None, None)]
        everything = await tree.facts_said("ana", APR + timedelta(days=2))
        assert sorted(values(everything)) == ["Berlin", "Madrid", "Porto"]
        assert await tree.facts_said("other", APR + timedelta(days=2)) == []

    async def test_the_facts_of_a_slot_are_read_from_every_leaf_that_said_one(
        self, tree: TreeStore
    ) -> None:
        await write(tree, PORTO, BERLIN, MADRID)
        homes = await tree.slot_facts("ana", {(MAYA, "lives_in")}, ())
        assert {leaf: values(list(facts)) for leaf, facts in homes.items()} == {
            "l1": ["Porto"],
            "l2": ["Berlin"],
        }
        # A leaf named brings every slot it said, from whichever leaf said it too.
        porto = await tree.slot_facts("ana", (), {"l1"})
        assert set(porto) == {"l1", "l2"} and values(list(porto["l1"])) == ["Porto"]
        assert await tree.slot_facts("ana", {(MAYA, "works_at")}, ()) == {}
        assert await tree.slot_facts("other", {(MAYA, "lives_in")}, {"l1"}) == {}

    async def test_a_slots_facts_come_with_its_subjects_endings_and_an_ending_with_them_all(
        self, tree: TreeStore
    ) -> None:
        team = leaf("l4", ("m5", "I play for the Magpies on Sundays.", JAN))
        left = leaf("l5", ("m6", "I've left the Magpies.", APR))
        await write(tree, PORTO, BERLIN, MADRID, team, left)
        # A slot's facts with the endings of its subject, which may close one of them.
        homes = await tree.slot_facts("ana", {(MAYA, "lives_in")}, ())
        assert set(homes) == {"l1", "l2", "l5"}
        assert [f.attribute for f in homes["l5"]] == [ENDED]
        # An ending asked, or said by a leaf named, brings every fact of its subject.
        ending_asked = await tree.slot_facts("ana", {(MAYA, ENDED)}, ())
        assert ending_asked == await tree.slot_facts("ana", (), {"l5"})
        subjects = {f.subject for facts in ending_asked.values() for f in facts}
        assert subjects == {MAYA} and {"l1", "l2", "l4", "l5"} <= set(ending_asked)
        assert {f.attribute for f in ending_asked["l4"]} == {"team"}

    async def test_an_ending_closes_what_it_names_until_it_is_forgotten(
        self, tree: TreeStore
    ) -> None:
        team = leaf("l1", ("m1", "I play for the Magpies on Sundays.", JAN))
        left = leaf("l2", ("m2", "I've left the Magpies.", APR), ("m3", "I miss the sea.", APR))
        await write(tree, left)
        await write(tree, team)  # the value arrives after its ending and is closed all the same
        assert [f.attribute for f in await tree.facts("ana", MAYA)] == []
        played, ended = await tree.fact_history("ana", MAYA, "team")
        assert (played.valid_to, played.superseded_by) == (APR, ended.fact_id)
        assert ended.negated and ended.source_ids == ("m2",)
        await write(tree, team, left)  # a replay changes nothing
        assert await tree.fact_history("ana", MAYA, "team") == [played, ended]
        await write(tree, replace(leaf("l2", ("m3", "I miss the sea.", APR)), version=2))
        [again] = await tree.fact_history("ana", MAYA, "team")
        assert (again.value, again.valid_to, again.superseded_by) == ("the Magpies", None, None)
