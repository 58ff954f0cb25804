"""An excerpt counts its windows by their parts' counts, and cuts exactly as it did when it
rendered and counted every window it tried (the reference below is that code)."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit import fakes

from memstream.domain import excerpt as excerpts
from memstream.domain.excerpt import CUT, MIN_EXCERPT_TOKENS, PASSAGE_TOKENS, excerpt
from memstream.domain.lexical import term_set
from memstream.domain.models import MemoryNode
from memstream.domain.segment_text import SENTENCE_BREAK
from memstream.domain.tokens import count_tokens, count_tokens_once

AT = datetime(2024, 10, 19, 9, 30, tzinfo=UTC)


def reference_pieces(sentence: str) -> list[str]:
    if not sentence:
        return []
    if count_tokens(sentence) <= PASSAGE_TOKENS:
        return [sentence]
    pieces: list[str] = []
    run: list[str] = []
    for word in re.findall(r"\S+", sentence):
        slices = [word[i : i + PASSAGE_TOKENS] for i in range(0, len(word), PASSAGE_TOKENS)]
        for part in slices:
            if run and count_tokens(" ".join([*run, part])) > PASSAGE_TOKENS:
                pieces.append(" ".join(run))
                run = []
            run.append(part)
    if run:
        pieces.append(" ".join(run))
    return pieces


def reference_excerpt(node: MemoryNode, terms: frozenset[str], max_tokens: int) -> str | None:
    """The excerpt's text as the code before counted it: each window rendered and counted."""
    if max_tokens < MIN_EXCERPT_TOKENS:
        return None
    header, speakers, texts = excerpts._parts(node)
    passages = [
        (i, part)
        for i, text in enumerate(texts)
        for sentence in SENTENCE_BREAK.split(" ".join(text.split("\n")))
        for part in reference_pieces(" ".join(sentence.split()))
    ]
    if not passages:
        return None
    best = max(range(len(passages)), key=lambda i: (len(term_set(passages[i][1]) & terms), -i))
    message = passages[best][0]
    own = [i for i, p in enumerate(passages) if p[0] == message]
    first, last = best, best

    def render(lo: int, hi: int) -> str:
        body = " ".join(passages[i][1] for i in range(lo, hi + 1))
        body = (CUT if lo > own[0] else "") + body + (CUT if hi < own[-1] else "")
        said = f'{speakers[message]}: "{body}"' if speakers[message] else body
        return header + said

    if count_tokens(render(first, last)) > max_tokens:
        return None
    grew = True
    while grew:
        grew = False
        if first > own[0] and count_tokens(render(first - 1, last)) <= max_tokens:
            first, grew = first - 1, True
        if last < own[-1] and count_tokens(render(first, last + 1)) <= max_tokens:
            last, grew = last + 1, True
    return render(first, last)


WORDS = st.sampled_from(
    [
        *("bike", "lock", "3907", "garage", "combination", "attic", "radio", "x" * 60, "a1b2"),
        *("déjà", "vu", "🚲", "東京に", "well,", "(really)", "12.5", "don't", "…", '"quoted"'),
    ]
)
SEPARATORS = st.sampled_from([" ", " ", " ", ". ", "! ", "? ", "\n", ", ", "  "])
TEXT = st.lists(st.tuples(WORDS, SEPARATORS), min_size=0, max_size=160).map(
    lambda pairs: "".join(w + s for w, s in pairs).strip()
)


@settings(max_examples=300, deadline=None)
@given(
    texts=st.lists(TEXT, min_size=1, max_size=3),
    asked=st.lists(WORDS, max_size=3),
    max_tokens=st.integers(0, 260),
    speaker=st.sampled_from(["Dana", "", "Jo 2", "Zoë"]),
    bare=st.booleans(),
)
def test_an_excerpt_is_what_rendering_and_counting_every_window_gave(
    texts: list[str], asked: list[str], max_tokens: int, speaker: str, bare: bool
) -> None:
    node = fakes.leaf("L1-a", *texts, at=AT, speaker=speaker)
    if bare:  # a leaf without its messages: one text, no speaker, no date line
        node = replace(node, messages=())
    terms = frozenset(t for w in asked for t in term_set(w))
    cut = excerpt(node, terms, max_tokens)
    expected = reference_excerpt(node, terms, max_tokens)
    assert (cut.text if cut is not None else None) == expected
    if cut is not None:
        assert count_tokens(cut.text) <= max_tokens


@given(left=TEXT, right=TEXT)
def test_texts_joined_by_a_space_count_their_sum(left: str, right: str) -> None:
    assert count_tokens_once(f"{left} {right}") == count_tokens_once(left) + count_tokens_once(
        right
    )
