"""The set's own facts, read as the LLM backend reads a model's answer (`--reader gold`)."""

from __future__ import annotations

from datetime import datetime

from memstream.domain.facts import speaker_key
from memstream.domain.models import Level, MemoryNode, SourceMessage
from memstream_lab.eval.knowledge.gold_reader import GOLD_EXTRACTION, GoldFactReader, gold_reads
from memstream_lab.knowledge.dataset import load_all


def _leaf(conversation: dict, *event_ids: str) -> MemoryNode:
    turns = {
        f"{s['session_id']}-{t['seq']}": t for s in conversation["sessions"] for t in s["turns"]
    }
    messages = tuple(
        SourceMessage(
            i, turns[i]["speaker"], turns[i]["role"], turns[i]["text"],
            datetime.fromisoformat(turns[i]["ts"]),
        )
        for i in event_ids
    )  # fmt: skip
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
    event_id = f"{first['session_id']}-{first['seq']}"
    reading = await GoldFactReader([ku36]).read_facts(_leaf(ku36, event_id))
    assert reading.extraction == GOLD_EXTRACTION
    [fact] = [f for f in reading.facts if f.attribute == "medication"]
    assert (fact.subject, fact.value, fact.source_ids) == (
        speaker_key("Bashir"),
        first["value"],
        (event_id,),
    )
    # A message no annotation names gives nothing.
    unnamed = next(
        f"{s['session_id']}-{t['seq']}"
        for s in ku36["sessions"]
        for t in s["turns"]
        if t["role"] == "assistant"
    )
    assert (await GoldFactReader([ku36]).read_facts(_leaf(ku36, unnamed))).facts == ()
