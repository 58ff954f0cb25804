"""The words of a text in any script, as the lexical channel reads them: pure functions.

The text is normalised first (NFKC, so full-width and compatibility forms read as their
plain letters and digits; then case-folded), and each character folded once:

- combining marks are dropped: accents, Arabic and Hebrew vowel points and the variation
  selectors of emoji are optional in writing, so a word matches with or without them (for
  scripts whose vowel signs are marks, Devanagari or Thai, a word keeps its skeleton:
  coarser, and the same for a memory and a query);
- an accented Latin letter becomes its plain ASCII letter ("café" reads "cafe", "Zoë"
  "zoe"), so English words written with accents are stemmed like the rest of English;
- decimal digits of any script become ASCII digits ("٣٩٠٧" reads "3907");
- the Arabic elongation stroke (tatweel), which only stretches a word, and the skin-tone
  modifiers of emoji are dropped.

A word is a run of letters and digits (with one inner apostrophe, "i'm", as before). Text in
scripts written without spaces between words (Han, Hiragana, Katakana, Thai, Lao, Khmer,
Myanmar) is read as overlapping pairs of characters, "自行车锁" as "自行", "行车", "车锁": with
no dictionary to cut words, pairs still match every two-character word and each pair of a
longer one, the common baseline of search engines for these scripts. Each emoji is a word of
its own. ASCII text reads exactly as the ASCII-only tokenizer read it.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

# Scripts written without spaces between words (see the module docstring).
_UNSPACED = (
    "\u0e00-\u0e7f"  # Thai
    "\u0e80-\u0eff"  # Lao
    "\u1000-\u109f"  # Myanmar
    "\u1780-\u17ff"  # Khmer
    "\u3005\u3007"  # the ideographic iteration mark and zero
    "\u3040-\u30ff\u31f0-\u31ff"  # Hiragana, Katakana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # Han
    "\U00020000-\U0003134f"  # Han, supplementary planes
)
# Pictographs: the emoji blocks, miscellaneous symbols and dingbats.
_EMOJI = "\u2300-\u23ff\u2600-\u27bf\u2b00-\u2bff\U0001f000-\U0001faff"
_TOKEN = re.compile(rf"([^\W_]+(?:'[^\W\d_]+)?)|([{_EMOJI}])")
# What `_TOKEN` finds in lower-case ASCII text, read without the rest (most text is ASCII).
_ASCII_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_UNSPACED_RUN = re.compile(rf"([{_UNSPACED}]+)")
_DROPPED = re.compile("[\u0640\U0001f3fb-\U0001f3ff]")  # tatweel, skin tones


@dataclass(frozen=True, slots=True)
class Word:
    text: str  # normalised, case-folded
    english: bool  # ASCII letters and digits: the words the English stemmer reads


class _Fold(dict[int, str | None]):
    """`str.translate` table, each character's fold worked out on first sight."""

    def __missing__(self, code: int) -> str | None:
        folded = _fold(chr(code))
        self[code] = folded
        return folded


def _fold(char: str) -> str | None:
    if char.isascii():
        return char
    if unicodedata.category(char).startswith("M") or _DROPPED.match(char):
        return None
    if unicodedata.category(char) == "Nd":
        return str(unicodedata.decimal(char))
    bare = "".join(c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c))
    return bare if bare != char and bare.isascii() and bare.isalpha() else char


_FOLD = _Fold()


def normalise(text: str) -> str:
    """`text` as words are read from it: NFKC, case-folded, each character folded."""
    if text.isascii():
        return text.lower()
    return unicodedata.normalize("NFKC", text).casefold().translate(_FOLD)


def ascii_words(text: str) -> list[str]:
    """The words of an ASCII `text` (all English): what `words` finds in it, faster."""
    return _ASCII_WORD.findall(text.lower())


def words(text: str) -> list[Word]:
    """The words of `text`, in order (see the module docstring)."""
    return list(_words(normalise(text)))


@lru_cache(maxsize=16_384)
def _words(folded: str) -> tuple[Word, ...]:
    out: list[Word] = []
    for match in _TOKEN.finditer(folded):
        word, emoji = match.groups()
        if emoji is not None:
            out.append(Word(emoji, english=False))
        elif word.isascii():
            out.append(Word(word, english=True))
        else:
            out.extend(_split_unspaced(word))
    return tuple(out)


def _split_unspaced(word: str) -> list[Word]:
    """A word of non-ASCII letters, its runs of unspaced script read as character pairs."""
    out: list[Word] = []
    for part in _UNSPACED_RUN.split(word):
        part = part.strip("'")
        if not part:
            continue
        if _UNSPACED_RUN.fullmatch(part):
            pairs = [part[i : i + 2] for i in range(max(1, len(part) - 1))]
            out.extend(Word(pair, english=False) for pair in pairs)
        else:
            out.append(Word(part, english=part.isascii()))
    return out
