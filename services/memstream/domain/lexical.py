"""The lexical channel: tokens and BM25-style term weights for Qdrant's sparse vectors.

Qdrant multiplies each stored weight by the term's IDF (collection statistics, `Modifier.IDF`),
so a document vector carries only the BM25 term-frequency part and a query vector carries 1.0
per distinct query term.

Words of every script are tokens (`domain/scripts.py` reads the text): English words are
stemmed as before, other words are kept as written (case-folded), text written without
spaces (Chinese, Japanese, Thai) gives its character pairs, and each emoji is a token.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache

import snowballstemmer

from memstream.domain.scripts import Word, ascii_words, words

STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "hey",
        "hi",
        "oh",
        "yeah",
        "yes",
        "ok",
        "okay",
        "really",
        "so",
        "also",
        "got",
        "get",
        "just",
        "like",
        "been",
        "i'm",
        "it's",
        "that's",
        "you're",
        "i've",
        "i'll",
        "don't",
        "can't",
    ]
)

BM25_K1 = 1.2
BM25_B = 0.75
# Typical length of an L1 memory in tokens; a fixed average keeps weights independent of
# what else is stored, so a vector never needs rewriting when the collection grows.
BM25_AVG_DOC_TOKENS = 40.0


# The stemmer is the Snowball English one (Porter2), the same function for the vectors
# stored on the write path, the query's terms in recall and the answer coverage that judges
# recall (tools/eval/coverage.py): one definition of "the same word". It is the one
# third-party import of the domain (see .importlinter): an algorithm and its tables, with no
# I/O and no state, as pure as the standard library's `re` and `zlib` beside it. It found
# more evidence than the light stemmer it replaced (BM25 alone, on LoCoMo).
_SNOWBALL = snowballstemmer.stemmer("english")
# Names the stemmer and the word rules in every node's derivation: a node tokenized
# otherwise is rebuilt. "+unicode-1": words of every script (`domain/scripts.py`), where
# "snowball-en" kept [a-z0-9] only.
LEXICON = "snowball-en+unicode-1"


# Conversations reuse a small vocabulary: stemming a word again costs more than looking it
# up, and the write path stems every word of every memory it indexes.
@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """The Snowball English stem of a lower-case word, its possessive "'s" dropped first:
    "loves", "loved", "loving" and "love" all become "love"; "stories" becomes "stori"."""
    return str(_SNOWBALL.stemWord(word.removesuffix("'s")))


def tokenize(text: str) -> list[str]:
    """Lower-cased, stemmed content words of `text`, in order, stopwords removed."""
    return list(_content_words(text))


# The recall gate tokenizes the same memories' texts on every request that finds them.
@lru_cache(maxsize=16_384)
def _content_words(text: str) -> tuple[str, ...]:
    if text.isascii():  # most text: the same words as `words` finds, without folding
        return tuple(stem(w) for w in ascii_words(text) if w not in STOPWORDS)
    return tuple(term for word in words(text) if (term := _term(word)) is not None)


def _term(word: Word) -> str | None:
    """The index term of a word: English words stemmed, stopwords none, others as read."""
    if not word.english:
        return word.text
    return None if word.text in STOPWORDS else stem(word.text)


# Recall matches the query's terms against the same summaries on every request that reads
# them: a set built once per text, not a list per request to intersect with.
@lru_cache(maxsize=16_384)
def term_set(text: str) -> frozenset[str]:
    """The distinct words `tokenize(text)` gives."""
    return frozenset(_content_words(text))


def term_id(token: str) -> int:
    """A stable 31-bit id for a token (same on every run and machine)."""
    return zlib.crc32(token.encode()) & 0x7FFFFFFF


def document_weights(text: str) -> dict[int, float]:
    """BM25 term-frequency weights of a stored text, keyed by term id."""
    tokens = tokenize(text)
    if not tokens:
        return {}
    norm = BM25_K1 * (1 - BM25_B + BM25_B * len(tokens) / BM25_AVG_DOC_TOKENS)
    counts = Counter(term_id(t) for t in tokens)
    return {tid: tf * (BM25_K1 + 1) / (tf + norm) for tid, tf in counts.items()}


def query_weights(terms: Iterable[str]) -> dict[int, float]:
    """One unit of weight per distinct query term (`tokenize` gave the terms)."""
    return dict.fromkeys(sorted({term_id(t) for t in terms}), 1.0)
