"""Facts and entity surfaces survive the storage format, offsets and links included."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

from memstream.contracts.knowledge_codec import (
    decode_fact,
    decode_leaf_entities,
    encode_fact,
    encode_leaf_entities,
)
from memstream.domain.entity_index import read_leaf
from memstream.domain.fact_timeline import timeline_of
from memstream.domain.facts import AtomicFact, make_fact
from memstream.domain.models import SourceMessage

LISBON = timezone(timedelta(hours=1))
AT = datetime(2024, 3, 31, 1, 30, tzinfo=LISBON)


def fact(value: str, at: datetime, source: str, negated: bool = False) -> AtomicFact:
    return make_fact(
        user_id="maya",
        subject="speaker:maya",
        subject_name="Maya",
        attribute="lives_in",
        value=value,
        text=f"Maya lives in {value}",
        valid_from=at,
        recorded_at=at,
        source_ids=(source,),
        certainty="implied",
        negated=negated,
    )


def roundtrip_fact(f: AtomicFact) -> AtomicFact:
    return decode_fact(json.loads(json.dumps(encode_fact(f))))


def test_versions_keep_their_validity_links_and_offsets() -> None:
    versions = timeline_of([fact("Porto", AT, "m1"), fact("Berlin", AT + timedelta(days=9), "m2")])
    for version in versions.versions:
        back = roundtrip_fact(version)
        assert back == version
        assert back.valid_from.utcoffset() == timedelta(hours=1)
    assert roundtrip_fact(versions.versions[0]).superseded_by == versions.versions[1].fact_id
    negation = fact("Porto", AT, "m3", negated=True)
    assert roundtrip_fact(negation) == negation


def test_a_leafs_surfaces_and_links_come_back_equal() -> None:
    said = read_leaf([SourceMessage("m1", "Maya", "user", "My sister Anna moved to Porto.", AT)])
    assert said.links  # "my sister Anna": an alias stated
    assert decode_leaf_entities(json.loads(json.dumps(encode_leaf_entities(said)))) == said
