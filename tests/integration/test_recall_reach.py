"""Everything stored can be recalled, through the real pipeline (embedded broker, Redis and
Qdrant, the recall API and the SDK): a message too long for the budget comes back as an
excerpt around what matched, and messages in any script reach their session's summary and
are found by a question in the same script."""

# ruff: noqa: RUF001 (full-width and Arabic punctuation is what these texts are written with)

from __future__ import annotations

from pathlib import Path

import pytest

from memstream.client import AsyncRecallClient, MemstreamProducer
from memstream.client.models import Memory, Recall
from memstream.domain.tokens import count_tokens
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.settings import Settings

from .sdk_stack import API_KEY, serving_everything

pytestmark = pytest.mark.integration

# Sentences of an ordinary day, none of them about the bike, the key or emoji.
DAY = [
    "This morning I walked the dog along the canal before the rain started.",
    "Then I spent an hour answering emails about the quarterly budget review.",
    "My sister called to talk about the garden she is planting behind her house.",
    "Lunch was leftover soup, which was better the second day than the first.",
    "In the afternoon I reorganised the bookshelf by colour, which took far too long.",
    "The neighbours were painting their fence and asked to borrow a ladder.",
]
BIKE = "My bike lock combination is 3907."
KEY = "The spare key to the cellar is under the blue flowerpot by the back door."


def prose(chars: int) -> str:
    words: list[str] = []
    n = 0
    while sum(len(w) + 1 for w in words) < chars:
        words.append(DAY[n % len(DAY)])
        n += 1
    return " ".join(words)


BIKE_TURN = prose(2_400 - len(BIKE)) + " " + BIKE
KEY_TURN = (prose(7_900) + " " + KEY + " " + prose(8_100))[:16_000]  # the longest a turn may be
EMOJI_TURN = "🚲🔒🎉" * 5_000

# One disclosure in each script, and a question in the same script that should find it.
SCRIPTS = {
    "arabic": ("انتقلت أختي ليلى إلى عمّان في الربيع الماضي.", "إلى أين انتقلت ليلى؟"),
    "hebrew": ("אחותי נועה עברה לחיפה בחודש שעבר.", "לאן נועה עברה?"),
    "chinese": ("我妹妹上个月搬到了杭州。", "我妹妹搬到了哪里？"),
    "japanese": ("妹は先月大阪に引っ越しました。", "妹はどこに引っ越しましたか？"),
    "cyrillic": ("Моя сестра Анна переехала в Казань.", "Куда переехала Анна?"),
    "mixed": ("Ayşe ist am Freitag 30 geworden 🎂 und feiert in Köln 🎉.", "Wo feiert Ayşe? 🎉"),
}


def publish(producer: MemstreamProducer, user: str, said: list[str], session: int = 0) -> None:
    """Each message as Dana's turn with a short reply, in one session (its hour of the
    morning: `session`) that then ends."""
    seq = 0
    hour = 9 + session
    for n, text in enumerate(said):
        for speaker, role, words in (("Dana", "user", text), ("Bot", "assistant", "Noted.")):
            producer.publish_turn(
                user_id=user,
                session_id=f"s{session}",
                seq=seq,
                speaker=speaker,
                role=role,
                text=words,
                ts=f"2024-10-19T{hour:02d}:{10 + 2 * n + (role == 'assistant'):02d}:00+00:00",
            )
            seq += 1
    producer.end_session(
        user_id=user, session_id=f"s{session}", ts=f"2024-10-19T{hour:02d}:50:00+00:00"
    )


def found(answer: Recall, words: str) -> list[Memory]:
    return [m for m in answer.memories if m.level == 1 and words in m.text]


async def test_long_and_foreign_messages_are_recalled(settings: Settings, tmp_path: Path) -> None:
    short = ["I started a pottery class on Tuesdays.", "We had pizza for dinner."]
    users = {
        "reach-bike": [short[0], BIKE_TURN, short[1]],
        "reach-key": [short[0], KEY_TURN, short[1]],
        "reach-emoji": [short[0], EMOJI_TURN, short[1]],
    }
    async with serving_everything(settings, tmp_path) as stack:
        with MemstreamProducer(
            stack.settings.broker.bootstrap,
            topic_prefix=stack.settings.broker.topic_prefix,
            idempotent=False,  # the embedded broker hands out no producer ids
        ) as producer:
            for user, said in users.items():
                publish(producer, user, said)
            # A session per script: a session's summary has room for a few disclosures.
            for n, (said, _) in enumerate(SCRIPTS.values()):
                publish(producer, "reach-scripts", [said], session=n)
        await wait_caught_up(stack.running.container, [*users, "reach-scripts"], timeout_s=180)

        async with AsyncRecallClient(stack.url, api_key=API_KEY) as memory:
            bike = await memory.recall("reach-bike", "What is my bike lock combination?")
            key = await memory.recall("reach-key", "Where is the spare key to the cellar?")
            emoji = await memory.recall("reach-emoji", "When did I send 🚲?")
            tight = await memory.recall(
                "reach-bike", "What is my bike lock combination?", max_tokens=40
            )
            sessions = await memory.memories("reach-scripts", level=2)
            by_script = {
                script: await memory.recall("reach-scripts", question)
                for script, (_, question) in SCRIPTS.items()
            }

    # 1. Each long message comes back, cut around what the question asked, and says so.
    assert count_tokens(BIKE_TURN) > 450  # more than a question after one fact may spend
    for answer, words, full in ((bike, BIKE, BIKE_TURN), (key, KEY, KEY_TURN)):
        [hit] = found(answer, words)
        assert hit.excerpt and hit.full_tokens is not None
        assert hit.full_tokens > count_tokens(full) and len(hit.text) < len(full)
        assert hit.text.startswith('19 October 2024, Dana: "…')
        assert words in answer.as_prompt() and "an excerpt" in answer.as_prompt()
        assert answer.tokens <= 450
    [sent] = found(emoji, "🚲🔒🎉🚲🔒🎉")
    assert sent.excerpt and sent.full_tokens is not None and sent.full_tokens >= 15_000
    # 2. A budget too small for the long message says what it left out.
    assert not found(tight, BIKE) and tight.omitted_for_budget >= 1
    # 3. Every script reaches the session's summary, and a question in it finds it.
    assert len(sessions.items) == len(SCRIPTS)
    for script, (said, _) in SCRIPTS.items():
        assert any(said in session.text for session in sessions.items), script
        leaves = [m for m in by_script[script].memories if m.level == 1]
        best = max(leaves, key=lambda m: m.score or 0.0)
        assert said in best.text, script  # the question's words found it, not the budget
