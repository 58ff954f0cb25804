"""The offline L5 profile of each dev LoCoMo conversation: facts with dates and provenance,
no greetings, thanks, questions or assistant filler. The tree is built with the same rules
the segmenter and consolidator use, over the calendar windows the clock would close."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from datetime import datetime, timedelta

import pytest

from memstream.contracts.codec import decode_input
from memstream.domain.calendar import window_for
from memstream.domain.models import Level, MemoryNode, Turn, Window
from memstream.domain.nodes import source_message
from memstream.domain.segment_text import render_segment
from memstream.domain.summary_text import consolidate_summary
from memstream_lab.locomo import conversation_events, conversation_files, load_conversation

FILES = conversation_files()
# A bullet may date its relative times before its own date: `(last week: the week before ...)`.
BULLET = re.compile(
    r'^- [^,:"]+, [a-z]+: "(?P<said>.+)"(?: \([^()"]+: [^()"]+\))?'
    r" \(\+?\d{1,2} [A-Z][a-z]+ \d{4}\)$"
)
FILLER = re.compile(
    r"\b(?:hi|hey|hello|thanks|thank you|bye|good to see you|talk soon|take care|"
    r"congrats|congratulations|proud of you|you're|you are)\b",
    re.I,
)


def _build(
    level: Level,
    children: Sequence[MemoryNode],
    key: Callable[[MemoryNode], Hashable],
) -> list[MemoryNode]:
    groups: dict[Hashable, list[MemoryNode]] = defaultdict(list)
    for child in children:
        groups[key(child)].append(child)
    out: list[MemoryNode] = []
    for members in sorted(groups.values(), key=lambda g: min(c.t_start for c in g)):
        first = min(c.t_start for c in members)
        if level is Level.SESSION:
            start, end = first, max(c.t_end for c in members) + timedelta(seconds=1)
        else:
            start, end = window_for(level, first)
        summary = consolidate_summary(level, Window("u", level, start, end), members, out)
        out.append(
            MemoryNode(
                id=f"{level.label}-{start.isoformat()}-{len(out)}",
                user_id="u",
                level=level,
                t_start=start,
                t_end=end,
                text=summary.text,
                facts=summary.facts,
            )
        )
    return out


def _day(node: MemoryNode) -> datetime:
    return window_for(Level.DAY, node.t_start)[0]


def profiles(path_index: int) -> tuple[list[MemoryNode], set[str]]:
    conv = load_conversation(FILES[path_index])
    turns = [decode_input(e) for e in conversation_events(conv) if e["type"] == "turn.v1"]
    leaves = [
        MemoryNode(
            id=t.event_id,
            user_id="u",
            level=Level.SEGMENT,
            t_start=t.ts,
            t_end=t.ts,
            text=render_segment([t]),
            source_ids=(t.event_id,),
            session_id=t.session_id,
            messages=(source_message(t),),
        )
        for t in turns
        if isinstance(t, Turn)
    ]
    sessions = _build(Level.SESSION, leaves, lambda n: n.session_id)
    days = _build(Level.DAY, sessions, _day)
    weeks = _build(Level.WEEK, days, lambda n: window_for(Level.WEEK, n.t_start)[0])
    months = _build(Level.MONTH, weeks, lambda n: window_for(Level.MONTH, n.t_start)[0])
    return months, set(conv.dia_ids)


@pytest.mark.parametrize("index", range(5))
def test_profiles_are_dated_facts_with_provenance_and_no_filler(index: int) -> None:
    assert len(FILES) >= 5, "the five dev LoCoMo conversations are not in ../shared/data/locomo"
    months, message_ids = profiles(index)
    assert months
    for profile in months:
        lines = profile.text.split("\n")
        assert lines[0].startswith("Profile as of ")
        assert len(lines) > 2, profile.text
        for line in lines[1:]:
            bullet = BULLET.match(line)
            assert bullet, line
            assert not bullet["said"].endswith("?"), line
            assert not FILLER.search(bullet["said"]), line
        assert [f.text for f in profile.facts] == [line[2:] for line in lines[1:]]
        for fact in profile.facts:
            assert fact.source_ids and set(fact.source_ids) <= message_ids
            assert fact.at is not None
