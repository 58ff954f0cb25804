"""L2-L5 text without a language model: the children's most central statements, in budget.

A summary is extractive: it keeps whole statements of its children (an L1's "X said ..."
with what follows it), the ones most similar to the rest once rare terms weigh more,
without near-duplicates, greetings or filler, in time order, under a header that dates
the window. Budgets are counted with `domain.tokens.count_tokens`, the counter recall
fits its answers with. Pure rules, standard library only.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from memstream.domain.calendar import MONTH_NAMES, spelled_day
from memstream.domain.lexical import tokenize
from memstream.domain.models import Level, MemoryNode, Window
from memstream.domain.segment_text import SENTENCE_BREAK
from memstream.domain.tokens import count_tokens

# Token budgets of consolidated texts, header included, counted as recall counts them. Each
# level covers more time, so it gets somewhat more room, but far less than its children
# together: consolidation compresses.
LEVEL_BUDGETS: dict[Level, int] = {
    Level.SESSION: 140,
    Level.DAY: 185,
    Level.WEEK: 230,
    Level.MONTH: 290,
}
# Share of the profile budget reserved for the previous profile, so stable traits persist
# while half the room still goes to what the new month showed.
PROFILE_CARRY_SHARE = 0.5
# Statements this similar (cosine of term counts) to one already kept add nothing new.
DUPLICATE_SIMILARITY = 0.85

_DATE_LABEL = re.compile(r"^On \d{1,2} [A-Z][a-z]+(?: \d{4})?, ")
_HEADER = re.compile(r"^(?:Session on|Day of|Week of|Profile as of) [^:]{1,40}:\s*")
_ATTRIBUTED = re.compile(
    r"^(?:On \d{1,2} [A-Z][a-z]+(?: \d{4})?, )?[A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,2} "
    r"(?:said|shared)\b"
)


@dataclass(frozen=True, slots=True)
class _Statement:
    text: str
    at: datetime
    order: int
    terms: Counter[str]


def _statements(text: str) -> list[str]:
    """One speaker's statement per item (an attributed sentence and what follows it), or plain
    sentences when the text has no attributions (e.g. written by an LLM)."""
    sentences = [s.strip() for s in SENTENCE_BREAK.split(_HEADER.sub("", text.strip()))]
    sentences = [s for s in sentences if s]
    if not any(_ATTRIBUTED.match(s) for s in sentences):
        return [_DATE_LABEL.sub("", s) for s in sentences]
    units: list[str] = []
    for sentence in sentences:
        if _ATTRIBUTED.match(sentence) or not units:
            units.append(_DATE_LABEL.sub("", sentence))
        else:
            units[-1] += " " + sentence
    return units


def _cosine(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    dot = sum(v * b[k] for k, v in a.items() if k in b)
    if dot == 0:
        return 0.0
    return dot / math.sqrt(sum(v * v for v in a.values()) * sum(v * v for v in b.values()))


def _collect(nodes: Sequence[MemoryNode], start: int = 0) -> list[_Statement]:
    ordered = sorted(nodes, key=lambda n: (n.t_start, n.t_end, n.id))
    texts = [(node.t_start, s) for node in ordered for s in _statements(node.text)]
    return [_Statement(s, at, start + i, Counter(tokenize(s))) for i, (at, s) in enumerate(texts)]


SUBSTANTIAL_TERMS = 6
# Words of greeting, thanks and leave-taking: frequent in chat, never what a summary is for.
_CHATTER = frozenset(
    tokenize(
        """hello thanks thank glad welcome bye goodbye morning evening night soon later great
        nice wow congratulations luck rest care sure anytime awesome cool good see talk chat
        happy lovely sounds fun wonderful amazing help helps back home quick one"""
    )
)


def _centrality(statements: Sequence[_Statement]) -> dict[int, float]:
    """Summed similarity to the other statements, with terms weighted by rarity in the pool:
    a name in every statement says nothing about which statement is central."""
    df = Counter(t for s in statements for t in s.terms)
    n = len(statements)
    weighted = {
        s.order: {t: c * math.log((n + 1) / df[t]) for t, c in s.terms.items()} for s in statements
    }
    # Pleasantries ("Ana said good evening, Mira.") share words with everything and say
    # nothing: a statement counts fully only with enough words that are not everywhere.
    # Questions ask rather than tell, so they count half.
    substance = {
        s.order: min(
            1.0,
            sum(1 for t in s.terms if df[t] <= max(1, n // 4) and t not in _CHATTER)
            / SUBSTANTIAL_TERMS,
        )
        * (0.5 if s.text.rstrip().endswith("?") else 1.0)
        for s in statements
    }
    return {
        s.order: substance[s.order]
        * sum(_cosine(weighted[s.order], weighted[o.order]) for o in statements if o is not s)
        for s in statements
    }


def _select(
    pool: Sequence[_Statement],
    centrality: dict[int, float],
    budget: int,
    kept: list[_Statement],
    extra_cost: int = 0,
) -> int:
    """Greedily add the most central statements that fit; returns the budget left."""
    taken = {k.order for k in kept}
    for s in sorted(pool, key=lambda s: (-centrality[s.order], s.order)):
        cost = count_tokens(s.text) + extra_cost
        if s.order in taken or cost > budget:
            continue
        if any(_cosine(s.terms, k.terms) >= DUPLICATE_SIMILARITY for k in kept):
            continue
        kept.append(s)
        taken.add(s.order)
        budget -= cost
    return budget


def _truncate(text: str, budget: int) -> str:
    words: list[str] = []
    for word in text.split():
        if count_tokens(" ".join([*words, word])) + 1 > budget:
            break
        words.append(word)
    return " ".join(words) + "\u2026"


def _header(level: Level, window: Window) -> str:
    start = window.start
    if level is Level.SESSION:
        return f"Session on {spelled_day(start)}:"
    if level is Level.DAY:
        return f"Day of {spelled_day(start)}:"
    if level is Level.WEEK:
        return f"Week of {spelled_day(start)}:"
    return f"Profile as of {MONTH_NAMES[start.month - 1]} {start.year}:"


def _latest(history: Sequence[MemoryNode], level: Level) -> MemoryNode | None:
    same = [h for h in history if h.level == level]
    return max(same, key=lambda h: (h.t_end, h.version)) if same else None


def consolidate_text(
    level: Level, window: Window, children: Sequence[MemoryNode], history: Sequence[MemoryNode]
) -> str:
    """The window's header and its most central child statements, within the level budget."""
    if level not in LEVEL_BUDGETS:
        raise ValueError(f"{level.label} is written from messages, not consolidated")
    header = _header(level, window)
    budget = LEVEL_BUDGETS[level] - count_tokens(header)
    previous = _latest(history, Level.MONTH) if level is Level.MONTH else None
    carried = _collect([previous]) if previous is not None else []
    fresh = _collect(children, start=len(carried))
    pool = carried + fresh
    if not pool:
        return f"{header} Nothing was recorded."
    centrality = _centrality(pool)
    kept: list[_Statement] = []
    if level is Level.MONTH:
        carry_budget = math.ceil(budget * PROFILE_CARRY_SHARE)
        left = budget - carry_budget + _select(carried, centrality, carry_budget, kept)
        left = _select(fresh, centrality, left, kept)
        _select(carried, centrality, left, kept)
    else:
        # A week spans days: each statement may need an "On 9 May," label (4 tokens).
        label_cost = 4 if level is Level.WEEK else 0
        _select(pool, centrality, budget, kept, extra_cost=label_cost)
    if not kept:
        best = min(pool, key=lambda s: (-centrality[s.order], s.order))
        return f"{header} {_truncate(best.text, budget)}"
    kept.sort(key=lambda s: s.order)
    if level is not Level.WEEK:
        return f"{header} " + " ".join(s.text for s in kept)
    zone = window.start.tzinfo
    parts: list[str] = []
    label = ""
    for s in kept:
        day = spelled_day(s.at.astimezone(zone) if zone else s.at, year=False)
        parts.append(s.text if day == label else f"On {day}, {s.text}")
        label = day
    return f"{header} " + " ".join(parts)
