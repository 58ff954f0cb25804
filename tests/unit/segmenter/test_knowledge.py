"""Facts and entities written online by the segmenter over the fakes: committed with the
L1s that say them, replayed to the same thing, and gone with their messages or their user."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from tests.unit.segmenter.test_forget_messages import NOW, TOPICS, USER, Rig, rig, turn

from memstream.domain.derivation import Derivation
from memstream.domain.facts import AtomicFact, FactReading, make_fact
from memstream.domain.forgetting import Tombstone
from memstream.domain.ids import segment_id
from memstream.domain.models import ForgetRequested, MemoryNode, SessionEnded, Turn
from memstream.ports import UserCommit

ANA = "speaker:ana"
DAYS_90 = 90 * 24 * 60  # minutes


def said(event_id: str, minute: int, text: str, session: str) -> list[Turn]:
    """Ana says `text`; the bot answers: one L1."""
    return [
        turn(event_id, minute, "user", text, session),
        turn(f"{event_id}-re", minute + 1, "assistant", "Tell me more about it.", session),
    ]


PORTO = said("porto", 0, "We live in Porto, near the river.", "s1")
BERLIN = said("berlin", DAYS_90, "Big news: we moved to Berlin last month!", "s2")
BROTHER = said("brother", DAYS_90 + 5, "My brother moved to Madrid. My brother Leo loves it.", "s2")


def ended(session: str, last: Turn) -> SessionEnded:
    return SessionEnded(USER, session, last.ts + timedelta(minutes=1))


async def built() -> Rig:
    r = rig()
    await r.send(*PORTO, ended("s1", PORTO[-1]))
    await r.send(*BERLIN, *BROTHER, ended("s2", BROTHER[-1]))
    return r


async def lives_in(r: Rig) -> list[AtomicFact]:
    """Where Ana lives, as the store has it now (her messages also name her brother Leo)."""
    return [f for f in await r.tree.facts(USER, ANA) if f.attribute == "lives_in"]


async def test_a_changed_fact_supersedes_the_old_one_with_its_history() -> None:
    r = await built()
    [now] = await lives_in(r)
    assert (now.value, now.source_ids) == ("Berlin", ("berlin",))
    assert ("brother", "Leo") in {(f.attribute, f.value) for f in await r.tree.facts(USER, ANA)}
    porto, berlin = await r.tree.fact_history(USER, ANA, "lives_in")
    assert porto.value == "Porto" and porto.superseded_by == berlin.fact_id
    # "Last month", said on 4 August: it began on 1 July, whenever it was said.
    assert porto.valid_to == berlin.valid_from == datetime(2024, 7, 1, tzinfo=UTC)
    assert [f.value for f in await r.tree.facts(USER, "kin:ana:brother")] == ["Madrid"]
    leo = await r.tree.entity(USER, "Leo")
    assert leo is not None and "ana's brother" in leo.aliases
    assert leo.leaf_ids == (segment_id(USER, ["brother", "brother-re"]),)


async def test_the_knowledge_goes_in_the_commit_of_the_l1s_that_say_it() -> None:
    r = rig()
    commits: list[UserCommit] = []
    commit_user = r.tree.commit_user

    async def recorded(commit: UserCommit) -> bool:
        commits.append(commit)
        return await commit_user(commit)

    r.tree.commit_user = recorded  # type: ignore[method-assign]
    await r.send(*PORTO, *BERLIN, ended("s2", BERLIN[-1]))
    [commit] = commits
    assert set(commit.knowledge.leaves) == {n.id for n in commit.nodes}
    facts = [f for k in commit.knowledge.leaves.values() for f in k.facts]
    assert sorted(f.value for f in facts) == ["Berlin", "Porto"]


async def test_forgetting_the_newer_message_makes_the_older_value_current_again() -> None:
    r = await built()
    await r.send(ForgetRequested(USER, ("berlin",)))
    [porto] = await lives_in(r)
    assert (porto.value, porto.valid_to, porto.superseded_by) == ("Porto", None, None)
    assert [f.value for f in await r.tree.fact_history(USER, ANA, "lives_in")] == ["Porto"]
    assert await r.tree.entity(USER, "Berlin") is None
    assert [f.value for f in await r.tree.facts(USER, "kin:ana:brother")] == ["Madrid"]


async def test_a_batch_replayed_after_a_failed_commit_writes_the_same_knowledge() -> None:
    clean = await built()
    r = rig()
    commit_user = r.tree.commit_user
    failures = [ConnectionError("Redis went away")]

    async def failing_once(commit: UserCommit) -> bool:
        if failures:
            raise failures.pop()
        return await commit_user(commit)

    r.tree.commit_user = failing_once  # type: ignore[method-assign]
    with pytest.raises(ConnectionError):
        await r.send(*PORTO, ended("s1", PORTO[-1]))
    await r.send(*PORTO, ended("s1", PORTO[-1]))  # the same records again, as after a crash
    await r.send(*BERLIN, *BROTHER, ended("s2", BROTHER[-1]))
    await r.send(*BERLIN, *BROTHER, ended("s2", BROTHER[-1]))  # and again: all duplicates
    assert r.tree.leaf_facts[USER] == clean.tree.leaf_facts[USER]
    assert r.tree.leaf_entities[USER] == clean.tree.leaf_entities[USER]
    assert await r.tree.facts(USER) == await clean.tree.facts(USER)


async def test_forgetting_the_user_forgets_its_knowledge() -> None:
    r = await built()
    await r.tree.forget(USER, Tombstone(NOW.timestamp()), ttl_s=None)
    assert await r.tree.facts(USER) == [] and await r.tree.entities(USER) == []


async def test_with_the_knowledge_write_off_nothing_is_extracted() -> None:
    r = rig(knowledge=False)
    await r.send(*PORTO, ended("s1", PORTO[-1]))
    await r.send(*BERLIN, *BROTHER, ended("s2", BROTHER[-1]))
    assert await r.tree.facts(USER) == []
    assert await r.tree.entities(USER) == []


async def test_with_the_knowledge_write_off_a_forget_still_clears_what_was_written() -> None:
    r = await built()
    r.segmenter._knowledge = False  # the write turned off after an earlier run wrote
    await r.send(ForgetRequested(USER, ("berlin",)))
    [porto] = await lives_in(r)
    assert (porto.value, porto.valid_to) == ("Porto", None)
    assert await r.tree.entity(USER, "Berlin") is None


class JazzReader:
    """A `FactReader` as the LLM backend is one: says every L1's user liked jazz."""

    def __init__(self, extraction: str = "llm-facts-1") -> None:
        self.read: list[str] = []
        self.extraction = extraction  # what it says read the facts: the rules, when it fell back

    async def read_facts(self, leaf: MemoryNode) -> FactReading:
        self.read.append(leaf.id)
        first = leaf.messages[0]
        facts = (
            make_fact(
                user_id=leaf.user_id,
                subject=ANA,
                subject_name="Ana",
                attribute="likes",
                value="jazz",
                text="Ana likes jazz",
                valid_from=first.ts,
                recorded_at=first.ts,
                source_ids=(first.event_id,),
            ),
        )
        return FactReading(facts, self.extraction)


async def test_with_a_fact_reader_the_l1s_facts_are_its_and_a_rewrite_reads_again() -> None:
    r = rig()
    reader = JazzReader()
    r.segmenter._facts = reader  # as the composition root gives the LLM backend
    await r.send(*PORTO, ended("s1", PORTO[-1]))
    await r.send(*BERLIN, ended("s2", BERLIN[-1]))
    porto, berlin = (segment_id(USER, [t.event_id for t in ts]) for ts in (PORTO, BERLIN))
    assert reader.read == [porto, berlin]
    [jazz] = await r.tree.facts(USER)  # the reader's facts, not the rules' Porto and Berlin
    assert (jazz.value, jazz.source_ids) == ("jazz", ("porto", "berlin"))
    assert await r.tree.entity(USER, "Berlin") is not None  # entities are still the index's
    await r.send(ForgetRequested(USER, ("porto",)))
    assert reader.read[-1] == porto  # written again from "porto-re": read again
    [jazz] = await r.tree.facts(USER)
    assert jazz.source_ids == ("porto-re", "berlin")


@pytest.mark.parametrize("answered", ["llm-facts-1", "rules-1"])
async def test_an_l1_records_what_actually_read_its_facts(answered: str) -> None:
    """The deployment names the model's facts prompt; when the model failed and the rules
    answered instead, the L1 (stored and on the change feed) says the rules read it, so a
    rebuild with the model back reads it again."""
    r = rig()
    r.segmenter._facts = JazzReader(extraction=answered)
    r.segmenter._derivation = Derivation(
        backend="openai", model="m", prompt_version="p", embedder="e", extraction="llm-facts-1"
    )
    await r.send(*PORTO, ended("s1", PORTO[-1]))
    porto = segment_id(USER, [t.event_id for t in PORTO])
    stored = await r.tree.get(USER, porto)
    assert stored is not None and stored.node.derivation is not None
    assert stored.node.derivation.extraction == answered
    events = [o.value for o in r.publisher.sent if o.topic == TOPICS.memories]
    [written] = [e for e in events if e.get("id") == porto]
    assert written["derivation"]["extraction"] == answered
