"""Changes told without a construction, recognised by meaning: the frames of slots that change.

People seldom say "I live in Boulder now"; they say "the keys to the apartment in Vila
Madalena are in my pocket" or "first training with Coogee Rovers and I'm dying". No sentence
pattern reads every such telling, so a message is compared with a few prototype sentences
per slot describing the situation (settling in a home, a first day at an employer, a new
club or team) and with some that describe no change at all (a trip, a busy day). The
message's vector is the one the segmenter embeds anyway for its L1, so the comparison costs
no embedding. When the best frame is near enough, and clearly nearer than
every other frame and every no-change sentence, and the message's statements hold exactly
one value of that slot's shape (a capitalised place or organisation), the message implies
that value from when it was said. Precision first: a question, a plan, a sentence about
someone else and a message with two candidate values imply nothing. Slots whose value is a
person's or a pet's name are not framed: conversations name other people's partners and
pets all the time ("so sorry about Max"), and a name says nothing of whose it is.

The prototypes are general descriptions, not any conversation's wording, and the
thresholds are fitted to the local model (all-MiniLM-L6-v2): another embedder's distances
differ, so the frames are read only with it (`wiring`). Pure, standard library only.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from operator import mul

from memstream.domain.fact_extraction import (
    NAMED_SUBJECT,
    SENTENCE_BREAK,
    clean_name,
    extract_facts,
    fact_sentence,
)
from memstream.domain.fact_grammar import KIN_MENTION, hypothetical
from memstream.domain.fact_time import began_at
from memstream.domain.fact_values import is_name, shaped
from memstream.domain.facts import AtomicFact, make_fact, speaker_key, value_key
from memstream.domain.knowledge import KnowledgeChange, knowledge_change
from memstream.domain.models import Level, MemoryNode, SourceMessage

# Prototypes by attribute, with the shape its value takes in the message.
FRAMES: dict[str, tuple[str, tuple[str, ...]]] = {
    "lives_in": ("place", (
        "We just moved into our new apartment in the city.",
        "Finally settled into the new town after the move.",
        "I arrived in my new city last week and I'm still unpacking boxes.",
        "Our first month living in the new neighbourhood.",
        "We bought a house there and got the keys.",
        "I relocated to another country for good.",
        "Just landed with all my luggage to start my new life here.",
        "Signed the lease on a flat in a new part of town.",
    )),
    "works_at": ("org", (
        "First day at my new company today.",
        "I started a new job at a different employer this week.",
        "My first week at the new office went well.",
        "I signed the contract with my new employer.",
        "I got hired by a new company and start on Monday.",
        "Onboarding at the new firm is a lot of paperwork.",
    )),
    "member_of": ("org", (
        "I joined a new sports club and had my first training.",
        "First match with my new team this weekend.",
        "I signed up at a new gym and have been going there every week.",
    )),
}  # fmt: skip
# What a message near a frame may be about instead: travel, a visit, a day, a plan.
NOT_A_CHANGE: tuple[str, ...] = (
    "We're on holiday and visiting the sights.",
    "I went on a trip to see my family for the weekend.",
    "Work was busy today with lots of meetings.",
    "We went to a concert last night and had fun.",
    "I'm thinking about maybe moving someday.",
    "What a great photo, thanks for sharing!",
    "I'm reading a book about history.",
)
# Cosine of the best prototype, and its lead over the best of any other frame or of
# NOT_A_CHANGE (fitted on ku01-ku17 and LoCoMo conv-26/conv-30: docs/knowledge.md).
THRESHOLD = 0.45
MARGIN = 0.10

# Capitalised words, joined by the connectors of names ("Bank of America", "Vila Madalena").
_SPAN = re.compile(
    r"(?<![\w'])[A-Z][\w'-]*(?:\s+(?:of|de|la|do|da|&)\s+[A-Z][\w'-]*|\s+[A-Z][\w'-]*)*"
)
_FIRST_PERSON = frozenset({"I", "I'm", "I've", "I'll", "I'd"})
# Weighing a change is not making it: "I'm thinking about adopting a cat".
_WEIGHING = re.compile(
    r"\b(?:thinking (?:about|of)|considering|looking (?:at|for|into)|deciding|choosing|wanting)\b",
    re.IGNORECASE,
)
# A sentence about someone else states nothing about the speaker's slots.
_SOMEONE_ELSE = re.compile(rf"^(?:he|she|they)\b|{KIN_MENTION}", re.IGNORECASE)
# Whom a message speaks to: "Thanks, Mel!", "Great news John!", "Hey, John that's awesome".
_BEFORE_ADDRESSEE = re.compile(
    r"(?:\b(?:hey|hi|hello|thanks|thank you|congrats|congratulations|news|dear|wow|oh|sorry|"
    r"yes|no|ok|okay|bye)|,),?\s+$",
    re.IGNORECASE,
)
_AFTER_ADDRESSEE = re.compile(r"\s*(?:[!?.,]|$)")
_NONE = ""  # the attribute of NOT_A_CHANGE's prototypes


@dataclass(frozen=True, slots=True)
class Frames:
    """The prototypes' unit vectors, each with its attribute ("" for no change), and what
    scores a vector against all of them at once (`similarities`; None: one sum a prototype).
    Whatever scores them must give these sums bit for bit, or a message scored at a
    threshold would imply its fact in one process and not in another."""

    prototypes: tuple[tuple[str, tuple[float, ...]], ...]
    similarities: Callable[[Sequence[float]], Sequence[float]] | None = field(
        default=None, compare=False
    )


def prototype_texts() -> list[tuple[str, str]]:
    """Every prototype with its attribute, in the order `frames_of` takes their vectors."""
    texts = [(attribute, t) for attribute, (_, said) in FRAMES.items() for t in said]
    return texts + [(_NONE, t) for t in NOT_A_CHANGE]


def frames_of(vectors: Sequence[Sequence[float]]) -> Frames:
    """The frames, given the (unit) vectors of `prototype_texts` in its order."""
    labelled = prototype_texts()
    if len(vectors) != len(labelled):
        raise ValueError("one vector per prototype")
    return Frames(tuple((a, tuple(v)) for (a, _), v in zip(labelled, vectors, strict=True)))


def may_imply(text: str) -> bool:
    """Whether a message of this text could imply a fact by its frame, whoever says it:
    its statements hold a value of a framed slot's shape. More than `implied_facts` takes
    (who speaks, and so whose names are no value, is not known here): a message it would
    read is always one of these."""
    return bool(_candidate_values(text, ()))


def leaf_facts(
    leaf: MemoryNode, vectors: Mapping[str, Sequence[float]], frames: Frames
) -> tuple[AtomicFact, ...]:
    """An L1's facts as the rules read them, and after them those its messages imply by
    their frames (`vectors`: the messages' by their text; a message without one implies
    nothing)."""
    stated = extract_facts(leaf.messages, user_id=leaf.user_id)
    implied: list[AtomicFact] = []
    for message in leaf.messages:
        vector = vectors.get(message.text)
        if vector is None:
            continue
        own = [f for f in stated if message.event_id in f.source_ids]
        implied += implied_facts(
            message, vector, frames, user_id=leaf.user_id, stated=own, speakers=leaf.speakers
        )
    return (*stated, *implied)


def framed_change(
    written: Sequence[MemoryNode],
    removed: Sequence[MemoryNode],
    vectors: Mapping[str, Sequence[float]],
    frames: Frames,
) -> KnowledgeChange:
    """`knowledge_change` with each written L1's facts read by `leaf_facts`: the rules' and
    those its messages imply by their frames."""
    read = {n.id: leaf_facts(n, vectors, frames) for n in written if n.level == Level.SEGMENT}
    return knowledge_change(written, removed, read)


def implied_facts(
    message: SourceMessage,
    vector: Sequence[float],
    frames: Frames,
    *,
    user_id: str,
    stated: Sequence[AtomicFact] = (),
    speakers: Sequence[str] = (),
) -> tuple[AtomicFact, ...]:
    """The fact `message` implies by its frame, if any: none for a slot of the speaker's
    that `stated` (the rules' facts of the message) already holds. `speakers`: who else
    takes part, whose names ("Thanks, Mel!") are no value."""
    if message.role == "assistant":
        return ()
    speaker = clean_name(message.speaker)
    values = _candidate_values(message.text, (speaker, *speakers))
    if len(values) != 1:
        return ()  # the cheap test first: most messages hold no value, or several
    attribute = _frame(vector, frames)
    if attribute is None:
        return ()
    subject = speaker_key(speaker)
    if any(f.subject == subject and f.attribute == attribute for f in stated):
        return ()
    value, sentence = values[0]
    shape = FRAMES[attribute][0]
    kept = shaped(shape, value)
    if kept is None:
        return ()
    fact = make_fact(
        user_id=user_id,
        subject=subject,
        subject_name=speaker,
        attribute=attribute,
        value=kept,
        text=fact_sentence(speaker, attribute, kept, False),
        valid_from=began_at(sentence, message.ts),
        recorded_at=message.ts,
        source_ids=(message.event_id,),
        certainty="implied",
    )
    return (fact,)


def _frame(vector: Sequence[float], frames: Frames) -> str | None:
    """The attribute whose prototype is nearest, when near enough and clearly ahead."""
    best: dict[str, float] = {}
    for (attribute, _), score in zip(frames.prototypes, similarities(vector, frames), strict=True):
        if score > best.get(attribute, -1.0):
            best[attribute] = score
    ranked = sorted(best.items(), key=lambda item: item[1], reverse=True)
    if len(ranked) < 2:
        return None
    (attribute, score), (_, second) = ranked[0], ranked[1]
    if attribute == _NONE or score < THRESHOLD or score - second < MARGIN:
        return None
    return attribute


def similarities(vector: Sequence[float], frames: Frames) -> Sequence[float]:
    """The vector's dot product with each prototype, in their order."""
    if frames.similarities is not None:
        return frames.similarities(vector)
    return [sum(map(mul, vector, prototype)) for _, prototype in frames.prototypes]


def _candidate_values(text: str, speakers: Sequence[str]) -> list[tuple[str, str]]:
    """The distinct names the message's statements hold, each with its sentence: not in a
    question, a plan or a sentence about someone else, nor a capitalised sentence opener,
    one addressed ("Thanks, Mel!") or a speaker's name or its start ("Mel" of Melanie)."""
    present = [value_key(s) for s in speakers]
    found: dict[str, tuple[str, str]] = {}
    for value, sentence in _stated_names(text):
        if not any(p.startswith(value_key(value)) for p in present):
            found.setdefault(value_key(value), (value, sentence))
    return list(found.values())


@functools.lru_cache(maxsize=4096)
def _stated_names(text: str) -> tuple[tuple[str, str], ...]:
    """Every name in the message's statements, with its sentence, whoever speaks. Kept for
    the last few thousand texts: the write path asks it of a message twice, where it is
    embedded (`may_imply`) and where its frame is read."""
    found: list[tuple[str, str]] = []
    for sentence in SENTENCE_BREAK.split(text.replace("\u2019", "'")):
        sentence = sentence.strip()
        names = list(_names_in(sentence))
        if names and not _states_nothing_of_the_speaker(sentence):
            found += [(name, sentence) for name in names]
    return tuple(found)


def _names_in(sentence: str) -> Iterator[str]:
    for match in _SPAN.finditer(sentence):
        value = match.group(0).removesuffix("'s")
        words = value.split()
        if match.start() == 0:
            # A sentence's first word may be any word ("Landed", "Meet Pickles"), but an
            # article is none ("The YMCA on 14th has a pool").
            if words[0] != "The" or len(words) == 1:
                continue
            value, words = " ".join(words[1:]), words[1:]
        if words[0] in _FIRST_PERSON or not is_name(words):
            continue
        if _addressed(sentence, match):
            continue
        yield value


def _addressed(sentence: str, match: re.Match[str]) -> bool:
    """Whether the name is the one spoken to: after a greeting, or set off by commas."""
    before = _BEFORE_ADDRESSEE.search(sentence, 0, match.start())
    if before is None:
        return False
    return before.group(0).lstrip()[:1] != "," or bool(
        _AFTER_ADDRESSEE.match(sentence, match.end())
    )


def _states_nothing_of_the_speaker(sentence: str) -> bool:
    """A question, a plan, a change weighed, or a sentence about someone else."""
    return (
        sentence.endswith("?")
        or hypothetical(sentence) is not None
        or _WEIGHING.search(sentence) is not None
        or _SOMEONE_ELSE.search(sentence) is not None
        or NAMED_SUBJECT.search(sentence) is not None  # "Tom just landed in Lisbon"
    )
