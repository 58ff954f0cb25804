"""The messages a saved window state holds back, read from its encoding (`codec.encode_state`)."""

from __future__ import annotations

from typing import Any

from memstream.domain.write_token import HeldMessages


def held_in_state(state: dict[str, Any]) -> HeldMessages:
    """Turns waiting for their reply (`pending`) and for an earlier `seq` (`held`), as
    turn.v1 values in the state."""
    return HeldMessages(
        awaiting_reply=tuple(str(t["event_id"]) for t in state.get("pending", ())),
        awaiting_earlier_seq=tuple(str(t["event_id"]) for t in state.get("held", ())),
    )
