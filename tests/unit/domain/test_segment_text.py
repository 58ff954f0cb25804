"""L1 text without a model: the exchange, dated, every message quoted as spoken."""

from datetime import UTC, datetime, timedelta

from memstream.domain.lexical import tokenize
from memstream.domain.models import Turn
from memstream.domain.nodes import source_message
from memstream.domain.segment_text import render_segment

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


def test_segment_quotes_each_speaker_verbatim_under_the_date() -> None:
    assert render_segment(EXCHANGE) == (
        '8 May 2023, Caroline: "I went to a LGBTQ support group yesterday and it was so '
        'powerful." Melanie: "Wow! Do you want to go again? I think you deserve it, my friend."'
    )


def test_every_word_of_every_message_stays_findable() -> None:
    text = render_segment(EXCHANGE)
    for message in EXCHANGE:
        assert set(tokenize(message.text)) <= set(tokenize(text))
    assert set(tokenize("Caroline Melanie 8 May 2023")) <= set(tokenize(text))


def test_the_date_is_the_users_local_day() -> None:
    late = turn("Ana", "Still up.", ts=datetime(2023, 5, 8, 23, 30, tzinfo=UTC), tz="Asia/Tokyo")
    assert render_segment([late]).startswith("9 May 2023, Ana:")


def test_an_unknown_zone_falls_back_to_the_producers_offset() -> None:
    odd = turn("Ana", "Hi.", tz="Mars/Olympus")
    assert render_segment([odd]).startswith("8 May 2023, Ana:")


def test_an_image_caption_is_kept_and_marked_as_metadata() -> None:
    shared = turn("Melanie", "Look at this!", metadata={"blip_caption": "a dog on a beach."})
    assert render_segment([shared]) == (
        '8 May 2023, Melanie: "Look at this!" [photo: a dog on a beach]'
    )
    assert source_message(shared).caption == "a dog on a beach"


def test_an_empty_message_with_an_image_is_only_the_caption() -> None:
    shared = turn("Melanie", "  ", metadata={"caption": "a sunset"})
    assert render_segment([shared]) == "8 May 2023, Melanie: [photo: a sunset]"


def test_the_source_message_keeps_the_words_as_written() -> None:
    kept = source_message(EXCHANGE[1])
    assert (kept.event_id, kept.speaker, kept.role, kept.text, kept.ts) == (
        "e1",
        "Melanie",
        "user",
        EXCHANGE[1].text,
        EXCHANGE[1].ts,
    )
