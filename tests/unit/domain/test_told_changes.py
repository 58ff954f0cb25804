"""Changes told in words: which statements tell one, what they close, where "before" lies."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memstream.domain.facts import AtomicFact, make_fact, speaker_key
from memstream.domain.models import Level, MemoryNode, Role, SourceMessage
from memstream.domain.query import parse_query
from memstream.domain.ranking import RecalledMemory
from memstream.domain.tokens import count_tokens
from memstream.domain.told_changes import (
    asked_names,
    before_instant,
    closed_by_told_change,
    said_by_named,
    said_just_before,
    tells_change,
    told_change,
)
from memstream.domain.validity import Validity

MAR = datetime(2023, 3, 1, 18, 0, tzinfo=UTC)
SEP = datetime(2023, 9, 1, 18, 0, tzinfo=UTC)
NOW = datetime(2024, 1, 1, tzinfo=UTC)
SAM = frozenset({"sam"})
JUST_BEFORE = timedelta(microseconds=1)


def said(text: str, speaker: str = "Sam", role: Role = "user") -> SourceMessage:
    return SourceMessage(f"m-{abs(hash(text))}", speaker, role, text, MAR)


def memory(
    node_id: str, when: datetime, *messages: SourceMessage, session: str | None = None
) -> RecalledMemory:
    node = MemoryNode(
        id=node_id,
        user_id="u1",
        level=Level.SEGMENT,
        t_start=when,
        t_end=when + timedelta(minutes=2),
        text=" ".join(f"{m.speaker}: {m.text}" for m in messages),
        session_id=session or node_id,
        messages=messages,
    )
    return RecalledMemory(node, 0.5)


HAWKS = memory("hawks", MAR, said("Our Sunday side, the Harbour Hawks, lost again."))
KITES = memory(
    "kites", SEP, said("Preseason kicked off and I joined the Coastal Kites."), session="s-sep"
)
DRILLS = memory(
    "drills",
    SEP + timedelta(minutes=5),
    said("Coastal Kites drills are brutal, honestly."),
    session="s-sep",
)


def test_a_statement_of_the_person_asked_with_a_change_word_tells_a_change() -> None:
    assert tells_change(said("Preseason started. First training with the Kites."), SAM)
    assert tells_change(said("Ellie quit keto, by the way.", speaker="Tom"), frozenset({"ellie"}))


def test_a_question_a_plan_or_someone_else_tells_no_change() -> None:
    assert not tells_change(said("You switched clubs?"), SAM)
    assert not tells_change(said("I'm thinking about adopting a cat."), SAM)
    assert not tells_change(said("We moved the sofa.", speaker="Ana"), SAM)
    assert not tells_change(said("Lost again on Sunday."), SAM)


def test_a_change_verb_denied_or_done_by_someone_else_tells_none_of_the_speakers() -> None:
    assert not tells_change(said("EQ pays four percent and I'm not moving it again."), SAM)
    assert not tells_change(said("I never switched."), SAM)
    assert not tells_change(said("She replaced the whole oven before Christmas."), SAM)
    assert not tells_change(said("They moved the meeting to Friday."), SAM)


def test_the_speakers_own_change_still_counts_beside_a_denial_or_another_person() -> None:
    assert tells_change(said("I'm not vegetarian anymore."), SAM)
    assert tells_change(said("He stayed, but I moved to Leeds."), SAM)
    assert tells_change(said("Moved to Leeds last week, not looking back."), SAM)
    assert tells_change(said("I didn't think I'd say it but I quit the band."), SAM)
    # Named in the sentence, the person asked is the one the change is about.
    assert tells_change(said("She says Sam switched clubs.", speaker="Ana"), SAM)


def test_with_no_name_asked_the_users_own_statements_count() -> None:
    assert tells_change(said("I moved to Leeds."), frozenset())
    assert not tells_change(said("I moved to Leeds.", "Bot", "assistant"), frozenset())


def test_the_names_asked_are_the_capitalised_words_that_are_no_function_words() -> None:
    assert asked_names(parse_query("Which pet does Aiko's niece Hana look after?")) == {
        "aiko",
        "hana",
    }
    assert asked_names(parse_query("Is Ellie still on a diet?")) == {"ellie"}


def test_what_was_said_before_the_newest_told_change_holds_until_it() -> None:
    closed = {
        m.node.id: m.validity for m in closed_by_told_change([DRILLS, KITES, HAWKS], SAM, NOW)
    }
    assert closed == {"drills": None, "kites": None, "hawks": Validity(None, SEP, None, "inferred")}


def test_a_told_change_leaves_the_earlier_lines_of_its_own_session_open() -> None:
    # The new club is named a line before the line with the change word.
    named = memory("named", SEP, said("Guess who plays for the Coastal Kites now?"), session="s")
    told = memory(
        "told", SEP + timedelta(minutes=5), said("The Hawks stopped training."), session="s"
    )
    closed = {m.node.id: m.validity for m in closed_by_told_change([told, named, HAWKS], SAM, NOW)}
    assert closed == {"told": None, "named": None, "hawks": Validity(None, SEP, None, "inferred")}


def test_a_told_change_after_the_asked_instant_closes_nothing() -> None:
    memories = [KITES, HAWKS]
    assert told_change(memories, SAM, MAR + timedelta(days=1)) is None
    assert closed_by_told_change(memories, SAM, MAR + timedelta(days=1)) == memories


def test_a_validity_read_from_facts_is_kept() -> None:
    dated = RecalledMemory(HAWKS.node, 0.5, validity=Validity(MAR, None, None))
    assert closed_by_told_change([KITES, dated], SAM, NOW)[1].validity == Validity(MAR, None, None)


def test_before_what_the_question_names_is_before_the_session_first_naming_it() -> None:
    query = parse_query("Which team did Sam play for before the Kites?")
    # DRILLS names "Kites" too; the change lies before the first session naming them.
    assert before_instant(query, (), [DRILLS, HAWKS, KITES], SAM, NOW) == SEP - JUST_BEFORE


def test_a_fact_naming_it_earlier_than_any_memory_wins() -> None:
    kites_fact = _member_of("Coastal Kites", SEP - timedelta(days=30))
    query = parse_query("Which team did Sam play for before the Coastal Kites?")
    instant = before_instant(query, (kites_fact,), [DRILLS, HAWKS], SAM, NOW)
    assert instant == SEP - timedelta(days=30) - JUST_BEFORE


def test_with_nothing_named_before_the_newest_told_change() -> None:
    query = parse_query("Which team did Sam play for before?")
    assert before_instant(query, (), [DRILLS, HAWKS, KITES], SAM, NOW) == SEP - JUST_BEFORE
    assert before_instant(query, (), [HAWKS], SAM, NOW) is None


def _member_of(club: str, when: datetime) -> AtomicFact:
    return make_fact(
        user_id="u1",
        subject=speaker_key("Sam"),
        subject_name="Sam",
        attribute="member_of",
        value=club,
        text=f"Sam is a member of {club}",
        valid_from=when,
        recorded_at=when,
        source_ids=("m-club",),
    )


def test_the_leaves_said_just_before_a_change_take_the_place_of_the_weakest_after_it() -> None:
    hamster = memory("hamster", MAR - timedelta(days=9), said("Mochi stole my cucumber again."))
    told = memory("told", MAR, said("A cat from the shelter moved in."), session="s-told")
    talk = memory("talk", MAR + timedelta(minutes=5), said("She hides all day."), session="s-told")
    weak = RecalledMemory(memory("weak", SEP, said("Cats sleep a lot.")).node, 0.1)
    instant = MAR - JUST_BEFORE
    # The room left and the weakest leaf after the change make just enough for the hamster.
    room = count_tokens(hamster.node.text) - count_tokens(weak.node.text)
    kept, added = said_just_before([told, weak], [hamster.node, talk.node], instant, room)
    assert [m.node.id for m in kept] == ["told", "hamster"]
    assert added == room


def test_a_leaf_of_the_session_telling_the_change_is_not_what_it_replaced() -> None:
    opening = memory("opening", MAR - timedelta(minutes=5), said("Hi."), session="s-told")
    told = memory("told", MAR, said("A cat from the shelter moved in."), session="s-told")
    kept, added = said_just_before([told], [opening.node], MAR - JUST_BEFORE, room=500)
    assert (kept, added) == ([told], 0)


def test_without_displacing_the_leaves_said_before_join_only_in_the_room_left() -> None:
    hamster = memory("hamster", MAR - timedelta(days=9), said("Mochi stole my cucumber again."))
    weak = RecalledMemory(memory("weak", SEP, said("Cats sleep a lot.")).node, 0.1)
    room = count_tokens(hamster.node.text) - 1  # one token short: displacing would make room
    kept, added = said_just_before([weak], [hamster.node], MAR, room, displace=False)
    assert (kept, added) == ([weak], 0)
    kept, added = said_just_before([weak], [hamster.node], MAR, room + 1, displace=False)
    assert [m.node.id for m in kept] == ["weak", "hamster"]
    assert added == room + 1


def test_a_node_is_said_by_someone_named_or_with_no_name_by_the_user() -> None:
    node = memory("n", MAR, said("Hi."), said("Hello!", "Bot", "assistant")).node
    assert said_by_named(node, SAM)
    assert not said_by_named(node, frozenset({"ana"}))
    assert said_by_named(node, frozenset())
    assert not said_by_named(memory("b", MAR, said("Hello!", "Bot", "assistant")).node, frozenset())


def test_a_hyphenated_name_is_asked_by_its_parts() -> None:
    names = asked_names(parse_query("Who is Mei-Ling's manager now?"))
    assert names == {"mei", "ling"}
    assert said_by_named(memory("n", MAR, said("Hi.", speaker="Mei-Ling")).node, names)
    assert not said_by_named(memory("n", MAR, said("Hi.", speaker="Ling-Ya")).node, names)
    assert tells_change(said("Mei-Ling's team moved to Taipei.", speaker="Jun"), names)
