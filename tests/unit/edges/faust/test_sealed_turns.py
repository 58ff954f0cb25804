"""Turns sealed by their producers, opened before decoding: a sealed turn reaches the handler
as the turn it hides, with its record as it came; a forgotten user's turn is dropped and
counted, with no dead letter; an envelope that does not open is dead-lettered as it came."""

from __future__ import annotations

from collections.abc import Collection

from memstream.contracts.records import Consumed, RawEvent
from memstream.contracts.sealed import new_data_key
from memstream.contracts.sealed_turns import seal_turn, turn_public_key
from memstream.domain.models import InputEvent
from memstream.edges.faust.app import consume_batch
from memstream.edges.faust.sealed_turns import SealedTurnOpener

from .test_decoding import NO_WAIT, TURN, decode_turn, raw


class Keys:
    """`ports.DataKeys` over a dict; counts the lookups."""

    def __init__(self, keys: dict[str, bytes]) -> None:
        self.keys = keys
        self.lookups = 0

    async def data_keys(self, user_ids: Collection[str]) -> dict[str, bytes | None]:
        self.lookups += 1
        return {u: self.keys.get(u) for u in user_ids}

    async def data_keys_for_writing(self, user_ids: Collection[str]) -> dict[str, bytes | None]:
        raise AssertionError("opening a turn never makes a key")


async def test_sealed_turns_are_opened_forgotten_ones_dropped_and_bad_ones_dead_lettered() -> None:
    ana_key = new_data_key()
    keys = Keys({"ana": ana_key})
    dropped: list[int] = []
    opener = SealedTurnOpener(keys, on_forgotten=dropped.append)
    sealed = seal_turn(TURN, turn_public_key(ana_key))
    forgotten = seal_turn(
        TURN | {"user_id": "bo", "event_id": "e3"}, turn_public_key(new_data_key())
    )
    moved = sealed | {"user_id": "bo"}  # bo has no key: dropped, as forgotten
    altered = sealed | {"ciphertext": sealed["ciphertext"][:-8] + "AAAAAAA="}
    records = [
        raw(sealed, 0),
        raw(TURN | {"event_id": "e2"}, 1),  # plain turns pass as they are
        raw(forgotten, 2),
        raw(altered, 3),
        raw(moved, 4),
    ]
    handled: list[Consumed[InputEvent]] = []
    letters: list[tuple[RawEvent, str]] = []

    async def handler(batch: list[Consumed[InputEvent]]) -> None:
        handled.extend(batch)

    async def dead_letter(record: RawEvent, reason: str, field_path: str | None = None) -> None:
        letters.append((record, reason))

    await consume_batch(
        records,
        decode_turn,
        handler,
        dead_letter,
        lambda _: None,
        backoff_s=NO_WAIT,
        opening=opener,
    )

    assert [(c.raw.offset, c.event.event_id) for c in handled] == [(0, "e1"), (1, "e2")]  # type: ignore[union-attr]
    assert handled[0].raw is records[0]  # the record as it came, sealed
    assert handled[0].event.text == TURN["text"]  # type: ignore[union-attr]
    assert [(r.offset, "does not open" in why) for r, why in letters] == [(3, True)]
    assert b"Miso" not in letters[0][0].value  # the letter keeps the envelope, not the turn
    assert dropped == [2]
    assert keys.lookups == 1  # one lookup for the batch


async def test_a_batch_without_sealed_turns_costs_no_lookup() -> None:
    keys = Keys({})
    opener = SealedTurnOpener(keys)
    records = [raw(TURN), raw(b"{not json")]
    assert await opener(records) == records and keys.lookups == 0
    # A value that names the type but is not a sealed turn's object goes to the decoder.
    assert await opener([raw(b'"sealed_turn.v1"')]) == [raw(b'"sealed_turn.v1"')]
