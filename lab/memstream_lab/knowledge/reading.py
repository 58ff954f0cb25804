"""How much of what the set annotates a reader reads: each annotated fact against the facts
the offline rules read from the message stating it (the rules alone: not the frames, which
need the embedder).

    python -m memstream_lab.knowledge.reading [--only ku35-ku44]

An annotated fact is *read* when a fact of that message names its value (the annotation's
words all among the fact's value words, or the other way round), and *slotted* when that
fact also has its subject (the speaker, a name, someone by relation: compared by the name
shown) and its attribute (the annotation's noun read as the LLM backend reads one,
`fact_output.read_attribute`). The knowledge-update runs score what recall and the facts
route make of the facts; this scores the reading alone, with no stack, so a change to the
rules (or another reader) can be judged before a run. The rules are fitted to ku01-ku34;
ku35-ku44 were written blind to them.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from memstream.adapters.llm.fact_output import read_attribute
from memstream.domain.fact_extraction import extract_facts
from memstream.domain.facts import AtomicFact
from memstream.domain.lexical import tokenize
from memstream.domain.models import SourceMessage
from memstream_lab.knowledge.dataset import (
    DATA_DIR,
    Conversation,
    event_id,
    ids_in,
    load_all,
    turn_events,
)


@dataclass(frozen=True)
class Reading:
    """How many annotated facts a split holds, and of them how many were read and slotted."""

    annotated: int
    read: int
    slotted: int

    def as_dict(self) -> dict[str, float | int]:
        share = (lambda n: round(n / self.annotated, 3)) if self.annotated else (lambda n: 0.0)
        return {
            "annotated": self.annotated,
            "read": self.read,
            "slotted": self.slotted,
            "read_share": share(self.read),
            "slotted_share": share(self.slotted),
        }


def messages_of(conversation: Conversation) -> dict[str, SourceMessage]:
    """Every turn of the conversation as the message the pipeline would see, by event id."""
    return {
        e["event_id"]: SourceMessage(
            e["event_id"], e["speaker"], e["role"], e["text"], datetime.fromisoformat(e["ts"])
        )
        for e in turn_events(conversation)
    }


def score_reading(conversations: Iterable[Conversation]) -> Reading:
    """The rules' reading of every annotated fact's message, scored against it."""
    annotated = read = slotted = 0
    for conversation in conversations:
        messages = messages_of(conversation)
        for fact in conversation["facts"]:
            message = messages[event_id(fact)]
            facts = extract_facts((message,), user_id=conversation["user_id"])
            naming = [f for f in facts if _names_value(f, fact["value"])]
            annotated += 1
            read += bool(naming)
            slotted += any(_in_slot(f, fact) for f in naming)
    return Reading(annotated, read, slotted)


def _names_value(fact: AtomicFact, value: str) -> bool:
    said, wanted = set(tokenize(fact.value)), set(tokenize(value))
    return bool(said and wanted) and (wanted <= said or said <= wanted)


def _in_slot(fact: AtomicFact, annotated: dict[str, str]) -> bool:
    subject = annotated["subject"].casefold()
    named = fact.subject_name.casefold()
    return read_attribute(annotated["attribute"]) == fact.attribute and (
        named == subject or named.endswith(subject.partition("'s ")[2] or subject)
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="conversation ids and ranges, e.g. ku35-ku44")
    args = parser.parse_args(argv)
    chosen = load_all(DATA_DIR)
    if args.only:
        wanted = set(ids_in(args.only))
        chosen = [c for c in chosen if c["conversation_id"] in wanted]
    print(json.dumps(score_reading(chosen).as_dict(), indent=2))


if __name__ == "__main__":
    main()
