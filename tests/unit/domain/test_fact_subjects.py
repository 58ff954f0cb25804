"""One person, one subject: what others say of a speaker by name is read as theirs."""

from __future__ import annotations

from datetime import UTC, datetime

from memstream.domain.fact_subjects import as_speakers
from memstream.domain.facts import AtomicFact, make_fact, speaker_key
from memstream.domain.knowledge import current_facts, fact_history, fact_versions
from memstream.domain.knowledge_view import FactsView

JAN = datetime(2023, 1, 7, tzinfo=UTC)
AUG = datetime(2023, 8, 8, tzinfo=UTC)
ANA = speaker_key("Ana")


def lives(subject: str, name: str, city: str, when: datetime, said: str) -> AtomicFact:
    return make_fact(
        user_id="u1",
        subject=subject,
        subject_name=name,
        attribute="lives_in",
        value=city,
        text=f"{name} lives in {city}",
        valid_from=when,
        recorded_at=when,
        source_ids=(said,),
    )


# Mateus tells where Ana lives (keyed by her name); later Ana says it herself.
TOLD = lives("ana", "Ana", "São Paulo", JAN, "m1")
SAID = lives(ANA, "Ana", "Curitiba", AUG, "m2")
# Someone who never speaks keeps the key of their name.
LENA = lives("lena", "Lena", "Porto", JAN, "m3")


def test_a_name_that_is_a_speakers_is_keyed_as_that_speaker_and_keeps_its_id() -> None:
    told, said, lena = as_speakers([TOLD, SAID, LENA])
    assert (told.subject, told.fact_id) == (ANA, TOLD.fact_id)
    assert said == SAID and lena == LENA
    assert as_speakers([TOLD, LENA]) == (TOLD, LENA)  # no speaker Ana: nothing to join


def test_what_a_speaker_says_closes_what_another_told_of_them() -> None:
    [curitiba] = [f for f in current_facts([TOLD, SAID, LENA]) if f.subject == ANA]
    assert curitiba.value == "Curitiba"
    sao_paulo, _ = fact_history([TOLD, SAID], ANA, "lives_in")
    assert (sao_paulo.value, sao_paulo.valid_to) == ("São Paulo", AUG)
    assert {f.value for f in fact_versions([TOLD, SAID]) if f.valid_to is None} == {"Curitiba"}


def test_a_view_joins_them_when_the_speaker_comes_and_parts_them_when_they_go() -> None:
    view = FactsView.of({"l1": (TOLD,), "l3": (LENA,)})
    assert len(view.timelines) == 2
    joined = view.replaced({"l2": (SAID,)})
    assert joined == FactsView.of({"l1": (TOLD,), "l2": (SAID,), "l3": (LENA,)})
    assert (("u1", ANA, "lives_in")) in joined.timelines and len(joined.timelines) == 2
    parted = joined.replaced({"l2": ()})
    assert parted == view and ("u1", "ana", "lives_in") in parted.timelines
