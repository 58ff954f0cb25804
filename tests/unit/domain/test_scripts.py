"""Words of every script: the lexical channel reads Arabic, Hebrew, Chinese, Japanese,
Cyrillic, emoji and mixed text, and reads English exactly as the ASCII-only tokenizer did."""

# ruff: noqa: RUF001 (full-width and Arabic punctuation is what these texts are written with)

from __future__ import annotations

import json
import re

import pytest

from memstream.domain.lexical import STOPWORDS, stem, tokenize
from memstream.domain.scripts import ascii_words, normalise, words
from memstream_lab.locomo import conversation_files

# The tokenizer before words of every script (LEXICON "snowball-en"), kept here to compare.
_ASCII_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def ascii_only_tokenize(text: str) -> list[str]:
    return [stem(w) for w in _ASCII_WORD.findall(text.lower()) if w not in STOPWORDS]


def _locomo_texts() -> list[str]:
    texts: list[str] = []
    for path in conversation_files():
        data = json.loads(path.read_text(encoding="utf-8"))
        conversation = data.get("conversation", data)
        for key, turns in conversation.items():
            if key.startswith("session_") and isinstance(turns, list):
                texts += [t["text"] for t in turns] + [t.get("blip_caption", "") for t in turns]
        qa = data.get("qa", [])
        texts += [f"{q.get('question', '')} {q.get('answer', '')}" for q in qa]
    return [t for t in texts if t]


def test_english_tokens_are_unchanged_on_every_ascii_locomo_text() -> None:
    texts = _locomo_texts()
    ascii_texts = [t for t in texts if t.isascii()]
    assert len(ascii_texts) > 4_000  # the dev conversations' turns, captions and questions
    changed = [t for t in ascii_texts if tokenize(t) != ascii_only_tokenize(t)]
    assert changed == []
    # ASCII text takes a short cut; the reading of every script finds the same words in it.
    read_otherwise = [
        t
        for t in ascii_texts
        if [w.text for w in words(t)] != ascii_words(t) or not all(w.english for w in words(t))
    ]
    assert read_otherwise == []


def test_on_mixed_text_only_the_words_with_other_letters_change() -> None:
    text = "I met Zoë at the café in São Paulo — she loves 寿司 and says привет"
    assert tokenize(text) == [
        "met", "zoe", "cafe", "sao", "paulo", "love", "寿司", "say", "привет"
    ]  # fmt: skip
    # Before: "zo", "caf", "s", "o" and nothing of the sushi or the greeting.
    assert ascii_only_tokenize(text) == ["met", "zo", "caf", "s", "o", "paulo", "love", "say"]


@pytest.mark.parametrize(
    ("stored", "asked", "shared"),
    [
        # Arabic: vowel points and the elongation stroke are optional; Arabic-Indic digits.
        ("رقم قفل دَرّاجتي هو ٣٩٠٧", "ما هو رقم قفل دراجتي؟", {"هو", "رقم", "قفل", "دراجتي"}),
        ("قـــفـل", "قفل", {"قفل"}),
        # Hebrew, with and without niqqud.
        ("הַקּוֹד שֶׁל הַמַּנְעוּל הוּא 3907", "מה הקוד של המנעול", {"הקוד", "של", "המנעול"}),
        # Chinese and Japanese: character pairs.
        (
            "我的自行车锁密码是3907。",
            "自行车锁的密码是什么？",
            {"自行", "行车", "车锁", "密码", "码是"},
        ),
        (
            "私の自転車の鍵の番号は3907です",
            "自転車の鍵の番号は？",
            {"自転", "転車", "車の", "の鍵", "鍵の", "の番", "番号", "号は"},
        ),
        # Cyrillic: case-folded, not stemmed.
        ("Код от Замка — 3907", "код замка", {"код", "замка"}),
        # Emoji: one word each, skin tones and variation selectors dropped.
        ("🚲🔒 👍🏽 ❤️", "🚲 👍 ❤", {"🚲", "👍", "❤"}),
        # Full-width forms read as their plain letters and digits.
        ("ＣＯＤＥ ３９０７", "code 3907", {"code", "3907"}),
    ],
)
def test_a_query_in_any_script_shares_terms_with_what_was_stored(
    stored: str, asked: str, shared: set[str]
) -> None:
    assert set(tokenize(stored)) & set(tokenize(asked)) == shared


def test_unspaced_scripts_give_character_pairs_and_a_lone_character_itself() -> None:
    assert [w.text for w in words("東京タワー")] == ["東京", "京タ", "タワ", "ワー"]
    assert [w.text for w in words("猫")] == ["猫"]
    assert [w.text for w in words("ภาษาไทย")] == ["ภา", "าษ", "ษา", "าไ", "ไท", "ทย"]


def test_only_ascii_words_go_to_the_english_stemmer() -> None:
    read = {w.text: w.english for w in words("Loving Москву, café and 東京")}
    assert read == {"loving": True, "москву": False, "cafe": True, "and": True, "東京": False}
    assert tokenize("Loving Москву") == ["love", "москву"]


def test_normalise_leaves_ascii_as_lower_case() -> None:
    assert normalise("My Bike's LOCK: 3907!") == "my bike's lock: 3907!"
