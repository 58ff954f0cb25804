"""The producer's sealing of turns: only turns are sealed, for the user's turn key, which is
asked once per user and time-to-live, within a bound on the users kept."""

from __future__ import annotations

from memstream.client.turn_sealing import TurnSealer
from memstream.contracts.sealed import new_data_key
from memstream.contracts.sealed_turns import open_turn, turn_public_key

from ..contracts.test_sealed_turns import TURN


class Api:
    """Hands out the turn keys of fixed data keys; counts the calls."""

    def __init__(self) -> None:
        self.data_keys: dict[str, bytes] = {}
        self.asked: list[str] = []

    async def turn_key(self, user_id: str) -> bytes:
        self.asked.append(user_id)
        return turn_public_key(self.data_keys.setdefault(user_id, new_data_key()))


async def test_turns_are_sealed_for_their_user_and_other_events_pass() -> None:
    api, now = Api(), [0.0]
    sealer = TurnSealer(api, ttl_s=300, max_users=2, clock=lambda: now[0])
    sealed = await sealer.sealed(TURN)
    assert sealed["type"] == "sealed_turn.v1"
    assert open_turn(sealed, api.data_keys[TURN["user_id"]]) == TURN
    forget = {"type": "forget.v1", "user_id": TURN["user_id"]}
    assert await sealer.sealed(forget) is forget

    await sealer.sealed(TURN)  # cached
    now[0] = 301.0
    await sealer.sealed(TURN)  # expired: asked again
    for other in ("acme:bo", "acme:cy"):  # two more users push the first one out
        await sealer.sealed(TURN | {"user_id": other})
    await sealer.sealed(TURN)
    assert api.asked == [TURN["user_id"]] * 2 + ["acme:bo", "acme:cy", TURN["user_id"]]
