"""L2-L5 text without a model: disclosed facts, attributed, dated, with their sources."""

import re
from datetime import UTC, datetime, timedelta

import pytest

from memstream.domain.models import Fact, Level, MemoryNode, Role, SourceMessage, Window
from memstream.domain.summary_text import (
    DATED_BUDGET,
    LEVEL_BUDGETS,
    consolidate_summary,
    dated_excerpt,
    is_fact,
    topic_of,
)
from memstream.domain.tokens import count_tokens

MAY_8 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def leaf(
    speaker: str, text: str, n: int, start: datetime = MAY_8, role: Role = "user"
) -> MemoryNode:
    at = start + timedelta(minutes=n)
    return MemoryNode(
        id=f"L1-{n}",
        user_id="u1",
        level=Level.SEGMENT,
        t_start=at,
        t_end=at,
        text=f'{speaker}: "{text}"',
        source_ids=(f"m{n}",),
        messages=(SourceMessage(f"m{n}", speaker, role, text, at),),
    )


def summary(level: Level, start: datetime, facts: list[Fact], id_: str) -> MemoryNode:
    return MemoryNode(
        id=id_,
        user_id="u1",
        level=level,
        t_start=start,
        t_end=start + timedelta(days=1),
        text=" ".join(f.text for f in facts),
        source_ids=tuple(s for f in facts for s in f.source_ids),
        facts=tuple(facts),
    )


def window(level: Level, start: datetime, days: int) -> Window:
    return Window(user_id="u1", level=level, start=start, end=start + timedelta(days=days))


CHAT = [
    ("Caroline", "Hey Mel! Good to see you! How have you been?"),
    ("Melanie", "Hi! I'm great, thanks for asking."),
    ("Caroline", "I went to a support group for trans people yesterday and it changed my week."),
    ("Melanie", "Wow, that's amazing! I'm so proud of you."),
    ("Melanie", "I took my kids to the Pacific Science Center on Saturday."),
    ("Caroline", "Thanks so much, you're the best!"),
    ("Caroline", "I'm starting a counseling course in September."),
    ("Melanie", "I started pottery classes last month."),
    ("Caroline", "Bye! Talk soon, take care."),
]


def chat_leaves() -> list[MemoryNode]:
    return [leaf(speaker, text, n) for n, (speaker, text) in enumerate(CHAT)]


def test_facts_are_told_things_not_greetings_thanks_praise_or_questions() -> None:
    told = [t for _, t in CHAT if is_fact(t)]
    assert told == [
        "I went to a support group for trans people yesterday and it changed my week.",
        "I took my kids to the Pacific Science Center on Saturday.",
        "I'm starting a counseling course in September.",
        "I started pottery classes last month.",
    ]
    assert not is_fact("Music brings us together and brings joy.")
    assert is_fact("You met Jon in Paris in 2019.")  # to the listener, but concrete


def test_session_summary_quotes_facts_with_their_message_ids() -> None:
    result = consolidate_summary(Level.SESSION, window(Level.SESSION, MAY_8, 1), chat_leaves(), [])
    assert result.text.startswith('Session on 8 May 2023 (Mon): Caroline: "I went to a support')
    for chatter in ("Hey Mel", "thanks", "proud of you", "Bye", "How have you been"):
        assert chatter not in result.text
    assert [f.source_ids for f in result.facts] == [("m2",), ("m4",), ("m6",), ("m7",)]
    for fact in result.facts:
        assert fact.text in result.text
    assert count_tokens(result.text) <= LEVEL_BUDGETS[Level.SESSION]


def test_an_assistants_words_are_not_facts_of_the_user() -> None:
    leaves = [
        leaf("Kenji", "I want to fix my sleep before the marathon in June.", 0),
        leaf("Mira", "I'm here to help you with that, I remember everything.", 1, role="assistant"),
    ]
    result = consolidate_summary(Level.SESSION, window(Level.SESSION, MAY_8, 1), leaves, [])
    assert [f.source_ids for f in result.facts] == [("m0",)]


def test_near_duplicates_across_children_merge_their_sources() -> None:
    text = 'Melanie: "I started pottery classes last month."'
    first = summary(Level.DAY, MAY_8, [Fact(text, ("m1",), MAY_8)], "d1")
    again = summary(Level.DAY, MAY_8 + timedelta(days=2), [Fact(text, ("m9",), MAY_8)], "d2")
    monday = datetime(2023, 5, 8, tzinfo=UTC)
    result = consolidate_summary(Level.WEEK, window(Level.WEEK, monday, 7), [first, again], [])
    resolved = f"{text} (last month: April 2023)"
    assert result.facts == (Fact(resolved, ("m1", "m9"), MAY_8),)


def test_week_labels_each_day() -> None:
    monday = datetime(2023, 5, 8, tzinfo=UTC)
    wed = monday + timedelta(days=2)
    days = [
        summary(
            Level.DAY, monday, [Fact('Mel: "I started a pottery class."', ("a",), monday)], "1"
        ),
        summary(Level.DAY, wed, [Fact('Mel: "I made a bowl in class."', ("b",), wed)], "2"),
    ]
    text = consolidate_summary(Level.WEEK, window(Level.WEEK, monday, 7), days, []).text
    assert text == (
        'Week of 8 May 2023: 8 May (Mon): Mel: "I started a pottery class." '
        '10 May (Wed): Mel: "I made a bowl in class."'
    )


def test_profile_groups_by_person_and_topic_carries_facts_and_marks_new_ones() -> None:
    april = datetime(2023, 4, 3, tzinfo=UTC)
    previous = summary(
        Level.MONTH,
        datetime(2023, 4, 1, tzinfo=UTC),
        [Fact('Caroline: "I love hiking in the Rockies."', ("old1",), april)],
        "april",
    )
    may = datetime(2023, 5, 1, tzinfo=UTC)
    week = summary(
        Level.WEEK,
        MAY_8,
        [
            Fact('Melanie: "I started pottery classes last month."', ("m7",), MAY_8),
            Fact('Caroline: "I\'m starting a counseling course in September."', ("m6",), MAY_8),
        ],
        "week",
    )
    result = consolidate_summary(Level.MONTH, window(Level.MONTH, may, 31), [week], [previous])
    lines = result.text.split("\n")
    assert lines[0] == "Profile as of May 2023 (+ new this month):"
    assert lines[1:] == [
        '- Caroline, plans: "I\'m starting a counseling course in September." (+8 May 2023)',
        '- Caroline, likes: "I love hiking in the Rockies." (3 April 2023)',
        '- Melanie, activities: "I started pottery classes last month." '
        "(last month: April 2023) (+8 May 2023)",
    ]
    assert {s for f in result.facts for s in f.source_ids} == {"old1", "m6", "m7"}


def test_topics_follow_the_words_used() -> None:
    assert topic_of("My sister moved in with us.") == "people"
    assert topic_of("I work as a nurse.") == "who"
    assert topic_of("The weather was odd.") == "other"


def test_a_window_with_nothing_disclosed_says_so() -> None:
    hello = [leaf("Ana", "Hi! Good morning!", 0)]
    text = consolidate_summary(Level.SESSION, window(Level.SESSION, MAY_8, 1), hello, []).text
    assert text == "Session on 8 May 2023 (Mon): Nothing was disclosed."


def test_segments_are_not_consolidated() -> None:
    with pytest.raises(ValueError, match="L1"):
        consolidate_summary(Level.SEGMENT, window(Level.SEGMENT, MAY_8, 1), [], [])


def test_next_months_profile_reads_this_months_bullets_back() -> None:
    may = datetime(2023, 5, 1, tzinfo=UTC)
    week = summary(
        Level.WEEK, MAY_8, [Fact('Caroline: "I love hiking in the Rockies."', ("m1",), MAY_8)], "w"
    )
    first = consolidate_summary(Level.MONTH, window(Level.MONTH, may, 31), [week], [])
    previous = summary(Level.MONTH, may, list(first.facts), "may")
    june = datetime(2023, 6, 1, tzinfo=UTC)
    later = summary(
        Level.WEEK,
        datetime(2023, 6, 5, tzinfo=UTC),
        [
            Fact(
                'Melanie: "I adopted a dog named Oscar."',
                ("m2",),
                datetime(2023, 6, 5, tzinfo=UTC),
            )
        ],
        "w2",
    )
    second = consolidate_summary(Level.MONTH, window(Level.MONTH, june, 30), [later], [previous])
    assert second.text.split("\n")[1:] == [
        '- Caroline, likes: "I love hiking in the Rockies." (8 May 2023)',
        '- Melanie, people: "I adopted a dog named Oscar." (+5 June 2023)',
    ]


def test_a_fact_carries_the_dates_its_relative_times_name() -> None:
    result = consolidate_summary(Level.SESSION, window(Level.SESSION, MAY_8, 1), chat_leaves(), [])
    group = next(f for f in result.facts if f.source_ids == ("m2",))
    assert group.text == (
        'Caroline: "I went to a support group for trans people yesterday and it changed my'
        ' week." (yesterday: 7 May 2023)'
    )
    assert group.text in result.text


def test_a_day_reads_a_sessions_dated_fact_back_and_dates_it_again() -> None:
    session = consolidate_summary(Level.SESSION, window(Level.SESSION, MAY_8, 1), chat_leaves(), [])
    node = summary(Level.SESSION, MAY_8, list(session.facts), "s1")
    day = consolidate_summary(Level.DAY, window(Level.DAY, MAY_8, 1), [node], [])
    dated = [f.text for f in day.facts if "(yesterday: 7 May 2023)" in f.text]
    assert len(dated) == 1 and dated[0].count("(yesterday") == 1


DATED_NEWS = [
    "My sister Lena moved to Berlin last week for her new nursing job at the clinic.",
    "I ran the Lisbon half marathon last Sunday in under two hours with my coach.",
    "We adopted a grey kitten called Miso from the animal shelter yesterday afternoon.",
    "My grandfather Tomas turned ninety last month and we threw him a surprise party.",
    "I started learning Portuguese with an online tutor from Recife two weeks ago.",
    "Our band played its first gig at the Blue Note bar last Saturday night downtown.",
    "I finally fixed the leaking roof of the old garden shed last weekend by myself.",
    "My boss Clara promoted me to team lead of the data group three days ago.",
]


def test_dated_facts_the_budget_leaves_out_come_as_excerpts_beyond_it() -> None:
    leaves = [leaf("Ana", text, n) for n, text in enumerate(DATED_NEWS)]
    result = consolidate_summary(Level.SESSION, window(Level.SESSION, MAY_8, 1), leaves, [])
    told = {f: DATED_NEWS[int(f.source_ids[0][1:])] for f in result.facts}
    whole = [f for f in result.facts if told[f] in f.text]
    cut = [f for f in result.facts if told[f] not in f.text]
    assert whole and cut
    header = count_tokens("Session on 8 May 2023 (Mon):")
    assert header + sum(count_tokens(f.text) for f in whole) <= LEVEL_BUDGETS[Level.SESSION]
    assert sum(count_tokens(f.text) for f in cut) <= DATED_BUDGET
    for fact in cut:  # the words around the relative time, then its date
        said = re.fullmatch(
            r'Ana: "(?:\.\.\.)?([^"]+?)(?:\.\.\.)?" \([^():]+: [^():]+ 2023\)', fact.text
        )
        assert said is not None and said[1] in told[fact]
        assert fact.text in result.text
    # No message is told twice.
    sources = [s for f in result.facts for s in f.source_ids]
    assert len(sources) == len(set(sources))


def test_an_excerpt_keeps_the_words_around_the_dates_and_the_dates() -> None:
    text = (
        'Mia: "Big news from the team is that we finally shipped the app last week and'
        ' everyone celebrated with pizza at the office." (last week: the week before 8 May 2023)'
    )
    assert dated_excerpt(text) == (
        'Mia: "...that we finally shipped the app last week and everyone celebrated..."'
        " (last week: the week before 8 May 2023)"
    )
    bullet = 'Mia, plans: "I move next month." (next month: June 2023) (+8 May 2023)'
    assert dated_excerpt(bullet) == 'Mia: "I move next month." (next month: June 2023)'
    assert dated_excerpt('Mia: "I work in Oslo."') is None
