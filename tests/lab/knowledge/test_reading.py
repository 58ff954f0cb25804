"""The rules' reading of the set, scored against its annotations without a stack."""

from __future__ import annotations

from memstream_lab.knowledge.reading import Reading, score_reading


def conversation(text: str, **fact: str) -> dict:
    turn = {"seq": 0, "speaker": "Maya", "role": "user", "text": text,
            "ts": "2024-04-02T10:00:00+00:00"}  # fmt: skip
    annotated = {"subject": "Maya", "session_id": "s1", "seq": 0, **fact}
    session = {"session_id": "s1", "published_order": 1, "turns": [turn]}
    return {"user_id": "u1", "tz": "UTC", "sessions": [session], "facts": [annotated]}


def test_a_value_the_rules_read_in_its_slot_counts_as_read_and_slotted() -> None:
    moved = conversation("We moved to Berlin last month!", attribute="city", value="Berlin")
    assert score_reading([moved]) == Reading(annotated=1, read=1, slotted=1)
    # Read, but in another slot than the annotation's: read, not slotted.
    elsewhere = conversation("We moved to Berlin last month!", attribute="employer", value="Berlin")
    assert score_reading([elsewhere]) == Reading(annotated=1, read=1, slotted=0)


def test_a_value_told_in_words_no_rule_reads_is_not_read() -> None:
    # The sport is only implied: no fact of the message names rowing.
    regatta = conversation("We won our first regatta!", attribute="sport", value="rowing")
    assert score_reading([regatta]) == Reading(annotated=1, read=0, slotted=0)
    assert Reading(0, 0, 0).as_dict()["read_share"] == 0.0
