"""An ending told without its attribute ("I've left the Magpies", "Ellie quit keto") closes
the fact of the same subject whose value it names, as the facts stated before it hold it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memstream.domain.fact_extraction import extract_facts
from memstream.domain.facts import ENDED, AtomicFact
from memstream.domain.knowledge import current_facts, fact_history, fact_versions
from memstream.domain.knowledge_view import FactsView
from memstream.domain.memory_validity import memory_validity
from memstream.domain.models import Level, MemoryNode, SourceMessage

START = datetime(2024, 1, 5, 12, tzinfo=UTC)


def _said(texts: list[str], speaker: str = "Maya") -> dict[str, tuple[AtomicFact, ...]]:
    """Each text as its own message a month after the one before, by message id."""
    leaves = {}
    for number, text in enumerate(texts):
        message = SourceMessage(
            event_id=f"m{number}",
            speaker=speaker,
            role="user",
            text=text,
            ts=START + timedelta(days=30 * number),
        )
        leaves[message.event_id] = extract_facts([message], user_id="u")
    return leaves


def _all(leaves: dict[str, tuple[AtomicFact, ...]]) -> list[AtomicFact]:
    return [fact for facts in leaves.values() for fact in facts]


def _current(leaves: dict[str, tuple[AtomicFact, ...]]) -> set[tuple[str, str, str]]:
    return {(f.subject, f.attribute, f.value) for f in current_facts(_all(leaves))}


def test_an_ending_closes_the_fact_whose_value_it_names() -> None:
    leaves = _said([
        "I play for the Magpies on Sundays.",
        "I drive a Fiat Panda.",
        "My girlfriend Ellie is doing keto.",
        "I've left the Magpies.",
        "Ellie quit keto last month.",
        "Sold the Fiat Panda, finally.",
    ])  # fmt: skip
    now = _current(leaves)
    assert ("speaker:maya", "team", "the Magpies") not in now
    assert ("ellie", "diet", "keto") not in now
    assert ("speaker:maya", "car", "Fiat Panda") not in now
    assert ("speaker:maya", "partner", "Ellie") in now  # what no ending names still holds
    team = fact_history(_all(leaves), "speaker:maya", "team")
    assert [v.negated for v in team] == [False, True]
    assert team[0].valid_to == START + timedelta(days=90)  # the ending's event time
    assert team[0].superseded_by == team[1].fact_id
    assert team[1].certainty == "implied" and team[1].source_ids == ("m3",)
    assert team[1].text == "Maya no longer plays for the Magpies"
    assert not any(v.attribute == ENDED for v in fact_versions(_all(leaves)))


def test_an_ending_naming_nothing_held_closes_nothing() -> None:
    before = _said(["I play for the Magpies.", "My sister plays for the Rovers."])
    after = _said([
        "I play for the Magpies.",
        "My sister plays for the Rovers.",
        "I left the office early.",  # names no value held
        "I've left the Rovers.",  # the Rovers are the sister's, not the speaker's
        "We stopped going to the cinema.",
    ])  # fmt: skip
    assert _current(after) == _current(before)


def test_an_ending_said_before_the_value_closes_nothing() -> None:
    leaves = _said(["I quit the Magpies.", "I play for the Magpies now."])
    assert ("speaker:maya", "team", "the Magpies") in _current(leaves)


def test_a_habit_ended_is_read_as_an_ending() -> None:
    leaves = _said(["I've taken up climbing.", "We stopped going to the climbing gym."])
    assert not any(a == "hobby" for _, a, _ in _current(leaves))


def test_forgetting_the_ending_reopens_the_fact_and_the_stepped_view_agrees() -> None:
    leaves = _said(["I play for the Magpies.", "I've left the Magpies.", "I drive a Yaris."])
    view = FactsView.of(leaves)
    assert ("speaker:maya", "team", "the Magpies") not in {
        (f.subject, f.attribute, f.value) for f in current_facts(view.observations)
    }
    forgotten = view.replaced({"m1": ()})
    assert forgotten == FactsView.of({k: v for k, v in leaves.items() if k != "m1"})
    team = forgotten.timelines[("u", "speaker:maya", "team")].versions
    assert len(team) == 1 and team[0].valid_to is None and team[0].superseded_by is None
    # Said again, the ending closes it again; the stored value's own leaf replaced too.
    again = forgotten.replaced({"m1": leaves["m1"], "m0": leaves["m0"]})
    assert again == view


def test_the_same_facts_whatever_order_the_leaves_arrive_in() -> None:
    leaves = _said(["I play for the Magpies.", "I've left the Magpies.", "Ellie quit keto."])
    backwards = dict(reversed(list(leaves.items())))
    assert fact_versions(_all(leaves)) == fact_versions(_all(backwards))
    step = FactsView.of({}).replaced({"m1": leaves["m1"], "m2": leaves["m2"]})
    step = step.replaced({"m0": leaves["m0"]})
    assert step == FactsView.of(leaves)


def test_a_plan_in_a_later_clause_leaves_the_statement_before_it() -> None:
    stated = _said(["My girlfriend Ellie is doing keto, so maybe a low-sugar option as well."])
    assert ("ellie", "diet", "keto") in _current(stated)
    assert not _current(_said(["If we move to Berlin, I'd miss the sea."]))
    assert not _current(_said(["Maybe I'll adopt a cat, do you think that's wise?"]))


def test_a_memory_whose_fact_an_ending_closed_ends_by_inference() -> None:
    leaves = _said(["I play for the Magpies.", "I've left the Magpies.", "I live in Porto."])
    versions = fact_versions(_all(leaves))
    node = MemoryNode(
        id="l0",
        user_id="u",
        level=Level.SEGMENT,
        t_start=START,
        t_end=START + timedelta(minutes=5),
        text="I play for the Magpies.",
        source_ids=("m0",),
    )
    validity = memory_validity(node, versions)
    assert validity is not None
    assert validity.valid_to == START + timedelta(days=30)
    assert validity.end_basis == "inferred"
