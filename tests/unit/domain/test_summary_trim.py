"""Summaries returned beside leaves: trimmed of what the leaves say and of what the query
does not ask, on hand-written nodes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from memstream.domain.models import Fact, Level, MemoryNode
from memstream.domain.query import parse_query
from memstream.domain.ranking import RecalledMemory, leaf_spend
from memstream.domain.summary_trim import fit_without_repeats, trim_summary
from memstream.domain.tokens import count_tokens

T0 = datetime(2023, 5, 8, 18, 0, tzinfo=UTC)
GROUP = Fact('Caroline: "I went to a support group yesterday."', ("D1:3",), T0)
PAINT = Fact('Melanie: "I painted a lake sunrise last year."', ("D1:8",), T0)
RACE = Fact('Melanie: "I ran a charity race for mental health on Saturday."', ("D2:1",), T0)


def summary(level: Level, text: str, *facts: Fact, node_id: str = "s") -> MemoryNode:
    return MemoryNode(
        id=node_id,
        user_id="u",
        level=level,
        t_start=T0,
        t_end=T0 + timedelta(hours=1),
        text=text,
        speakers=("Caroline", "Melanie"),
        facts=facts,
    )


def leaf(node_id: str, source: str, text: str) -> MemoryNode:
    return MemoryNode(
        id=node_id,
        user_id="u",
        level=Level.SEGMENT,
        t_start=T0,
        t_end=T0,
        text=text,
        parent_id="s",
        source_ids=(source,),
        speakers=(text.split(",")[1].split(":")[0].strip(),),
    )


SESSION = summary(
    Level.SESSION,
    f"Session on 8 May 2023 (Mon): {GROUP.text} {PAINT.text}",
    GROUP,
    PAINT,
)


def test_a_fact_a_returned_leaf_holds_is_taken_out() -> None:
    trimmed = trim_summary(SESSION, {"D1:3"})
    assert trimmed is not None
    assert trimmed.text == f"Session on 8 May 2023 (Mon): {PAINT.text}"
    assert trimmed.facts == (PAINT,)
    assert trim_summary(SESSION, {"D1:3", "D1:8"}) is None  # nothing of its own left
    assert trim_summary(SESSION, set()) is SESSION


def test_a_weeks_day_label_goes_with_its_last_fact() -> None:
    week = summary(
        Level.WEEK,
        f"Week of 8 May 2023: 8 May (Mon): {GROUP.text} 13 May (Sat): {RACE.text}",
        GROUP,
        RACE,
    )
    first = trim_summary(week, {"D1:3"})
    assert first is not None and first.text == f"Week of 8 May 2023: 13 May (Sat): {RACE.text}"
    last = trim_summary(week, {"D2:1"})
    assert last is not None and last.text == f"Week of 8 May 2023: 8 May (Mon): {GROUP.text}"


def test_a_profile_loses_the_bullet_not_its_neighbours() -> None:
    line_a = Fact('Caroline, people: "I went to a support group." (+8 May 2023)', ("D1:3",))
    line_b = Fact('Melanie, activities: "I painted a lake sunrise." (8 May 2023)', ("D1:8",))
    profile = summary(
        Level.MONTH, f"Profile as of May 2023:\n- {line_a.text}\n- {line_b.text}", line_a, line_b
    )
    trimmed = trim_summary(profile, {"D1:3"})
    assert trimmed is not None and trimmed.text == f"Profile as of May 2023:\n- {line_b.text}"


def test_nodes_without_facts_or_not_written_from_them_come_back_whole() -> None:
    bare = summary(Level.SESSION, "Session on 8 May 2023 (Mon): they talked.")
    assert trim_summary(bare, {"D1:3"}) is bare
    rewritten = summary(Level.SESSION, "Session on 8 May 2023 (Mon): something else.", GROUP)
    assert trim_summary(rewritten, {"D1:3"}) is rewritten


def test_only_facts_sharing_a_term_with_the_query_stay_names_aside() -> None:
    focused = trim_summary(SESSION, set(), frozenset({"paint"}))
    assert focused is not None and focused.facts == (PAINT,)
    # No term to go by: nothing is dropped for relevance.
    assert trim_summary(SESSION, set(), frozenset()) is SESSION


def test_fitting_trims_summaries_of_what_the_leaves_and_lower_summaries_say() -> None:
    group_leaf = leaf("l1", "D1:3", '8 May 2023, Caroline: "I went to a support group yesterday."')
    day = summary(
        Level.DAY, f"Day of 8 May 2023 (Mon): {PAINT.text} {RACE.text}", PAINT, RACE, node_id="d"
    )
    memories = [
        RecalledMemory(group_leaf, 0.9),
        RecalledMemory(SESSION, 0.9),
        RecalledMemory(day, 0.9),
    ]
    fitted, tokens = fit_without_repeats(memories, 200, 1.0)
    texts = {m.node.id: m.node.text for m in fitted}
    # The session keeps only the painting (the leaf said the rest); the day, only the race
    # (the session said the painting).
    assert texts["s"] == f"Session on 8 May 2023 (Mon): {PAINT.text}"
    assert texts["d"] == f"Day of 8 May 2023 (Mon): {RACE.text}"
    assert tokens == sum(count_tokens(t) for t in texts.values()) <= 200


def test_the_query_keeps_only_the_facts_it_asks_after() -> None:
    memories = [RecalledMemory(SESSION, 0.9)]
    fitted, _ = fit_without_repeats(
        memories, 200, 1.0, parse_query("When did Melanie paint a sunrise?")
    )
    assert [m.node.facts for m in fitted] == [(PAINT,)]
    fitted, _ = fit_without_repeats(memories, 200, 1.0, parse_query("Who won the election?"))
    assert fitted == []


def test_leaf_spend_is_what_the_leaves_alone_take() -> None:
    a = leaf("l1", "D1:3", '8 May 2023, Caroline: "I went to a support group yesterday."')
    b = leaf("l2", "D1:8", '8 May 2023, Melanie: "I painted a lake sunrise last year."')
    memories = [RecalledMemory(a, 0.9), RecalledMemory(SESSION, 0.8), RecalledMemory(b, 0.7)]
    assert leaf_spend(memories, 1000) == count_tokens(a.text) + count_tokens(b.text)
    assert leaf_spend(memories, count_tokens(a.text)) == count_tokens(a.text)


DATED = Fact(
    'Caroline: "Guess what, I went to a support group for trans people yesterday and it'
    ' was powerful." (yesterday: 7 May 2023)',
    ("D1:3",),
    T0,
)
DATED_SESSION = summary(
    Level.SESSION, f"Session on 8 May 2023 (Mon): {DATED.text} {PAINT.text}", DATED, PAINT
)


def test_for_a_question_asking_when_a_dated_repeat_stays_as_its_dates() -> None:
    kept = trim_summary(DATED_SESSION, {"D1:3", "D1:8"}, keep_dates=True)
    assert kept is not None
    excerpt = (
        'Caroline: "...a support group for trans people yesterday and it was..."'
        " (yesterday: 7 May 2023)"
    )
    assert kept.text == f"Session on 8 May 2023 (Mon): {excerpt}"
    assert [(f.text, f.source_ids) for f in kept.facts] == [(excerpt, ("D1:3",))]
    # Otherwise it goes like any repeat.
    assert trim_summary(DATED_SESSION, {"D1:3", "D1:8"}) is None


def test_a_dated_repeat_the_query_does_not_ask_after_still_goes() -> None:
    assert trim_summary(DATED_SESSION, {"D1:3"}, frozenset({"paint"}), keep_dates=True) == (
        trim_summary(DATED_SESSION, {"D1:3"}, frozenset({"paint"}))
    )


def test_fitting_keeps_the_dates_only_when_asked() -> None:
    group_leaf = leaf(
        "l1",
        "D1:3",
        '8 May 2023, Caroline: "Guess what, I went to a support group for trans people'
        ' yesterday and it was powerful."',
    )
    memories = [RecalledMemory(group_leaf, 0.9), RecalledMemory(DATED_SESSION, 0.9)]
    query = "When did Caroline go to the support group?"
    fitted, _ = fit_without_repeats(memories, 200, 1.0, parse_query(query), keep_dates=True)
    assert [m.node.id for m in fitted] == ["l1", "s"]
    assert fitted[1].node.text.endswith("(yesterday: 7 May 2023)")
    fitted, _ = fit_without_repeats(memories, 200, 1.0, parse_query(query))
    assert [m.node.id for m in fitted] == ["l1"]


MESSAGES = [f"D1:{i}" for i in range(8)]


@st.composite
def candidates(draw: st.DrawFn) -> list[RecalledMemory]:
    """Leaves of one message each and sessions of facts citing some of those messages, with
    scores from a few values so that ties and near ties are common."""
    scores = st.sampled_from([0.5, 0.6, 0.7])
    said = draw(st.lists(st.sampled_from(MESSAGES), min_size=1, max_size=6, unique=True))
    out = [
        RecalledMemory(
            leaf(f"l{i}", m, f'8 May 2023, Caroline: "thing {i} {"x " * i}"'), draw(scores)
        )
        for i, m in enumerate(said)
    ]
    for n in range(draw(st.integers(1, 3))):
        cited = draw(st.lists(st.sampled_from(MESSAGES), min_size=1, max_size=4, unique=True))
        facts = [Fact(f"Caroline said {n} about {m}.", (m,), T0) for m in cited]
        text = "Session on 8 May 2023 (Mon): " + " ".join(f.text for f in facts)
        out.append(
            RecalledMemory(summary(Level.SESSION, text, *facts, node_id=f"s{n}"), draw(scores))
        )
    return out


@settings(max_examples=300, deadline=None)
@given(candidates(), st.integers(10, 120), st.sampled_from([0.3, 1.0]))
def test_no_returned_summary_repeats_a_returned_leaf(
    memories: list[RecalledMemory], budget: int, share: float
) -> None:
    fitted, tokens = fit_without_repeats(memories, budget, share)
    said = {s for m in fitted if m.node.level is Level.SEGMENT for s in m.node.source_ids}
    for m in fitted:
        assert not {s for f in m.node.facts for s in f.source_ids} & said
    assert tokens == sum(count_tokens(m.node.text) for m in fitted) <= budget
