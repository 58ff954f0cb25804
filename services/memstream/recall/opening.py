"""Opening sealed records for the feed's consumers (`POST /v1/feed:open`).

A consumer of memstream's topics reads sealed values (`contracts.sealed`) and asks the API to
open them: the data keys stay in Redis, behind the API's own keys, and no consumer holds one
(docs/forget-everywhere.md says why). Each record gets its own answer, so one damaged record
does not cost the others theirs:

- `opened`: the value as it was published;
- `plain`: the record was not sealed (ids only, or written with sealing off): as it is;
- `forgotten`: the user's key is gone: the user was forgotten (its `user_forgotten.v1` is
  on the feed) and nothing of this record can be read any more;
- `invalid`: not a sealed envelope this version reads, or it does not open under its user's
  key (altered, moved to another user or type), or its user is out of the caller's reach (a
  tenant key opens its own users' records only; `no such user`, whether the user exists or
  not, and no key is read for it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from memstream.contracts.sealed import EnvelopeError, is_sealed, open_sealed
from memstream.ports import DataKeys

Outcome = Literal["opened", "plain", "forgotten", "invalid"]
NO_SUCH_USER = "no such user"  # as the routes answer a user out of the caller's reach


def _anyone(user_id: str) -> bool:
    return True


@dataclass(frozen=True, slots=True)
class Opened:
    status: Outcome
    value: dict[str, Any] | None = None
    reason: str | None = None


class EnvelopeOpener:
    def __init__(self, keys: DataKeys) -> None:
        self._keys = keys

    async def open(
        self, records: Sequence[Mapping[str, Any]], reaches: Callable[[str], bool] = _anyone
    ) -> list[Opened]:
        """Each record opened, as far as `reaches` (the caller's namespace) allows."""
        owners = {str(r.get("user_id")) for r in records if is_sealed(r)}
        owners = {user for user in owners if reaches(user)}
        found = await self._keys.data_keys(owners) if owners else {}
        return [self._open_one(r, found, reaches) for r in records]

    @staticmethod
    def _open_one(
        record: Mapping[str, Any],
        found: Mapping[str, bytes | None],
        reaches: Callable[[str], bool],
    ) -> Opened:
        if not is_sealed(record):
            return Opened("plain", dict(record))
        if not reaches(str(record.get("user_id"))):
            return Opened("invalid", reason=NO_SUCH_USER)
        key = found.get(str(record.get("user_id")))
        if key is None:
            return Opened("forgotten")
        try:
            return Opened("opened", open_sealed(record, key))
        except EnvelopeError as exc:
            return Opened("invalid", reason=str(exc))
