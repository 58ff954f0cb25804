"""Mentions: names, kin and pet references, the speaker, common-word names, hostile text."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memstream.domain.entities import (
    MAX_MENTIONS_PER_MESSAGE,
    MAX_NAME_CHARS,
    Mention,
    clean_text,
    mentions,
    name_key,
)


def _by_key(text: str, speaker: str = "Caroline") -> dict[str, Mention]:
    return {m.key: m for m in mentions(text, speaker)}


def test_proper_names_skip_function_words_greetings_and_calendar() -> None:
    found = _by_key("Hey Mel! On Monday in June we saw Nate at the lake. Wow, Thanks!")
    assert set(found) == {"mel", "nate"}
    assert found["mel"].kind == "person"  # a greeting names whom it greets
    assert not found["nate"].weak


def test_sentence_initial_names_are_weak() -> None:
    found = _by_key("Jon came over. Then we left.")
    assert found["jon"].weak
    assert "then" not in found


def test_speaker_is_mentioned_when_they_speak_of_themselves() -> None:
    assert _by_key("I'm swamped with work.")["caroline"].form == "speaker"
    assert "caroline" not in _by_key("That sounds lovely.")


def test_kin_references_are_keyed_by_their_owner() -> None:
    found = _by_key("I called my older sister and our dog barked.")
    assert found["caroline's sister"].kind == "person"
    assert found["caroline's dog"].kind == "pet"
    assert _by_key("Melanie's brother is back.")["melanie's brother"].form == "relation"
    assert "caroline's best friend" in _by_key("My best friend is here.")
    assert "caroline's mom" in _by_key("My mum called.")
    assert "caroline's family" in _by_key("Boot camp with my fam!")
    assert "caroline's best friend" in _by_key("My bestie is here.")


def test_names_given_to_kin_in_each_word_order() -> None:
    for text in (
        "I went out with my sister Anna.",
        "I went out with Anna, my sister, today.",
        "I went out with my sister, Anna, today.",
        "My sister named Anna visited.",
    ):
        anna = _by_key(text)["anna"]
        assert anna.alias_of == "caroline's sister", text
        assert anna.kind == "person"


def test_a_name_given_by_a_possessive_is_the_one_relation_named_before_it() -> None:
    found = _by_key("My sister is visiting. Her name is Anjali, she's a doctor.")
    assert found["anjali"].alias_of == "caroline's sister"
    assert found["anjali"].kind == "person"
    assert _by_key("Our dog barks at night. His name is Bruno.")["bruno"].alias_of == (
        "caroline's dog"
    )
    for text in (
        "My brother is visiting. Her name is Anjali.",  # "her" is no brother
        "My sister and my brother came. Her name is Anjali.",  # which of them
        "Hi! Her name is Anjali.",  # no one named before
    ):
        assert _by_key(text)["anjali"].alias_of is None, text


def test_a_vocative_before_a_kin_phrase_is_not_its_name() -> None:
    assert _by_key("Hi Anna, my sister says hi")["anna"].alias_of is None


def test_named_pets() -> None:
    found = _by_key("We adopted a dog named Max, and my cat Luna hid.")
    assert found["max"].kind == "pet"
    assert found["luna"].kind == "pet"
    assert found["luna"].alias_of == "caroline's cat"
    assert _by_key("a puppy called Friday")["friday"].kind == "pet"  # named, not a weekday


def test_kinds_from_the_words_around() -> None:
    found = _by_key("She moved to Berlin and works at Acme Inc near Central Park.")
    assert found["berlin"].kind == "place"
    assert found["acme inc"].kind == "organisation"
    assert found["central park"].kind == "place"
    assert _by_key("We talked about Zorblax.")["zorblax"].kind == "unknown"


def test_titles_and_pairs_with_the_speaker_vouch_for_names() -> None:
    assert _by_key("Dr. Okafor said my knee is healing.")["okafor"] == Mention(
        "Okafor", "okafor", "person", "name", start=4
    )
    anthony = _by_key("Anthony and I repainted the kitchen.")["anthony"]
    assert not anthony.weak and anthony.kind == "unknown"  # "Max and I" may be a dog


def test_places_need_a_verb_of_going_or_staying() -> None:
    assert _by_key("Jon was in Rome last week.")["rome"].kind == "place"
    assert _by_key("We moved to Lisbon.")["lisbon"].kind == "place"
    assert _by_key("The spells in Harry Potter are fun.")["harry potter"].kind == "unknown"
    assert _by_key("I talked to Max.")["max"].kind == "unknown"


def test_titles_keep_of_the_inside() -> None:
    found = _by_key("I reread the Lord of the Rings at the University of Leeds.")
    assert "lord of the rings" in found
    assert found["university of leeds"].kind == "organisation"


def test_common_word_names() -> None:
    assert "will" not in _by_key("Will you come?")
    assert not _by_key("I told Will about it.")["will"].weak
    assert _by_key("Grace said hi.")["grace"].weak
    assert not _by_key("I met Grace there.")["grace"].weak
    assert "may" not in _by_key("See you in May.")
    assert "may" not in _by_key("It was May 5.")
    assert _by_key("I hope May likes it.")["may"].weak  # a month as often as a name
    assert not _by_key("my daughter May")["may"].weak


def test_possessives_and_case_share_a_key() -> None:
    assert name_key("Melanie's") == name_key("MELANIE") == "melanie"
    assert set(_by_key("I love Melanie's paintings.")) == {"caroline", "melanie"}


def test_hostile_text_is_cleaned_and_bounded() -> None:
    giant = "A" + "b" * 10_000
    found = _by_key(f"<script>x</script>I met {giant} and Zoë \x00\x1b[31m 😊 Sam &amp; Bo.")
    assert "zoë" in found and "sam" in found and "bo" in found
    assert all(len(k) <= MAX_NAME_CHARS for k in found)
    assert "script" not in found and not any("\x00" in k or "\x1b" in k for k in found)
    shouting = "WE WENT TO THE BIG PARTY AT THE PLACE"
    assert _by_key(shouting) == {}


def test_long_texts_and_hostile_speakers_stay_bounded() -> None:
    found = mentions("I met Anna and Bo. " * 20_000, "Caro\x00line<i>" + "x" * 10_000)
    assert len(found) <= MAX_MENTIONS_PER_MESSAGE
    speaker = next(m for m in found if m.form == "speaker")
    assert "\x00" not in speaker.name and len(speaker.name) <= MAX_NAME_CHARS
    assert "<i>" not in speaker.name


def test_curly_quotes_read_as_straight_ones() -> None:
    assert clean_text("Anna\u2019s") == "Anna's"
    assert "anna's dog" in _by_key("I walked Anna\u2019s dog.")


@given(st.text(max_size=400), st.text(max_size=40))
def test_any_text_gives_bounded_clean_mentions(text: str, speaker: str) -> None:
    found = mentions(text, speaker)
    assert len(found) <= MAX_MENTIONS_PER_MESSAGE
    for m in found:
        assert m.key and len(m.key) <= MAX_NAME_CHARS + len(name_key(speaker)) + 20
        assert all(ch.isprintable() for ch in m.key)
