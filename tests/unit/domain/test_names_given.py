"""A name given by "her/his name is" after a relation or a pet the speaker has: one entity,
the name with the relation as its alias, and one fact, whether the name comes in the same
message or opens the speaker's next one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.unit.domain.test_entity_index import T0, Said

from memstream.domain.entity_index import EntityIndex, observe
from memstream.domain.fact_extraction import extract_facts
from memstream.domain.knowledge import current_facts, facts_about
from memstream.domain.models import SourceMessage


def _leaf(*said: tuple[str, str]) -> EntityIndex:
    """One leaf of these (speaker, text) messages, a minute apart."""
    messages = [Said(who, text, T0 + timedelta(minutes=i)) for i, (who, text) in enumerate(said)]
    return observe(EntityIndex(), "l1", messages)


def _facts(*said: tuple[str, str]) -> set[tuple[str, str, str]]:
    messages = [
        SourceMessage(f"m{i}", who, "assistant" if who == "Bot" else "user", text, T0)
        for i, (who, text) in enumerate(said)
    ]
    return {(f.subject, f.attribute, f.value) for f in extract_facts(messages, user_id="u")}


def test_a_name_opening_the_next_message_is_the_relation_named_before() -> None:
    said = (("Ines", "My sister just moved to Goa."), ("Bot", "Oh nice!"),
            ("Ines", "Her name is Anjali, she teaches yoga."))  # fmt: skip
    index = _leaf(*said)
    assert index.keys["anjali"] == index.keys["ines's sister"]  # one entity, not two
    assert len(index.entities) == 3  # Ines, her sister Anjali, Goa
    facts = _facts(*said)
    assert ("speaker:ines", "sister", "Anjali") in facts
    assert ("kin:ines:sister", "lives_in", "Goa") in facts


def test_a_name_given_to_a_pet_the_speaker_got_makes_it_the_pets() -> None:
    said = (("Ines", "We got a kitten last week! His name's Pip."),)
    index = _leaf(*said)
    pip = index.entities[index.keys["pip"]]
    assert pip.aliases == ("ines's kitten",) and pip.kind == "pet"
    messages = [SourceMessage("m1", "Ines", "user", said[0][1], datetime(2026, 5, 2, tzinfo=UTC))]
    facts = current_facts(extract_facts(messages, user_id="u"))
    assert [f.text for f in facts_about(index, facts, "Pip") or ()] == [
        "Ines's kitten's name is Pip"
    ]


def test_a_pronoun_that_fits_no_relation_named_before_names_no_one() -> None:
    said = (("Ines", "My brother finally has a girlfriend."),
            ("Ines", "Her name is Marisol."))  # fmt: skip
    index = _leaf(*said)
    assert index.keys["marisol"] != index.keys["ines's brother"]
    assert not {fact for fact in _facts(*said) if fact[2] == "Marisol"}
