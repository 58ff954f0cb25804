"""The set's own facts, read as the LLM backend reads a model's answer: what everything after
the reading (keys, supersession, late messages, endings, recall, the facts route) makes of a
reader that misses nothing the set annotates (`memstream eval knowledge --reader gold`).

Each L1's facts are the annotated facts its messages state, handed to the LLM backend's
own output path (`adapters.llm.fact_output.facts_of`) exactly as a model's answer would
be. Everything else (summaries, the plan, the gate) is the offline backend's, so a gold run
differs from an offline one only in who reads the facts. Its figures are a ceiling for the
reading, not a result of memstream's: a gap between them is the reader's; what a gold run
still misses is the rest of the pipeline's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from memstream.adapters.llm.fact_output import facts_of
from memstream.adapters.llm.offline import OfflineLanguageModel
from memstream.bootstrap import Container
from memstream.domain.facts import Certainty, FactReading
from memstream.domain.models import MemoryNode
from memstream_lab.knowledge.dataset import Conversation, event_id

# What the L1s of a gold run record as their extraction (`derivation.extraction`).
GOLD_EXTRACTION = "kuset-gold"
# A gold run is a deployment with an LLM endpoint whose model is the set itself: the write
# path asks the LLM backend for facts only where one is configured. Nothing is sent to it.
_GOLD_ENDPOINT = "http://kuset-gold.invalid/v1"


@dataclass
class GoldRead:
    """One annotated fact in the shape of a model's reading (`fact_output.ReadFact`, whose
    fields a frozen class would not match)."""

    subject: str
    attribute: str
    value: str
    since: str | None
    certainty: Certainty
    source_ids: list[str] = field(default_factory=list)
    relation_of: str | None = None
    negated: bool = False


def gold_reads(conversation: Conversation) -> dict[str, list[GoldRead]]:
    """The conversation's annotated facts by the event id of the message stating each."""
    reads: dict[str, list[GoldRead]] = {}
    for fact in conversation["facts"]:
        stating = event_id(fact)
        owner, _, relation = fact["subject"].partition("'s ")
        reads.setdefault(stating, []).append(
            GoldRead(
                subject=relation or owner,
                relation_of=owner if relation else None,
                attribute=fact["attribute"],
                value=fact["value"],
                negated=fact["change"] == "ended",
                since=fact["valid_from"][:10],
                certainty="stated" if fact["stated"] == "explicit" else "implied",
                source_ids=[stating],
            )
        )
    return reads


class GoldFactReader(OfflineLanguageModel):
    """The offline backend, but an L1's facts are those the set annotates on its messages."""

    def __init__(self, conversations: Iterable[Conversation]) -> None:
        self._reads: dict[str, list[GoldRead]] = {}
        for conversation in conversations:
            self._reads.update(gold_reads(conversation))

    async def read_facts(self, leaf: MemoryNode) -> FactReading:
        reads = [read for m in leaf.messages for read in self._reads.get(m.event_id, ())]
        return FactReading(facts_of(reads, leaf), GOLD_EXTRACTION)


def gold_container(container: Container, conversations: Iterable[Conversation]) -> Container:
    """`container` with the gold reader as its language model, configured as an endpoint so
    that the write path asks it for each L1's facts."""
    llm: Any = container.settings.llm.model_copy(
        update={"base_url": _GOLD_ENDPOINT, "model": GOLD_EXTRACTION}
    )
    settings = container.settings.model_copy(update={"llm": llm})
    return replace(container, settings=settings, llm=GoldFactReader(conversations))
