"""A leaf too long for recall's budget, returned as an excerpt around what matched: pure.

Recall fits whole memories into a token budget; a leaf longer than the whole budget could
never be returned and was skipped, with the caller none the wiser. Such a leaf is cut
instead to the passage that matches the query, within `EXCERPT_SHARE` of the budget (so
the memories beside it still have room): the message's sentences (and, for a sentence too
long, runs of its words, or of its characters for text without spaces) are scored by how
many of the query's terms they hold, and the window grows around the best one, a passage
before then one after, while it fits. Without a matching term (an emoji-only message, a
question in other words), the window starts at the beginning of the message: recall has
no per-passage vectors to judge dense similarity by. The excerpt keeps the leaf's date and
the speaker, and marks its cuts with "…"; the recalled memory carries the leaf's full size.

Only leaves that exceed the whole budget are cut: a leaf that fits stays whole, so recall
over ordinary conversations is unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence, Set
from dataclasses import dataclass, replace
from functools import lru_cache

from memstream.domain.calendar import spelled_day
from memstream.domain.lexical import term_set
from memstream.domain.models import Level, MemoryNode
from memstream.domain.ranking import RecalledMemory
from memstream.domain.segment_text import SENTENCE_BREAK
from memstream.domain.tokens import count_tokens, count_tokens_once

# The share of the budget an excerpt may take.
EXCERPT_SHARE = 0.5
# A passage is a sentence, or a run of its words, of at most this many tokens: small enough
# to aim at the sentence that matched, large enough to read.
PASSAGE_TOKENS = 48
# Below this, an excerpt would be the header and a few words: better left out (and counted).
MIN_EXCERPT_TOKENS = 24
CUT = "…"
_DATE_HEADER = re.compile(r"^\d{1,2} [A-Z][a-z]+ \d{4}, ")


@dataclass(frozen=True, slots=True)
class _Passage:
    message: int  # which message of the leaf
    text: str
    tokens: int  # count_tokens(text)


def excerpt_long_leaves(
    memories: Sequence[RecalledMemory], terms: Set[str], max_tokens: int
) -> list[RecalledMemory]:
    """The memories, each leaf longer than `max_tokens` cut to an excerpt around `terms`
    within `EXCERPT_SHARE` of it (left whole when no excerpt fits)."""
    room = int(max_tokens * EXCERPT_SHARE)
    out: list[RecalledMemory] = []
    for memory in memories:
        node = memory.node
        full = count_tokens(node.text)
        too_long = node.level is Level.SEGMENT and full > max_tokens
        cut = excerpt(node, terms, room) if too_long else None
        out.append(memory if cut is None else replace(memory, node=cut, full_tokens=full))
    return out


def shorten_leaves(
    memories: Sequence[RecalledMemory],
    terms: Set[str],
    max_leaf_tokens: int,
    whole: int = 0,
    budget: int | None = None,
) -> list[RecalledMemory]:
    """The memories, each leaf longer than `max_leaf_tokens` but the `whole` best cut to an
    excerpt of at most that many tokens around `terms` (left whole when no excerpt fits).
    For a question that gathers facts: the budget then holds more distinct leaves, the best
    whole and the rest by their best passage. Leaves are cut best first until what they
    take reaches twice `budget` tokens: the fit skips memories that do not fit what is left
    and takes shorter ones after them, so cuts just past the budget still fill its gaps
    (up to the budget alone lost multi-hop evidence on LoCoMo), and cutting costs a
    tokenization per passage tried."""
    if max_leaf_tokens <= 0:
        return list(memories)
    leaves = sorted((m for m in memories if m.node.level is Level.SEGMENT), key=lambda m: -m.score)
    cuts: dict[str, RecalledMemory] = {}
    spent = 0
    for rank, memory in enumerate(leaves):
        if budget is not None and spent >= 2 * budget:
            break
        full = count_tokens(memory.node.text)
        cut = None
        if rank >= whole and full > max_leaf_tokens:
            cut = excerpt(memory.node, terms, max_leaf_tokens)
        if cut is not None:
            cuts[memory.node.id] = replace(memory, node=cut, full_tokens=full)
        spent += count_tokens_once(cut.text) if cut is not None else full
    return [cuts.get(m.node.id, m) for m in memories]


def omitted_leaves(candidates: Iterable[RecalledMemory], returned: Iterable[RecalledMemory]) -> int:
    """How many leaves among the candidates (what the gate judged relevant) the answer lacks,
    whole or as an excerpt: what the budget left out."""
    kept = {m.node.id for m in returned}
    return sum(1 for m in candidates if m.node.level is Level.SEGMENT and m.node.id not in kept)


def excerpt(node: MemoryNode, terms: Set[str], max_tokens: int) -> MemoryNode | None:
    """The leaf with its text cut to the passages around the best match of `terms`, within
    `max_tokens`; None when not even a passage fits."""
    if max_tokens < MIN_EXCERPT_TOKENS:
        return None
    header, speakers, texts = _parts(node)
    passages = [p for i, text in enumerate(texts) for p in _passages(i, text)]
    if not passages:
        return None
    best = max(range(len(passages)), key=lambda i: (_matches(passages[i], terms), -i))
    message = passages[best].message
    own = [i for i, p in enumerate(passages) if p.message == message]
    first, last = best, best
    said_as = f'{speakers[message]}: ""' if speakers[message] else ""

    def render(lo: int, hi: int) -> str:
        body = " ".join(passages[i].text for i in range(lo, hi + 1))
        body = (CUT if lo > own[0] else "") + body + (CUT if hi < own[-1] else "")
        said = f'{speakers[message]}: "{body}"' if speakers[message] else body
        return header + said

    # What `render` gives counts its parts' sum (`count_tokens_once`: the header ends in a
    # space, a quote or a cut mark stands at each joint, passages are joined by spaces), so
    # a window is counted without rendering and counting it again at each step of growth.
    costs = [p.tokens for p in passages]
    frame, cut_mark = count_tokens_once(header + said_as), count_tokens_once(CUT)

    def rendered_tokens(lo: int, hi: int) -> int:
        cuts = (lo > own[0]) + (hi < own[-1])
        return frame + cut_mark * cuts + sum(costs[lo : hi + 1])

    if rendered_tokens(first, last) > max_tokens:
        return None
    grew = True
    while grew:
        grew = False
        if first > own[0] and rendered_tokens(first - 1, last) <= max_tokens:
            first, grew = first - 1, True
        if last < own[-1] and rendered_tokens(first, last + 1) <= max_tokens:
            last, grew = last + 1, True
    # Only the message shown is recalled: a leaf of several messages keeps its id alone.
    shown = node.messages[message].event_id if node.messages else None
    sources = (shown,) if shown in node.source_ids else node.source_ids
    return replace(node, text=render(first, last), source_ids=sources)


def _parts(node: MemoryNode) -> tuple[str, list[str], list[str]]:
    """The date header, and each message's speaker and text; a leaf without its messages is
    one text with no speaker."""
    if not node.messages:
        return "", [""], [node.text]
    # The leaf's own date (the user's day, as `segment_text` wrote it) when it opens with one.
    dated = _DATE_HEADER.match(node.text)
    header = dated.group() if dated else f"{spelled_day(node.messages[0].ts)}, "
    return header, [m.speaker for m in node.messages], [m.text for m in node.messages]


def _matches(passage: _Passage, terms: Set[str]) -> int:
    return len(term_set(passage.text) & terms)


def _passages(message: int, text: str) -> list[_Passage]:
    out: list[_Passage] = []
    for sentence in SENTENCE_BREAK.split(" ".join(text.split("\n"))):
        pieces = _pieces(" ".join(sentence.split()))
        out += [_Passage(message, part, tokens) for part, tokens in pieces]
    return out


# Conversations reuse their words: counted once each, apart from the cache of memories'
# texts, which the words of every long message cut would otherwise churn.
_word_tokens = lru_cache(maxsize=8_192)(count_tokens_once)


def _pieces(sentence: str) -> list[tuple[str, int]]:
    """The sentence in runs of words of at most `PASSAGE_TOKENS` (a word longer than that,
    in slices of characters: no character counts more than one token), each with its
    count."""
    if not sentence:
        return []
    whole = count_tokens_once(sentence)
    if whole <= PASSAGE_TOKENS:
        return [(sentence, whole)]
    pieces: list[tuple[str, int]] = []
    run: list[str] = []
    run_tokens = 0  # of " ".join(run): the sum of its parts' (`count_tokens_once`)
    for word in re.findall(r"\S+", sentence):
        slices = [word[i : i + PASSAGE_TOKENS] for i in range(0, len(word), PASSAGE_TOKENS)]
        for part in slices:
            tokens = _word_tokens(part)
            if run and run_tokens + tokens > PASSAGE_TOKENS:
                pieces.append((" ".join(run), run_tokens))
                run, run_tokens = [], 0
            run.append(part)
            run_tokens += tokens
    if run:
        pieces.append((" ".join(run), run_tokens))
    return pieces
