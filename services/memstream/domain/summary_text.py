"""L2-L5 text without a language model: what people disclosed, attributed, dated, in budget.

A summary is made of facts: sentences of its messages, quoted as spoken and attributed, then
dated where they speak of time relatively (`Caroline: "I went to a support group
yesterday." (yesterday: 7 May 2023)`, see `domain/event_time.py`), each with the ids of the
messages it comes from. A sentence is a fact when it tells something of the speaker's life
(it speaks in the first person, names someone or something, or gives a number or a date)
and is not a question, a greeting, thanks, praise of the listener or an assistant's
pleasantry. Facts near-identical to one already kept are merged into it (their sources
joined). The facts that carry the most rare content per token fill the level's budget, in
time order under a header that dates the window; a week dates each day, and the monthly
profile groups facts by person and topic, carries the previous profile's facts forward and
marks the month's new ones with "+". A session also keeps, beyond its budget, the dated
facts the budget left out, cut to the words around their times: once "yesterday" has
passed, the leaf no longer says when. Pure rules, standard library only.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from memstream.domain.calendar import MONTH_NAMES, monday_of, on_window_clock, spelled_day
from memstream.domain.event_time import annotation
from memstream.domain.lexical import tokenize
from memstream.domain.models import Fact, Level, MemoryNode, Summary, Window
from memstream.domain.scripts import words
from memstream.domain.segment_text import SENTENCE_BREAK, dated
from memstream.domain.tokens import count_tokens

# Token budgets of consolidated texts, header included, counted as recall counts them.
# Recall lets summaries take 15% of a query's budget while leaves still fit (67 of the 450
# tokens of a single-fact question, 180 of 1200 otherwise) and trims a recalled summary to
# the facts its leaves do not already say, so a session summary travels with its best leaf;
# wider windows get somewhat more room, for questions that gather facts, but far less than
# their children together: each level compresses the one below it.
LEVEL_BUDGETS: dict[Level, int] = {
    Level.SESSION: 140,
    Level.DAY: 185,
    Level.WEEK: 230,
    Level.MONTH: 290,
}
# Share of the profile budget reserved for the previous profile's facts, so stable traits
# persist while the rest goes to what the new month showed.
PROFILE_CARRY_SHARE = 0.5
# Facts this similar (cosine of term counts) to one already kept add nothing new.
DUPLICATE_SIMILARITY = 0.7
# A fact needs this many content words that are not chatter.
MIN_CONTENT_TERMS = 3
# A fact that dates an event by a relative time ("yesterday") is worth this much more: read
# later, its leaf no longer says when; the summary is where it gets its date.
DATED_BONUS = 1.25
# Tokens a session summary may add beyond its budget for dated facts the budget left out.
DATED_BUDGET = 60

# A fact may end with what its relative times resolve to (`(yesterday: 7 May 2023)`); it is
# derived from the sentence and its time, so levels above read the sentence and derive it again.
_NOTE = r'(?: (?P<note>\([^()"]+: [^()"]+\)))?'
_QUOTED = re.compile(r'^(?P<speaker>[^:"\n]{1,80}): "(?P<said>.*)"' + _NOTE + "$", re.DOTALL)
# A profile bullet: `Caroline, plans: "..." (+8 May 2023)`.
_PROFILE_LINE = re.compile(
    r'^(?P<speaker>[^,:"\n]{1,80}), [a-z]+: "(?P<said>.*)"' + _NOTE + r" \([^)]*\)$", re.DOTALL
)
# "We" and "our" tell what the speaker did with others; "us" alone is mostly in maxims.
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'll|I'd|my|me|mine|we|we're|we've|our)\b", re.I)
_CAPITALISED = re.compile(r"[A-Z][a-z]{2,}")
_ADDRESSEE = re.compile(r"\b(?:you|your|you're|you've|you'll|you'd|yours)\b", re.I)
_NUMBER = re.compile(r"\d")
_QUESTION_MARKS = ("?", "\uff1f", "\u061f")  # and the full-width and Arabic ones
_GREETING = re.compile(
    r"^(?:hi|hey|hello|good (?:morning|afternoon|evening|night)|morning|evening|thanks|"
    r"thank you|bye|goodbye|see you|welcome)\b",
    re.I,
)
_NAME_INSIDE = re.compile(r"(?<=[a-z,;] )[A-Z][a-z]{2,}")
# Words of greeting, thanks, praise and leave-taking: frequent in chat, never a fact.
_CHATTER = frozenset(
    tokenize(
        """hello hi hey thanks thank glad welcome bye goodbye morning evening night soon later
        great nice wow congratulations congrats luck rest care sure anytime awesome cool good
        see talk chat happy lovely sounds fun wonderful amazing proud totally agree absolutely
        definitely really yeah yes okay ok oh haha lol love appreciate means much cheers hope
        well stuff thing things keep going inspiring incredible beautiful"""
    )
)


@dataclass(frozen=True, slots=True)
class _Candidate:
    speaker: str | None
    said: str  # the sentence as spoken (or an LLM's fact, unquoted)
    at: datetime
    order: int
    sources: tuple[str, ...]
    terms: Counter[str]
    carried: bool = False
    note: str = ""  # what the sentence's relative times resolve to (domain/event_time.py)

    @property
    def text(self) -> str:
        return fact_text(self.speaker, self.said, self.note)


def fact_text(speaker: str | None, said: str, note: str = "") -> str:
    """The canonical text of an offline fact: `Speaker: "sentence"`, then what its relative
    times name, if any: `(yesterday: 7 May 2023)`."""
    quoted = f'{speaker}: "{said}"' if speaker else said
    return f"{quoted} {note}" if note else quoted


# Words kept before the first and after the last relative time of an excerpt.
EXCERPT_BEFORE = 6
EXCERPT_AFTER = 3


def dated_excerpt(text: str) -> str | None:
    """A fact that dates relative times, cut to the words around them and their dates:
    `Caroline: "...went to a support group yesterday." (yesterday: 7 May 2023)`. What to
    return beside the leaf that quotes the whole sentence: the dates are what it adds. None
    for a fact without dates."""
    quoted = _PROFILE_LINE.match(text) or _QUOTED.match(text)
    if quoted is None or not quoted["note"]:
        return None
    note = quoted["note"]
    return fact_text(quoted["speaker"], _clip(quoted["said"], note), note)


def _clip(said: str, note: str) -> str:
    """The words of `said` around the relative times its note names."""
    phrases = [item.split(": ", 1)[0] for item in note[1:-1].split("; ")]
    lowered = said.lower()
    spans = [(at, at + len(p)) for p in phrases if (at := lowered.find(p.lower())) >= 0]
    if not spans:
        return said
    words = list(re.finditer(r"\S+", said))
    inside = [i for i, w in enumerate(words) for a, b in spans if w.start() < b and a < w.end()]
    first = max(0, min(inside) - EXCERPT_BEFORE)
    last = min(len(words), max(inside) + 1 + EXCERPT_AFTER)
    clip = " ".join(w.group() for w in words[first:last])
    return ("..." if first > 0 else "") + clip + ("..." if last < len(words) else "")


def names_in(texts: Sequence[str]) -> frozenset[str]:
    """Words written with a capital inside a sentence: names of people, places, titles (so
    that "Daiki" also counts where it opens a sentence)."""
    found: set[str] = set()
    for text in texts:
        for sentence in _sentences(text):
            found.update(_CAPITALISED.findall(sentence[1:]))
    return frozenset(found)


def is_fact(sentence: str, names: frozenset[str] = frozenset()) -> bool:
    """Whether a sentence tells something (see the module docstring for the rule)."""
    text = sentence.strip()
    if not text or text.endswith(_QUESTION_MARKS) or _GREETING.match(text):
        return False
    if not reads_as_english(text):
        # The cues below (English pronouns, capitals, greetings) cannot read other scripts:
        # there, a statement with enough words is a fact, so a disclosure in Arabic or
        # Chinese reaches its summary rather than failing an English test.
        return sum(w.text[0].isalpha() for w in words(text)) >= MIN_CONTENT_TERMS
    content = [t for t in tokenize(text) if t not in _CHATTER]
    if len(content) < MIN_CONTENT_TERMS:
        return False
    opening = _CAPITALISED.match(text)
    named = opening is not None and opening.group() in names
    concrete = bool(_NUMBER.search(text) or _NAME_INSIDE.search(text) or named)
    # Words to the listener ("I'm so proud of you") are reactions unless they carry a name
    # or a number; "we" and "us" alone are mostly maxims ("music brings us together").
    if _ADDRESSEE.search(text):
        return concrete
    return concrete or bool(_FIRST_PERSON.search(text))


def reads_as_english(text: str) -> bool:
    """Whether most words of `text` (emoji aside) are written in plain Latin letters."""
    read = [w for w in words(text) if w.text[0].isalnum()]
    return 2 * sum(w.english for w in read) >= len(read)


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in SENTENCE_BREAK.split(" ".join(text.split("\n"))) if s.strip()]


_Item = tuple[str | None, str, datetime, tuple[str, ...]]


def _from_child(child: MemoryNode, names: frozenset[str]) -> list[_Item]:
    """(speaker, sentence, when, sources) of a child's facts: its messages' sentences that
    are facts for a leaf, its facts for a summary (judged when it was written), its text's
    sentences that are facts when it has neither (nodes written before facts were kept)."""
    if child.messages:
        return [
            (m.speaker, s, m.ts, (m.event_id,))
            for m in child.messages
            if m.role != "assistant"  # an assistant's words are replies, not the user's life
            for s in _sentences(m.text)
            if is_fact(s, names)
        ]
    if child.facts:
        out: list[_Item] = []
        for f in child.facts:
            quoted = _PROFILE_LINE.match(f.text) or _QUOTED.match(f.text)
            speaker, said = (quoted["speaker"], quoted["said"]) if quoted else (None, f.text)
            out.append((speaker, said, f.at or child.t_start, f.source_ids))
        return out
    return [(None, s, child.t_start, child.source_ids) for s in _sentences(child.text)]


def _collect(
    nodes: Sequence[MemoryNode], window: Window, start: int = 0, *, carried: bool = False
) -> list[_Candidate]:
    ordered = sorted(nodes, key=lambda n: (n.t_start, n.t_end, n.id))
    names = names_in([m.text for node in ordered for m in node.messages])
    found = [item for node in ordered for item in _from_child(node, names)]
    return [
        _Candidate(
            speaker,
            said,
            at,
            start + n,
            sources,
            Counter(tokenize(said)),
            carried,
            # Only what a person said is dated by its own time; an unquoted line may be an
            # LLM's fact, already written in absolute terms.
            annotation(said, _local(at, window)) if speaker else "",
        )
        for n, (speaker, said, at, sources) in enumerate(found)
    ]


def _cosine(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    dot = sum(v * b[k] for k, v in a.items() if k in b)
    if dot == 0:
        return 0.0
    return dot / math.sqrt(sum(v * v for v in a.values()) * sum(v * v for v in b.values()))


def _informativeness(pool: Sequence[_Candidate]) -> dict[int, float]:
    """How much a fact tells per token: the summed rarity (in the pool) of its distinct
    content words, per square root of its tokens, more for a concrete fact (a name, a
    number). Specific facts are what questions ask after; a theme shared by many facts
    (what plain centrality favours) is mostly a maxim."""
    df = Counter(t for c in pool for t in c.terms)
    n = len(pool)
    scores: dict[int, float] = {}
    for c in pool:
        rarity = sum(math.log((n + 1) / df[t]) + 0.5 for t in c.terms if t not in _CHATTER)
        concrete = 1.25 if _NUMBER.search(c.said) or _NAME_INSIDE.search(c.said) else 1.0
        concrete *= DATED_BONUS if c.note else 1.0
        scores[c.order] = concrete * rarity / math.sqrt(count_tokens(c.text))
    return scores


def _select(
    pool: Sequence[_Candidate],
    value: dict[int, float],
    budget: int,
    kept: list[_Candidate],
    extra_cost: int = 0,
) -> int:
    """Greedily add the most informative facts that fit; a near-duplicate of a kept fact joins
    its sources instead. Returns the budget left."""
    taken = {k.order for k in kept}
    for c in sorted(pool, key=lambda c: (-value[c.order], c.order)):
        if c.order in taken:
            continue
        twin = next(
            (i for i, k in enumerate(kept) if _cosine(c.terms, k.terms) >= DUPLICATE_SIMILARITY),
            None,
        )
        if twin is not None:
            merged = tuple(dict.fromkeys(kept[twin].sources + c.sources))
            kept[twin] = replace(kept[twin], sources=merged)
            taken.add(c.order)
            continue
        cost = count_tokens(c.text) + extra_cost
        if cost > budget:
            continue
        kept.append(c)
        taken.add(c.order)
        budget -= cost
    return budget


def _header(level: Level, window: Window) -> str:
    start = on_window_clock(window.start, window)
    if level is Level.SESSION:
        return f"Session on {dated(start)}:"
    if level is Level.DAY:
        return f"Day of {dated(start)}:"
    if level is Level.WEEK:
        return f"Week of {spelled_day(monday_of(start))}:"
    return f"Profile as of {MONTH_NAMES[start.month - 1]} {start.year} (+ new this month):"


def _latest(history: Sequence[MemoryNode], level: Level) -> MemoryNode | None:
    same = [h for h in history if h.level == level]
    return max(same, key=lambda h: (h.t_end, h.version)) if same else None


def _local(at: datetime, window: Window) -> datetime:
    return on_window_clock(at, window)


# --- the monthly profile: facts by person and topic -------------------------------------

# Topics in the order a reader meets them; a fact goes to the first whose words it uses.
TOPICS: tuple[tuple[str, frozenset[str]], ...] = tuple(
    (name, frozenset(words.split()))
    for name, words in (
        (
            "who",
            """job work works working career profession student study studying degree
            identity born grew raised age old retired""",
        ),
        (
            "people",
            """mom mother dad father parents sister brother sibling husband wife partner kids
            kid children child son daughter friend friends family grandma grandmother grandpa
            cousin aunt uncle boyfriend girlfriend neighbor colleague boss baby married cat
            dog pet""",
        ),
        (
            "plans",
            """plan plans planning gonna will i'll we'll want wants hope hoping goal goals dream
            next future decide decided considering apply applying saving starting soon""",
        ),
        (
            "likes",
            """love loves like likes favorite favourite enjoy enjoys prefer prefers hate fan
            passion passionate""",
        ),
        (
            "places",
            """trip travel traveled travelled visit visited moved move live lives city country
            beach mountains lake park abroad vacation camping""",
        ),
        (
            "activities",
            """paint painting painted play playing played run running ran read reading hike
            hiking hiked class classes pottery
            book books music sport sports art cook cooking garden volunteer volunteering game
            games dance dancing write writing photography pottery swim swam swimming
            instrument bake baking baked""",
        ),
    )
)
OTHER_TOPIC = "other"


def topic_of(said: str) -> str:
    """The first topic whose words (as written: "starting" is a plan, "started" is not) the
    fact uses."""
    terms = set(re.findall(r"[a-z']+", said.lower().replace("\u2019", "'")))
    return next((name for name, words in TOPICS if terms & words), OTHER_TOPIC)


def _profile_lines(kept: Sequence[_Candidate], window: Window) -> list[tuple[str, _Candidate]]:
    """Each person's facts by topic: `Caroline, plans: "..." (+8 May 2023)`."""
    order = {name: i for i, (name, _) in enumerate(TOPICS)} | {OTHER_TOPIC: len(TOPICS)}
    people = list(dict.fromkeys(c.speaker or "" for c in sorted(kept, key=lambda c: c.order)))
    ranked = sorted(
        kept,
        key=lambda c: (people.index(c.speaker or ""), order[topic_of(c.said)], c.at, c.order),
    )
    lines: list[tuple[str, _Candidate]] = []
    for c in ranked:
        mark = "" if c.carried else "+"
        when = spelled_day(_local(c.at, window))
        who = f"{c.speaker}, {topic_of(c.said)}" if c.speaker else topic_of(c.said)
        said = f'"{c.said}" {c.note}' if c.note else f'"{c.said}"'
        lines.append((f"{who}: {said} ({mark}{when})", c))
    return lines


PROFILE_LINE_COST = 9  # ", topic" and " (+8 May 2023)" around a fact's own text


def _dated_beyond_budget(
    pool: Sequence[_Candidate], kept: Sequence[_Candidate]
) -> list[_Candidate]:
    """The session's dated facts the budget left out, cut to the words around their
    relative times, within `DATED_BUDGET`: a session is the last level that sees each
    message, and an event's date is what its leaf cannot tell once "yesterday" has passed."""
    said = {s for c in kept for s in c.sources}
    left = DATED_BUDGET
    out: list[_Candidate] = []
    for c in pool:
        if not c.note or said.intersection(c.sources):
            continue
        short = replace(c, said=_clip(c.said, c.note))
        cost = count_tokens(short.text)
        if cost > left:
            continue
        out.append(short)
        said.update(c.sources)
        left -= cost
    return out


def consolidate_summary(
    level: Level,
    window: Window,
    children: Sequence[MemoryNode],
    history: Sequence[MemoryNode],
    *,
    reserved: int = 0,
) -> Summary:
    """The window's header and its most informative facts, within the level budget less
    `reserved` tokens (what a profile's fact lines take), each fact with its sources."""
    if level not in LEVEL_BUDGETS:
        raise ValueError(f"{level.label} is written from messages, not consolidated")
    header = _header(level, window)
    budget = LEVEL_BUDGETS[level] - count_tokens(header) - reserved
    previous = _latest(history, Level.MONTH) if level is Level.MONTH else None
    carried = _collect([previous], window, carried=True) if previous is not None else []
    fresh = _collect(children, window, start=len(carried))
    pool = carried + fresh
    if not pool:
        return Summary(text=f"{header} Nothing was disclosed.")
    value = _informativeness(pool)
    kept: list[_Candidate] = []
    if level is Level.MONTH:
        carry_budget = math.ceil(budget * PROFILE_CARRY_SHARE)
        cost = PROFILE_LINE_COST
        left = budget - carry_budget + _select(carried, value, carry_budget, kept, cost)
        left = _select(fresh, value, left, kept, cost)
        _select(carried, value, left, kept, cost)
        lines = _profile_lines(kept, window)
        return Summary(
            text="\n".join([header, *(f"- {line}" for line, _ in lines)]),
            facts=tuple(Fact(line, c.sources, c.at) for line, c in lines),
        )
    # A week spans days: each fact may need a "9 May (Tue):" label (about 5 tokens).
    label_cost = 5 if level is Level.WEEK else 0
    _select(pool, value, budget, kept, extra_cost=label_cost)
    if level is Level.SESSION:
        kept += _dated_beyond_budget(pool, kept)
    kept.sort(key=lambda c: (c.at, c.order))
    facts = tuple(Fact(c.text, c.sources, c.at) for c in kept)
    if level is not Level.WEEK:
        return Summary(text=" ".join([header, *(f.text for f in facts)]), facts=facts)
    parts: list[str] = [header]
    label = ""
    for c in kept:
        day = dated(_local(c.at, window), year=False)
        parts.append(c.text if day == label else f"{day}: {c.text}")
        label = day
    return Summary(text=" ".join(parts), facts=facts)
