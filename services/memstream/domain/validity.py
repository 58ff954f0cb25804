"""When what a memory or a fact says held: the validity recall returns beside each of them.

A fact has its own (`AtomicFact.valid_from`, `valid_to`, `superseded_by`); a memory's is
derived from the facts its messages state, so a leaf that says "our little flat in Porto"
carries the date Berlin replaced it. None of a memory's fields is set when it states no fact.
Pure, standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

# How a memory's end was known: "stated", a fact version it states was replaced; "inferred",
# read from what was said around it (a change said after it, a replaced value it names) when
# no fact it states ended, so the memory may be about something else that still holds.
EndBasis = Literal["stated", "inferred"]


@dataclass(frozen=True, slots=True)
class Validity:
    """From when it held, until when (None while it holds), and the fact that replaced it."""

    valid_from: datetime | None = None
    valid_to: datetime | None = None
    superseded_by: str | None = None
    end_basis: EndBasis | None = None  # None while it holds

    @property
    def holds_now(self) -> bool:
        return self.valid_to is None and self.superseded_by is None
