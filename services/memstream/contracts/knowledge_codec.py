"""Storage format of what an L1 says: its atomic facts and entity surfaces, as JSON.

Times keep their offsets (a fact's validity is compared across messages); the decoders
assume a value these encoders wrote and only convert types.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import Any, cast

from memstream.contracts.codec import parse_ts
from memstream.domain.entities import EntityKind
from memstream.domain.entity_index import LeafEntities, Surface
from memstream.domain.fact_changes import facts_needed
from memstream.domain.fact_heads import SlotHead
from memstream.domain.facts import AtomicFact, Certainty


def encode_fact(fact: AtomicFact) -> dict[str, Any]:
    encoded: dict[str, Any] = {
        "fact_id": fact.fact_id,
        "user_id": fact.user_id,
        "subject": fact.subject,
        "subject_name": fact.subject_name,
        "attribute": fact.attribute,
        "value": fact.value,
        "text": fact.text,
        "valid_from": fact.valid_from.isoformat(),
        "recorded_at": fact.recorded_at.isoformat(),
        "certainty": fact.certainty,
        "source_ids": list(fact.source_ids),
        "negated": fact.negated,
        "valid_to": fact.valid_to.isoformat() if fact.valid_to else None,
        "supersedes": fact.supersedes,
        "superseded_by": fact.superseded_by,
    }
    if fact.statements != 1:  # a merged version; an observation is one statement
        encoded["statements"] = fact.statements
    return encoded


def decode_fact(value: dict[str, Any]) -> AtomicFact:
    return AtomicFact(
        fact_id=value["fact_id"],
        user_id=value["user_id"],
        subject=value["subject"],
        subject_name=value["subject_name"],
        attribute=value["attribute"],
        value=value["value"],
        text=value["text"],
        valid_from=parse_ts(value["valid_from"]),
        recorded_at=parse_ts(value["recorded_at"]),
        certainty=cast(Certainty, value.get("certainty", "stated")),
        source_ids=tuple(value.get("source_ids", ())),
        negated=bool(value.get("negated", False)),
        valid_to=parse_ts(value["valid_to"]) if value.get("valid_to") else None,
        supersedes=value.get("supersedes"),
        superseded_by=value.get("superseded_by"),
        statements=int(value.get("statements", 1)),
    )


def encode_head(head: SlotHead) -> str:
    return json.dumps(
        {"last": encode_fact(head.last), "tails": [encode_fact(v) for v in head.tails]}
    )


def decode_head(doc: str) -> SlotHead:
    value = json.loads(doc)
    return SlotHead(decode_fact(value["last"]), tuple(decode_fact(v) for v in value["tails"]))


def decode_slot_facts(
    docs: Mapping[str, str], slots: Collection[tuple[str, str]], leaf_ids: Collection[str]
) -> dict[str, tuple[AtomicFact, ...]]:
    """Of the stored facts by L1 id (each L1's list as JSON), those a commit stating facts of
    `slots` and saying again or dropping `leaf_ids` needs (`fact_changes.facts_needed`), by
    L1 id: only they are decoded, the costly part of reading a user's facts."""
    parsed = {leaf_id: cast(list[dict[str, Any]], json.loads(doc)) for leaf_id, doc in docs.items()}
    said = [(f["subject"], f["attribute"]) for i in leaf_ids for f in parsed.get(i, ())]
    wanted, whole = facts_needed(slots, said)
    found: dict[str, tuple[AtomicFact, ...]] = {}
    for leaf_id, facts in parsed.items():
        chosen = tuple(
            decode_fact(f)
            for f in facts
            if f["subject"] in whole or (f["subject"], f["attribute"]) in wanted
        )
        if chosen:
            found[leaf_id] = chosen
    return found


def encode_leaf_entities(leaf: LeafEntities) -> dict[str, Any]:
    return {
        "surfaces": [
            {
                "key": s.key,
                "name": s.name,
                "kind": s.kind,
                "count": s.count,
                "weak": s.weak,
                "speaker": s.speaker,
                "first": s.first.isoformat(),
                "last": s.last.isoformat(),
            }
            for s in leaf.surfaces
        ],
        "links": [list(link) for link in leaf.links],
    }


def decode_leaf_entities(value: dict[str, Any]) -> LeafEntities:
    surfaces = tuple(
        Surface(
            key=s["key"],
            name=s["name"],
            kind=cast(EntityKind, s["kind"]),
            count=int(s["count"]),
            weak=bool(s["weak"]),
            speaker=bool(s["speaker"]),
            first=parse_ts(s["first"]),
            last=parse_ts(s["last"]),
        )
        for s in value.get("surfaces", ())
    )
    links = tuple((str(a), str(b)) for a, b in value.get("links", ()))
    return LeafEntities(surfaces, links)
