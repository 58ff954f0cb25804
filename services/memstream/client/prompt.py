"""A recall answer as prompt text: facts with their validity, then the memories, dated.

What holds now is said with since when and what it replaced ("Maya lives in Berlin (since
Apr 2024; before: Porto)"); what no longer holds is said as such, with the months it held
("No longer true (Jan 2024 to Apr 2024): Maya lives in Porto"), so a model reading the
prompt never takes a replaced value for the current one. A change told to begin later is
said as planned, with its day and what holds until then ("Planned from 1 Feb 2027: Dev
works at Wipro (until then: Infosys)"), and what it will close as holding until that day.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol


class Fact(Protocol):
    """What is read of a fact (`models.Fact` is one)."""

    @property
    def fact_id(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def value(self) -> str: ...
    @property
    def negated(self) -> bool: ...
    @property
    def holds(self) -> bool: ...
    @property
    def planned(self) -> bool: ...
    @property
    def valid_from(self) -> datetime: ...
    @property
    def valid_to(self) -> datetime | None: ...
    @property
    def supersedes(self) -> str | None: ...
    @property
    def superseded_by(self) -> str | None: ...


class Memory(Protocol):
    """What is read of a memory (`models.Memory` is one)."""

    @property
    def level_name(self) -> str: ...
    @property
    def t_start(self) -> datetime: ...
    @property
    def t_end(self) -> datetime: ...
    @property
    def text(self) -> str: ...
    @property
    def valid_from(self) -> datetime | None: ...
    @property
    def valid_to(self) -> datetime | None: ...
    @property
    def superseded_by(self) -> str | None: ...
    @property
    def end_basis(self) -> str | None: ...
    @property
    def full_tokens(self) -> int | None: ...


def month(when: datetime) -> str:
    return when.strftime("%b %Y")


def day(when: datetime) -> str:
    return f"{when.day} {when:%b %Y}"


def fact_line(fact: Fact, replaced: Fact | None) -> str:
    """One fact as a bullet; `replaced` is the version it superseded, if the answer has it."""
    if fact.planned:
        line = f"- Planned from {day(fact.valid_from)}: {fact.text}"
        if replaced is not None and not replaced.negated:
            line += f" (until then: {replaced.value})"
        return line
    if fact.holds:
        note = f"since {month(fact.valid_from)}"
        if fact.valid_to is not None:  # closed by a change told to begin later
            note += f"; until {day(fact.valid_to)}"
        elif replaced is not None and not replaced.negated:
            note += f"; before: {replaced.value}"
        return f"- {fact.text} ({note})"
    if fact.negated and fact.valid_to is None:
        return f"- {fact.text} (since {month(fact.valid_from)})"
    until = month(fact.valid_to) if fact.valid_to is not None else "a later change"
    return f"- No longer true ({month(fact.valid_from)} to {until}): {fact.text}"


def memory_line(memory: Memory) -> str:
    start = memory.t_start.date().isoformat()
    end = memory.t_end.date().isoformat()
    span = start if end == start else f"{start} to {end}"
    line = f"- [{memory.level_name}, {span}] {memory.text}"
    if memory.full_tokens is not None:
        line += f" (an excerpt: the whole memory is {memory.full_tokens} tokens)"
    if memory.valid_to is not None and memory.end_basis == "inferred":
        # Closed by a change said after it, not by a fact it states: it may be about
        # something else that still holds, so say what is known, not that it ended.
        return f"{line} (may be out of date: a change was told in {month(memory.valid_to)})"
    if memory.valid_to is not None:
        return f"{line} (no longer true since {month(memory.valid_to)})"
    if memory.superseded_by is not None:
        return f"{line} (no longer true: replaced)"
    if memory.valid_from is not None:
        return f"{line} (true since {month(memory.valid_from)})"
    return line


def render_recall(
    facts: Sequence[Fact], memories: Sequence[Memory], heading: str, omitted: int = 0
) -> str:
    """The heading, the facts in the answer's order (the one true at the asked time first),
    then the memories (the broad ones first), then how many relevant memories the budget
    left out; empty when there is nothing to say."""
    if not facts and not memories:
        return ""
    by_id = {f.fact_id: f for f in facts}
    replaced = {f.superseded_by: f for f in facts if f.superseded_by is not None}
    lines = [heading]
    for fact in facts:
        before = (by_id.get(fact.supersedes) if fact.supersedes else None) or replaced.get(
            fact.fact_id
        )
        lines.append(fact_line(fact, before))
    lines += [memory_line(m) for m in memories]
    if omitted:
        lines.append(f"({omitted} more relevant memories did not fit the token budget.)")
    return "\n".join(lines)
