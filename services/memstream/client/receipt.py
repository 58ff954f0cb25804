"""What publishing a turn returns, and how a read names the writes it must see."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Receipt:
    """A published message: its event id, and the write token a read passes as `after` to
    see it (`recall(user, query, after=receipt)`; docs/read-your-writes.md)."""

    event_id: str
    token: str


After = Receipt | str | Iterable[Receipt | str]


def tokens_of(after: After | None) -> list[str]:
    """The write tokens of `after`: a receipt, a token, or several of either."""
    if after is None:
        return []
    if isinstance(after, Receipt | str):
        after = [after]
    return [a.token if isinstance(a, Receipt) else a for a in after]
