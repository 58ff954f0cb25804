"""`forget.v1` naming messages: what the schema accepts and how it decodes."""

from __future__ import annotations

import pytest

from memstream.contracts.catalog import load_catalog
from memstream.contracts.codec import decode_input, encode_forget
from memstream.domain.models import ForgetRequested

TURNS = "memstream.turns.v1"


def test_without_message_ids_it_is_the_user_forget() -> None:
    value = encode_forget("ana")
    assert value == {"type": "forget.v1", "user_id": "ana"}
    assert load_catalog().validate(TURNS, value) == []
    assert decode_input(value) == ForgetRequested("ana", ())


def test_message_ids_travel_once_each_in_order() -> None:
    value = encode_forget("ana", ["m2", "m1", "m2"])
    assert value["message_ids"] == ["m2", "m1"]
    assert load_catalog().validate(TURNS, value) == []
    assert decode_input(value) == ForgetRequested("ana", ("m2", "m1"))


@pytest.mark.parametrize(
    "ids",
    [[], [str(i) for i in range(101)], ["m1", "m1"], [""], ["x" * 201], [7]],
    ids=["empty", "too-many", "repeated", "blank", "too-long", "not-a-string"],
)
def test_bad_message_id_lists_are_refused(ids: list[object]) -> None:
    value = {"type": "forget.v1", "user_id": "ana", "message_ids": ids}
    assert load_catalog().validate(TURNS, value) != []
