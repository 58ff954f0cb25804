"""The entity reader's cheaper paths give what the plain rules gave: the same mentions on every
LoCoMo message, the same words, and the same sentence starts on any text."""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata

from hypothesis import example, given
from hypothesis import strategies as st

from memstream.domain import entities, entity_words
from memstream_lab.locomo import conversation_events, conversation_files, load_conversation

# Every mention of the 2,760 messages of the five dev conversations, as the reader found
# them before its tokenizer was made cheaper (commit dfbf2f8), with the one mention a pet
# named by a possessive adds since ("I got a puppy two weeks ago! Her name's Coco": the
# speaker's puppy, Coco's alias): 5,118 mentions.
LOCOMO_MENTIONS = 5118
LOCOMO_DIGEST = "f31caa591b975aabde08fbcd685009c08530c8b4049871399c7f866e2d568b6c"

# The rules as first written: one character per alternation, a look back from every word.
PLAIN_TOKEN = re.compile(r"[^\W\d_](?:[^\W_]|['-](?=[^\W\d_]))*")


def plain_initial(text: str, start: int) -> bool:
    before = text[max(0, start - 40) : start].rstrip(" \t\"'([{*_")
    last = before[-1:] if before else ""
    return not last or last in ".!?:;…-\u2013\u2014\n" or unicodedata.category(last) == "So"


def test_every_locomo_mention_is_unchanged() -> None:
    said = [
        (event["speaker"], event["text"])
        for path in conversation_files()
        for event in conversation_events(load_conversation(path))
        if event["type"].startswith("turn")
    ]
    rows = [
        [[m.name, m.key, m.kind, m.form, m.weak, m.alias_of, m.start] for m in found]
        for found in (entities.mentions(text, speaker) for speaker, text in said)
    ]
    assert sum(map(len, rows)) == LOCOMO_MENTIONS
    assert hashlib.sha256(json.dumps(rows).encode()).hexdigest() == LOCOMO_DIGEST


# Text where sentence ends, openers, symbols and long gaps are all likely.
CHATTY = st.lists(
    st.sampled_from([*"Ab c'-.!?:;…\u2014\n\t\"([*_3🙂é", "Mel", " " * 41]), max_size=120
).map("".join)


@given(CHATTY)
def test_words_are_the_plain_pattern_s(text: str) -> None:
    assert [m.span() for m in entity_words.WORD.finditer(text)] == [
        m.span() for m in PLAIN_TOKEN.finditer(text)
    ]


@given(CHATTY)
@example("said" + " " * 39 + "Mel")  # the look back reaches the word before by one
@example("said" + " " * 40 + "Mel")  # ... just does not
@example("said." + " " * 40 + "Mel")
@example(" Mel")  # one space, and no word before it
def test_sentence_starts_of_capitals_are_the_plain_look_back_s(text: str) -> None:
    words = entity_words.read_words(text)
    for i, word in enumerate(words.shown):
        if word[0].isupper():  # the only words asked
            assert words.opens_sentence(i) == plain_initial(text, words.starts[i]), (text, word)


def plain_clean_text(text: str) -> str:
    """`entities.clean_text` as first written: every text normalised, translated, untagged."""
    text = entities._TAG.sub(" ", unicodedata.normalize("NFKC", text).translate(entities._QUOTES))
    return "".join(
        ch if not unicodedata.category(ch).startswith("C") else ("\n" if ch in "\r\n" else " ")
        for ch in text
    )


# Text with tags, entities, curly quotes, compatibility forms and controls.
MARKED_UP = st.lists(
    st.sampled_from(
        [*"Ab <>&;'\"\n\r\t\x00", "<b>", "&amp;", "&nbsp;", "\u2019", "\u201c", "\ufb01", "\uff1c"]
    ),
    max_size=60,
).map("".join)


@given(MARKED_UP)
@example("Tom &amp; Ana")
@example("\uff1cb\uff1e bold")  # fullwidth angle brackets: a tag once normalised
@example("caf\u00e9 <i>x</i>")
def test_clean_text_is_the_plain_cleaning_s(text: str) -> None:
    assert entities.clean_text(text) == plain_clean_text(text)
