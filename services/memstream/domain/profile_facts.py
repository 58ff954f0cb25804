"""What a monthly profile says is true: the facts holding at the month's end, what changed.

With the knowledge write on, an L5 profile opens with the user's facts by subject and
attribute as memstream knew them at the month's last message (only facts said by then, so a
replay or a rebuild of the month writes the same lines whatever was said since), then the
month's changes ("Maya moved from Porto to Berlin"), each line citing the messages its facts
come from. The lines open with `NOW` or `CHANGED`, so the next month's profile never carries them
forward as sentences: it reads them afresh from the facts. A "statement" fact is prose the
profile's quoted sentences already give, so it is left to them. Pure, standard library only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from memstream.domain.calendar import on_window_clock, spelled_day
from memstream.domain.fact_subjects import as_speakers
from memstream.domain.fact_timeline import at, timelines_of
from memstream.domain.facts import SINGLE_VALUED, SPEAKER_PREFIX, AtomicFact
from memstream.domain.models import Fact, Level, MemoryNode, Summary, Window
from memstream.domain.summary_text import LEVEL_BUDGETS, consolidate_summary
from memstream.domain.tokens import count_tokens

NOW = "Now:"
CHANGED = "Changed:"
# Share of the profile's budget the fact lines may take; the quoted sentences get the rest
# (and all of it when there is no fact).
FACT_SHARE = 0.4
LEFT_TO_SENTENCES = frozenset({"statement"})

# How a change of a single-valued attribute reads: "Maya moved from Porto to Berlin".
_CHANGE_VERBS = {
    "lives_in": "moved from {old} to {new}",
    "works_at": "moved from {old} to {new}",
    "studies": "switched from {old} to {new}",
}
_DEFAULT_CHANGE = "went from {old} to {new}"


@dataclass(frozen=True, slots=True)
class Change:
    """A version that replaced another within the month (both as known at its end)."""

    before: AtomicFact
    after: AtomicFact


@dataclass(frozen=True, slots=True)
class ProfileKnowledge:
    """The facts a profile states: those holding at its window's end, and its changes."""

    holding: tuple[AtomicFact, ...] = ()
    changes: tuple[Change, ...] = ()  # replacements within the window
    earlier: tuple[Change, ...] = ()  # replacements before it, of versions still holding


def profile_knowledge(
    said: Iterable[AtomicFact], window: Window, until: datetime | None = None
) -> ProfileKnowledge:
    """From the facts as extracted (observations), those said by `until` (the window's last
    instant unless given: `profile_instant`): the versions that hold at that instant, and
    those of them that replaced another version of the same slot within the window (valid
    from, or first learned, in it)."""
    last = until if until is not None else window.end - timedelta(microseconds=1)
    learned = [f for f in said if f.recorded_at <= last and f.attribute not in LEFT_TO_SENTENCES]
    # One person, one subject, as every read of the facts takes them (`fact_subjects`).
    learned = list(as_speakers(learned))
    holding: list[AtomicFact] = []
    changes: list[Change] = []
    earlier: list[Change] = []
    for _, timeline in sorted(timelines_of(learned).items(), key=lambda item: _rank(item[0])):
        by_id = {v.fact_id: v for v in timeline.versions}
        for version in at(timeline, last):
            holding.append(version)
            before = _replaced(version, by_id)
            if before is not None:
                chosen = changes if _new_in(version, window) else earlier
                chosen.append(Change(before, version))
    return ProfileKnowledge(tuple(holding), tuple(changes), tuple(earlier))


def profile_instant(children: Sequence[MemoryNode]) -> datetime:
    """The instant a profile states the facts of: its last message's (a profile summarises
    every message under it, and the week that straddles two months lies under the first).
    A function of the children alone, so the first closure and a late one agree."""
    return max(c.t_end for c in children)


def cites_unsaid(profile: MemoryNode, said: Iterable[AtomicFact]) -> bool:
    """Whether a profile's fact lines cite a message no fact in `said` comes from any more
    (it was forgotten, or expired): the profile must be written again."""
    sources = {s for fact in said for s in fact.source_ids}
    return any(
        not sources.issuperset(line.source_ids)
        for line in profile.facts
        if is_knowledge_line(line.text)
    )


def _rank(slot: tuple[str, str, str]) -> tuple[bool, bool, str, str]:
    """Speakers before the people they name, single-valued attributes (where one lives, works)
    before the many (what one likes)."""
    _, subject, attribute = slot
    return (
        not subject.startswith(SPEAKER_PREFIX),
        attribute not in SINGLE_VALUED,
        subject,
        attribute,
    )


def _replaced(version: AtomicFact, by_id: dict[str, AtomicFact]) -> AtomicFact | None:
    """The last value before `version`, past any ending ("I left Porto") between them."""
    before = by_id.get(version.supersedes or "")
    while before is not None and before.negated:
        before = by_id.get(before.supersedes or "")
    return before


def _new_in(version: AtomicFact, window: Window) -> bool:
    return window.start <= version.valid_from or window.start <= version.recorded_at


def knowledge_lines(
    knowledge: ProfileKnowledge, window: Window, budget: int | None = None
) -> tuple[Fact, ...]:
    """The profile's fact lines, changes first, then what holds, as many as fit `budget`
    tokens (all without one); each cites its versions' messages."""
    before = {c.after.fact_id: c.before.value for c in knowledge.earlier}
    lines = [
        Fact(
            f"{CHANGED} {c.after.subject_name} {_change_phrase(c)} "
            f"({_day(c.after.valid_from, window)})",
            tuple(dict.fromkeys((*c.before.source_ids, *c.after.source_ids))),
            c.after.valid_from,
        )
        for c in knowledge.changes
    ]
    for fact in knowledge.holding:
        since = f"since {_day(fact.valid_from, window)}"
        if fact.fact_id in before:  # replaced before the month (this month's: a line above)
            since += f"; before: {before[fact.fact_id]}"
        lines.append(Fact(f"{NOW} {fact.text} ({since})", fact.source_ids, fact.valid_from))
    if budget is None:
        return tuple(lines)
    kept: list[Fact] = []
    for line in lines:
        cost = line_cost(line)
        if cost <= budget:
            kept.append(line)
            budget -= cost
    return tuple(kept)


def _change_phrase(change: Change) -> str:
    verb = _CHANGE_VERBS.get(change.after.attribute, _DEFAULT_CHANGE)
    return verb.format(old=change.before.value, new=change.after.value)


def _day(instant: datetime, window: Window) -> str:
    return spelled_day(on_window_clock(instant, window))


def line_cost(line: Fact) -> int:
    return count_tokens(f"- {line.text}")


def is_knowledge_line(text: str) -> bool:
    return text.startswith((NOW, CHANGED))


def without_knowledge_lines(node: MemoryNode) -> MemoryNode:
    """A profile as carried into the next month: its sentences, not its fact lines (the next
    month reads the facts afresh)."""
    if node.level is not Level.MONTH or not any(is_knowledge_line(f.text) for f in node.facts):
        return node
    return replace(node, facts=tuple(f for f in node.facts if not is_knowledge_line(f.text)))


def with_knowledge(summary: Summary, lines: Sequence[Fact]) -> Summary:
    """The profile with the fact lines under its header, before its sentences."""
    if not lines:
        return summary
    header, _, body = summary.text.partition("\n")
    text = "\n".join([header, *(f"- {line.text}" for line in lines), *([body] if body else [])])
    return replace(summary, text=text, facts=(*lines, *summary.facts))


def offline_profile(
    window: Window,
    children: Sequence[MemoryNode],
    history: Sequence[MemoryNode],
    knowledge: ProfileKnowledge | None,
) -> Summary:
    """The offline L5: the fact lines within their share of the budget, then the sentences
    (`summary_text`) in what is left."""
    history = [without_knowledge_lines(h) for h in history]
    share = int(LEVEL_BUDGETS[Level.MONTH] * FACT_SHARE)
    lines = knowledge_lines(knowledge, window, share) if knowledge is not None else ()
    reserved = sum(line_cost(line) for line in lines)
    summary = consolidate_summary(Level.MONTH, window, children, history, reserved=reserved)
    return with_knowledge(summary, lines)
