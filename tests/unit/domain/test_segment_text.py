"""L1 text without a model: the exchange, dated, in the third person, every word kept."""

import re
from datetime import UTC, datetime, timedelta

from memstream.domain.lexical import tokenize
from memstream.domain.models import Turn
from memstream.domain.segment_text import render_segment, third_person

MAY_8 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def turn(speaker: str, text: str, seq: int = 0, ts: datetime = MAY_8, **extra: object) -> Turn:
    return Turn(
        event_id=f"e{seq}",
        user_id="u1",
        session_id="s1",
        seq=seq,
        speaker=speaker,
        role="user",
        text=text,
        ts=ts + timedelta(minutes=seq),
        **extra,  # type: ignore[arg-type]
    )


EXCHANGE = [
    turn("Caroline", "I went to a LGBTQ support group yesterday and it was so powerful.", 0),
    turn("Melanie", "Wow! Do you want to go again? I think you deserve it, my friend.", 1),
]


def test_segment_is_third_person_with_the_date() -> None:
    text = render_segment(EXCHANGE)
    assert text == (
        "On 8 May 2023, Caroline said they went to a LGBTQ support group yesterday and it was "
        "so powerful. Melanie said wow! Does Caroline want to go again? They think Caroline "
        "deserves it, their friend."
    )
    assert not re.search(r"\b(I|me|my|I'm)\b", text)


def test_segment_is_deterministic_and_keeps_every_content_word() -> None:
    first = render_segment(EXCHANGE)
    assert first == render_segment(EXCHANGE)
    original = {t for m in EXCHANGE for t in tokenize(m.text)}
    assert original <= set(tokenize(first))


def test_segment_date_is_the_users_local_date_and_captions_are_kept() -> None:
    late = datetime(2023, 5, 8, 23, 30, tzinfo=UTC)
    messages = [
        turn(
            "Melanie",
            "Look at this!",
            ts=late,
            tz="Asia/Tokyo",
            metadata={"blip_caption": "a bowl"},
        )
    ]
    text = render_segment(messages)
    assert text == "On 9 May 2023, Melanie said look at this! Melanie shared a photo of a bowl."


def test_an_unknown_zone_falls_back_to_the_producers_offset() -> None:
    text = render_segment(
        [turn("Melanie", "Hi.", ts=datetime(2023, 5, 8, 23, 30, tzinfo=UTC), tz="Mars/Olympus")]
    )
    assert text == "On 8 May 2023, Melanie said hi."


def test_an_empty_message_is_still_recorded() -> None:
    assert (
        render_segment([turn("Melanie", "   ")]) == "On 8 May 2023, Melanie sent an empty message."
    )


def test_third_person_fixes_verbs_around_the_rewritten_pronouns() -> None:
    assert third_person("I am tired, are you?", "Mel") == "They are tired, is Mel?"
    assert (
        third_person("You were right and I was wrong.", "Mel")
        == "Mel was right and they were wrong."
    )
    # Without a single addressee, "you" stays as written.
    assert third_person("Thank you!", None) == "Thank you!"
