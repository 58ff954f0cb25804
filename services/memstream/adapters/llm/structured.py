"""An LLM's facts made into a node: provenance checked against what it was shown, the text
laid out as the offline summaries lay theirs out, so the two backends are interchangeable."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from memstream.domain.calendar import MONTH_NAMES, monday_of, on_window_clock, spelled_day
from memstream.domain.models import Fact, Level, MemoryNode, Window
from memstream.domain.segment_text import dated


class CitedFact(Protocol):
    text: str
    source_ids: list[str]


def _known_times(
    children: Sequence[MemoryNode], history: Sequence[MemoryNode]
) -> dict[str, datetime]:
    """When each citable id was said: messages of leaves, facts of summaries."""
    times: dict[str, datetime] = {}
    for node in [*children, *history]:
        for m in node.messages:
            times.setdefault(m.event_id, m.ts)
        for f in node.facts:
            for source in f.source_ids:
                times.setdefault(source, f.at or node.t_start)
        for source in node.source_ids:
            times.setdefault(source, node.t_start)
    return times


def resolve_facts(
    facts: Sequence[CitedFact],
    level: Level,
    children: Sequence[MemoryNode],
    history: Sequence[MemoryNode],
    known: Sequence[Fact] = (),
) -> tuple[Fact, ...]:
    """The facts whose citations resolve to lines the model was given (the previous profile
    and the `known` fact lines count for a profile), with unknown ids dropped and each dated
    by its first source."""
    shown = list(children)
    if level is Level.MONTH:
        shown += [h for h in history if h.level is Level.MONTH]
    times = _known_times(shown, [])
    for line in known:
        if line.at is not None:  # fact lines are dated by their version's start
            for source in line.source_ids:
                times.setdefault(source, line.at)
    out: list[Fact] = []
    for fact in facts:
        text = " ".join(fact.text.split())
        sources = tuple(dict.fromkeys(s.strip() for s in fact.source_ids if s.strip() in times))
        if text and sources:
            out.append(Fact(text, sources, min(times[s] for s in sources)))
    return tuple(out)


def facts_text(level: Level, window: Window, facts: Sequence[Fact]) -> str:
    """The node text: the offline header, then the facts (bullets for a profile)."""
    start = on_window_clock(window.start, window)
    if level is Level.MONTH:
        header = f"Profile as of {MONTH_NAMES[start.month - 1]} {start.year}:"
        return "\n".join([header, *(f"- {f.text}" for f in facts)])
    header = {
        Level.SESSION: f"Session on {dated(start)}:",
        Level.DAY: f"Day of {dated(start)}:",
        Level.WEEK: f"Week of {spelled_day(monday_of(start))}:",
    }[level]
    return " ".join([header, *(f.text for f in facts)])
