"""The set's own facts, read as the LLM backend reads a model's answer (`--reader gold`)."""

from __future__ import annotations

from memstream.domain.facts import speaker_key
from memstream.domain.models import Level, MemoryNode
from memstream_lab.eval.knowledge.gold_reader import GOLD_EXTRACTION, GoldFactReader, gold_reads
from memstream_lab.knowledge.dataset import event_id, load_all
from memstream_lab.knowledge.reading import messages_of


def _leaf(conversation: dict, *event_ids: str) -> MemoryNode:
    said = messages_of(conversation)
    messages = tuple(said[i] for i in event_ids)
    at = messages[0].ts
    return MemoryNode(
        "l1", conversation["user_id"], Level.SEGMENT, at, at, "...",
        source_ids=event_ids, messages=messages,
    )  # fmt: skip


def test_each_annotated_fact_is_read_from_the_message_stating_it() -> None:
    [ku36] = [c for c in load_all() if c["conversation_id"] == "ku36"]
    reads = gold_reads(ku36)
    assert sum(len(r) for r in reads.values()) == len(ku36["facts"])
    # "Bashir's father" is someone by relation to Bashir.
    father = [r for rs in reads.values() for r in rs if r.relation_of == "Bashir"]
    assert father and {r.subject for r in father} == {"father"}


async def test_a_leaf_gets_the_facts_of_its_messages_keyed_as_a_models_would_be() -> None:
    [ku36] = [c for c in load_all() if c["conversation_id"] == "ku36"]
    annotated = [f for f in ku36["facts"] if f["subject"] == "Bashir"]
    first = annotated[0]
    stating = event_id(first)
    reading = await GoldFactReader([ku36]).read_facts(_leaf(ku36, stating))
    assert reading.extraction == GOLD_EXTRACTION
    [fact] = [f for f in reading.facts if f.attribute == "medication"]
    assert (fact.subject, fact.value, fact.source_ids) == (
        speaker_key("Bashir"),
        first["value"],
        (stating,),
    )
    # A message no annotation names gives nothing.
    unnamed = next(i for i, m in messages_of(ku36).items() if m.role == "assistant")
    assert (await GoldFactReader([ku36]).read_facts(_leaf(ku36, unnamed))).facts == ()
