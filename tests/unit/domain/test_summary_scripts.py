"""A message in any script reaches its session's summary and the month's profile, through
the offline backend's rules (which read English cues, and must not drop what they cannot
read)."""

# ruff: noqa: RUF001 (full-width and Arabic punctuation is what these texts are written with)

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memstream.adapters.llm.offline import OfflineLanguageModel
from memstream.domain.models import Level, MemoryNode, SourceMessage, Window
from memstream.domain.segment_text import SENTENCE_BREAK
from memstream.domain.summary_text import is_fact, reads_as_english

AT = datetime(2024, 10, 19, 9, 30, tzinfo=UTC)

# (script, a disclosure, a question that is no fact): each in its own language.
DISCLOSURES = [
    ("arabic", "انتقلت أختي ليلى إلى عمّان في الربيع الماضي.", "هل تحب القهوة؟"),
    ("hebrew", "אחותי נועה עברה לחיפה בחודש שעבר.", "מה שלומך היום?"),
    ("chinese", "我妹妹上个月搬到了杭州。", "你喜欢喝茶吗？"),
    ("japanese", "妹は先月大阪に引っ越しました。", "お茶は好きですか？"),
    ("cyrillic", "Моя сестра Анна переехала в Казань в прошлом месяце.", "Как дела?"),
    ("mixed", "Mi hermana Ana se mudó a Sevilla 🌞 el mes pasado.", "¿Qué tal?"),
]


def leaf(n: int, text: str) -> MemoryNode:
    at = AT + timedelta(minutes=n)
    return MemoryNode(
        id=f"L1-{n}",
        user_id="u1",
        level=Level.SEGMENT,
        t_start=at,
        t_end=at,
        text=f'Dana: "{text}"',
        source_ids=(f"m{n}",),
        messages=(SourceMessage(f"m{n}", "Dana", "user", text, at),),
    )


@pytest.mark.parametrize(("script", "disclosure", "question"), DISCLOSURES)
@pytest.mark.parametrize("level", [Level.SESSION, Level.MONTH])
async def test_a_disclosure_in_any_script_reaches_the_summary(
    script: str, disclosure: str, question: str, level: Level
) -> None:
    children = [leaf(0, question), leaf(1, disclosure)]
    window = Window("u1", level, AT, AT + timedelta(days=1 if level is Level.SESSION else 30))
    summary = await OfflineLanguageModel().consolidate(level, window, children, [])
    assert disclosure in summary.text, script
    assert question not in summary.text, script
    assert [f.source_ids for f in summary.facts] == [("m1",)]


def test_english_is_judged_by_its_english_cues_as_before() -> None:
    assert reads_as_english("I moved to Zürich with my sister Zoë.")
    assert not is_fact("Thanks so much, that sounds wonderful!")
    assert not reads_as_english("انتقلت أختي ليلى إلى عمّان")


def test_sentences_end_at_full_stops_that_take_no_space() -> None:
    parts = [p for p in SENTENCE_BREAK.split("我搬家了。你呢？她也是！好的") if p]
    assert parts == ["我搬家了。", "你呢？", "她也是！", "好的"]
    assert [p for p in SENTENCE_BREAK.split("هل أنت بخير؟ نعم.") if p] == ["هل أنت بخير؟", "نعم."]
