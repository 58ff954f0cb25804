"""The turns an adapter publishes: numbered, valid for the catalog, forgettable by id."""

from __future__ import annotations

from memstream.contracts.catalog import load_catalog
from memstream.integrations.session_turns import MAX_TEXT, SessionTurns

CATALOG = load_catalog("")


def test_turns_are_numbered_named_and_valid() -> None:
    turns = SessionTurns("ann", "s1", next_seq=4, user_name="Ann", assistant_name="Bot")
    said = turns.turn("user", "I adopted a cat.", event_id="m-1")
    replied = turns.turn("assistant", "x" * (MAX_TEXT + 10))

    assert (said["seq"], said["speaker"], said["event_id"]) == (4, "Ann", "m-1")
    assert (replied["seq"], replied["speaker"], len(replied["text"])) == (5, "Bot", MAX_TEXT)
    assert replied["event_id"] != said["event_id"]
    assert CATALOG.validate(None, said) == [] and CATALOG.validate(None, replied) == []


def test_a_speaker_defaults_to_the_role() -> None:
    assert SessionTurns("ann", "s1").turn("assistant", "Hi")["speaker"] == "assistant"


def test_forgetting_names_only_what_was_published_and_only_once() -> None:
    turns = SessionTurns("ann", "s1")
    ids = [str(turns.turn("user", text)["event_id"]) for text in ("a", "b", "c")]

    last = turns.forget_last(ids[2])
    unknown = turns.forget_last("never-sent")
    rest = turns.forget_all()

    assert last is not None and last["message_ids"] == [ids[2]]
    assert unknown is None
    assert rest is not None and rest["message_ids"] == ids[:2]
    assert CATALOG.validate(None, rest) == []
    assert turns.forget_all() is None
