"""Turns sealed by their producers, opened before they are decoded (`contracts.sealed_turns`).

The segmenter's agent hands each batch here first. A record that is a `sealed_turn.v1` is
opened with its user's data key (one Redis round trip for the batch's users; a batch
without a sealed turn makes none) and decoded as the turn it hides; the record itself, as
it is on the topic, stays the one a dead letter carries, so no letter holds a turn opened.

- The user has no key: it was forgotten (or its key was never made, which a producer that
  asked for the turn key cannot cause). The turn is dropped and counted, with no dead
  letter: there is nothing readable to keep, and a letter would only say the user existed.
- The envelope does not open under the key (altered, moved to another user, unknown
  version): rejected, so it goes to the dead-letter topic as it came (ciphertext only).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import replace

from memstream.contracts.records import RawEvent
from memstream.contracts.sealed import EnvelopeError
from memstream.contracts.sealed_turns import SEALED_TURN_TYPE, open_turn
from memstream.edges.faust.decoding import Rejected
from memstream.ports import DataKeys

log = logging.getLogger(__name__)

_MARK = SEALED_TURN_TYPE.encode()  # a record without these bytes is no sealed turn
# Per record of a batch: the record to decode (opened, or as it came), a rejection, or None
# for a turn dropped because its user's key is gone.
Opened = RawEvent | Rejected | None


class SealedTurnOpener:
    def __init__(self, keys: DataKeys, on_forgotten: Callable[[int], None] | None = None) -> None:
        self._keys = keys
        self._on_forgotten = on_forgotten

    async def __call__(self, raws: Sequence[RawEvent]) -> list[Opened]:
        sealed = {i: doc for i, raw in enumerate(raws) if (doc := _sealed_turn(raw)) is not None}
        if not sealed:
            return list(raws)
        users = {str(doc.get("user_id")) for doc in sealed.values()}
        found = await self._keys.data_keys(users)
        out: list[Opened] = []
        for i, raw in enumerate(raws):
            doc = sealed.get(i)
            if doc is None:
                out.append(raw)
                continue
            key = found.get(str(doc.get("user_id")))
            if key is None:
                out.append(None)
                continue
            try:
                turn = open_turn(doc, key)
            except EnvelopeError as exc:
                out.append(Rejected(raw, str(exc), "ciphertext"))
                continue
            # ASCII escapes: a lone surrogate reaches the decoder, which refuses it, as sent plain.
            out.append(replace(raw, value=json.dumps(turn).encode()))
        dropped = sum(item is None for item in out)
        if dropped:
            log.info("%d sealed turns of forgotten users dropped", dropped)
            if self._on_forgotten is not None:
                self._on_forgotten(dropped)
        return out


def _sealed_turn(raw: RawEvent) -> dict[str, object] | None:
    if _MARK not in raw.value:
        return None
    try:
        doc = json.loads(raw.value)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None  # the decoder says why
    if isinstance(doc, dict) and doc.get("type") == SEALED_TURN_TYPE:
        return doc
    return None
