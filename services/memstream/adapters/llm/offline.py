"""The offline language model: deterministic text rules, no network, no model weights.

It is the default backend when no LLM endpoint is configured and the fallback when the
endpoint fails. Its outputs are extractive: L1 rewrites an exchange in the third person with
its date and keeps every content word (so lexical search finds it); L2-L5 keep the most
central statements of the children within a per-level token budget.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from memstream.domain.lexical import STOPWORDS, tokenize
from memstream.domain.models import Complexity, Level, MemoryNode, Plan, Summary, Turn, Window

# Token budgets of consolidated texts, header included. Each level covers more time, so it
# gets somewhat more room, but far less than its children together: consolidation compresses.
LEVEL_BUDGETS: dict[Level, int] = {
    Level.SESSION: 120,
    Level.DAY: 160,
    Level.WEEK: 200,
    Level.MONTH: 250,
}
# Share of the profile budget reserved for the previous profile, so stable traits persist
# while half the room still goes to what the new month showed.
PROFILE_CARRY_SHARE = 0.5
# Statements this similar (cosine of term counts) to one already kept add nothing new.
DUPLICATE_SIMILARITY = 0.85

_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
_TOKEN = re.compile(r"\w+|[^\w\s]")
_WORD_OR_GAP = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?|[^A-Za-z]+")
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\n+")
_DATE_LABEL = re.compile(r"^On \d{1,2} [A-Z][a-z]+(?: \d{4})?, ")
_HEADER = re.compile(r"^(?:Session on|Day of|Week of|Profile as of) [^:]{1,40}:\s*")
_ATTRIBUTED = re.compile(
    r"^(?:On \d{1,2} [A-Z][a-z]+(?: \d{4})?, )?[A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,2} "
    r"(?:said|shared)\b"
)


def count_tokens(text: str) -> int:
    """Words and punctuation marks: close to (a little under) what BPE tokenizers count."""
    return len(_TOKEN.findall(text))


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _day(instant: datetime, *, year: bool = True) -> str:
    text = f"{instant.day} {_MONTHS[instant.month - 1]}"
    return f"{text} {instant.year}" if year else text


# --- L1: third-person rendering -------------------------------------------------------------

# First person becomes singular "they": its verbs agree with "I" except am/was.
_FIRST_PERSON = {
    "i": "they",
    "me": "them",
    "my": "their",
    "myself": "themselves",
    "i'm": "they're",
    "i've": "they've",
    "i'll": "they'll",
    "i'd": "they'd",
}
_I_VERBS = {"am": "are", "was": "were"}
# Second person becomes the other speaker's name, with the verb put in the third person.
_YOU_FORMS = {
    "you're": "{} is",
    "you've": "{} has",
    "you'll": "{} will",
    "you'd": "{} would",
    "your": "{}'s",
    "yours": "{}'s",
    "yourself": "{}",
}
_YOU_VERBS = {"are": "is", "were": "was", "have": "has", "do": "does"}
_AUXILIARIES = _words(
    """can could will would should shall may might must did does do to let don't didn't won't
    can't couldn't wouldn't shouldn't"""
)
# Verbs common after "you" in chat; anything else is left as written rather than guessed at.
_CONJUGATE = _words(
    """want like love know think need feel make see look seem mean say enjoy get take hope
    remember work play live plan paint read write run use keep find come try believe deserve
    sound miss wish watch"""
)


def _third_singular(verb: str) -> str:
    if verb.endswith(("s", "sh", "ch", "x")):
        conjugated = verb + "es"
    elif verb.endswith("y") and verb[-2:-1] not in "aeiou":
        conjugated = verb[:-1] + "ies"
    else:
        conjugated = verb + "s"
    # Where the conjugated form would stem apart from the verb ("goes" vs "go"), "does go"
    # keeps the word that lexical search will look for.
    return conjugated if tokenize(conjugated) == tokenize(verb) else f"does {verb}"


def _match_case(original: str, replacement: str) -> str:
    return replacement[0].upper() + replacement[1:] if original[0].isupper() else replacement


def third_person(text: str, addressee: str | None) -> str:
    """Rewrite first person as "they" and, with one addressee, "you" as their name."""
    parts = _WORD_OR_GAP.findall(text.replace("\u2019", "'"))
    words = [i for i, p in enumerate(parts) if p[0].isalpha()]
    out = list(parts)
    for n, i in enumerate(words):
        low = parts[i].lower()
        prev = parts[words[n - 1]].lower() if n > 0 else ""
        nxt = parts[words[n + 1]].lower() if n + 1 < len(words) else ""
        if low in _FIRST_PERSON:
            # "I" is capitalised anywhere; only a sentence start keeps a capital.
            at_start = i == 0 or bool(re.search(r"[.!?]\s*$", parts[i - 1]))
            out[i] = _FIRST_PERSON[low].capitalize() if at_start else _FIRST_PERSON[low]
        elif low in _I_VERBS and "i" in (prev, nxt):
            out[i] = _match_case(parts[i], _I_VERBS[low])
        elif addressee is None:
            continue
        elif low in _YOU_FORMS:
            out[i] = _YOU_FORMS[low].format(addressee)
        elif low == "you":
            out[i] = addressee
            if prev in _YOU_VERBS:  # "are you", "do you": the question inverts the verb
                out[words[n - 1]] = _match_case(parts[words[n - 1]], _YOU_VERBS[prev])
            elif nxt in _YOU_VERBS and nxt != "do" and prev not in _AUXILIARIES:
                out[words[n + 1]] = _YOU_VERBS[nxt]
            elif nxt in _CONJUGATE and prev not in _AUXILIARIES:
                out[words[n + 1]] = _third_singular(nxt)
    return "".join(out)


def _proper_nouns(texts: Sequence[str]) -> set[str]:
    """Capitalised words seen inside a sentence (not first): names, places, titles."""
    found: set[str] = set()
    for text in texts:
        for sentence in _SENTENCE_BREAK.split(text):
            found.update(w for w in re.findall(r"[A-Za-z][\w'-]*", sentence)[1:] if w[0].isupper())
    return found


def _after_said(body: str, proper: set[str]) -> str:
    """Lower-case the first letter after "X said", unless it starts a name or an acronym."""
    first = re.match(r"[A-Za-z][\w'-]*", body)
    if first is None or first.group() in proper or first.group().isupper():
        return body
    return body[0].lower() + body[1:]


def _local_time(turn: Turn) -> datetime:
    """The turn's time in the user's zone: "8 May" must be the user's 8 May."""
    if not turn.tz:
        return turn.ts
    try:
        return turn.ts.astimezone(ZoneInfo(turn.tz))
    except (ZoneInfoNotFoundError, ValueError):
        return turn.ts  # the producer's offset is the next best guess


def render_segment(messages: Sequence[Turn]) -> str:
    """`On 8 May 2023, Caroline said they went to ... Melanie said ...`."""
    first = messages[0]
    when = _local_time(first)
    speakers = list(dict.fromkeys(m.speaker for m in messages))
    proper = _proper_nouns([m.text for m in messages]) | {w for s in speakers for w in s.split()}
    sentences: list[str] = []
    for message in messages:
        others = [s for s in speakers if s != message.speaker]
        body = " ".join(message.text.split())
        if body:
            body = _after_said(third_person(body, others[0] if len(others) == 1 else None), proper)
            end = "" if body[-1] in ".!?" else "."
            sentences.append(f"{message.speaker} said {body}{end}")
        # Shared images reach us as captions (e.g. LoCoMo's `blip_caption`); keep what they show.
        caption = message.metadata.get("caption") or message.metadata.get("blip_caption")
        if isinstance(caption, str) and caption.strip():
            sentences.append(f"{message.speaker} shared a photo of {caption.strip().rstrip('.')}.")
    if not sentences:
        sentences.append(f"{first.speaker} sent an empty message.")
    return f"On {_day(when)}, " + " ".join(sentences)


# --- L2-L5: extractive consolidation -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Statement:
    text: str
    at: datetime
    order: int
    terms: Counter[str]


def _statements(text: str) -> list[str]:
    """One speaker's statement per item (an attributed sentence and what follows it), or plain
    sentences when the text has no attributions (e.g. written by an LLM)."""
    sentences = [s.strip() for s in _SENTENCE_BREAK.split(_HEADER.sub("", text.strip()))]
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
        return f"Session on {_day(start)}:"
    if level is Level.DAY:
        return f"Day of {_day(start)}:"
    if level is Level.WEEK:
        return f"Week of {_day(start)}:"
    return f"Profile as of {_MONTHS[start.month - 1]} {start.year}:"


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
        day = _day(s.at.astimezone(zone) if zone else s.at, year=False)
        parts.append(s.text if day == label else f"On {day}, {s.text}")
        label = day
    return f"{header} " + " ".join(parts)


# --- Recall: planning and gating ------------------------------------------------------------

_COMPLEX = re.compile(
    r"\b(why|how(?! (?:often|many|much|long|old|far)\b)|patterns?|usually|typically|tends?"
    r"|over time|summari[sz]e|what kinds? of|personality|traits?|values|likely|prefer\w*)\b"
    r"|^\s*(would|might|could)\b",
    re.IGNORECASE,
)
_HYBRID = re.compile(
    r"\b(when|how often|how many|how long|before|after|since|until|first|last|latest|earlier"
    r"|later|recently|ago|date|years?|months?|weeks?|days?|yesterday|today|tomorrow|weekend"
    r"|during|between)\b",
    re.IGNORECASE,
)
_QUERY_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'-]*")
# Words that shape a question rather than name what a memory would contain.
_QUESTION_WORDS = _words("often kind kinds sort type many much long likely usually ever both")


def plan_query(query: str) -> Plan:
    """Complexity by cue words, keywords = the query's content words (names kept as written)."""
    words = [w.removesuffix("'s") for w in _QUERY_WORD.findall(query)]
    names = {w for w in words[1:] if w[0].isupper() and w != "I"}
    complexity: Complexity = "simple"
    if _COMPLEX.search(query):
        complexity = "complex"
    elif _HYBRID.search(query) or len(names) >= 2:
        complexity = "hybrid"
    keywords: dict[str, str] = {}
    for word in words:
        if word.lower() in STOPWORDS or word.lower() in _QUESTION_WORDS or len(word) < 2:
            continue
        keywords.setdefault(word.lower(), word if word in names else word.lower())
    return Plan(complexity=complexity, keywords=tuple(keywords.values()))


def gate_candidates(
    query: str, complexity: Complexity, candidates: Sequence[MemoryNode]
) -> list[str]:
    """Keep profiles and candidates sharing a discriminating content term with the query.

    Complex queries keep everything (they favour recall over precision). Terms every candidate
    contains (usually the person's name) cannot discriminate and are ignored. When no
    non-profile candidate would survive, the rule has found nothing to go on: keep all.
    """
    every = [c.id for c in candidates]
    if complexity == "complex" or not candidates:
        return every
    terms = [set(tokenize(c.text)) for c in candidates]
    wanted = set(tokenize(query))
    if len(candidates) > 2:
        shared = set(terms[0]).intersection(*terms[1:])
        wanted = (wanted - shared) or wanted
    kept = [
        c.id for c, t in zip(candidates, terms, strict=True) if c.level is Level.MONTH or t & wanted
    ]
    profile_ids = {c.id for c in candidates if c.level is Level.MONTH}
    return kept if any(i not in profile_ids for i in kept) else every


class OfflineLanguageModel:
    """`LanguageModel` without an LLM: same inputs always give the same outputs."""

    async def write_segment(
        self, messages: Sequence[Turn], history: Sequence[MemoryNode]
    ) -> Summary:
        # History is for an LLM to avoid repeating itself; an extractive rendering keeps all.
        if not messages:
            raise ValueError("a segment needs at least one message")
        return Summary(text=render_segment(messages))

    async def consolidate(
        self,
        level: Level,
        window: Window,
        children: Sequence[MemoryNode],
        history: Sequence[MemoryNode],
    ) -> Summary:
        return Summary(text=consolidate_text(level, window, children, history))

    async def plan(self, query: str) -> Plan:
        return plan_query(query)

    async def gate(
        self, query: str, complexity: Complexity, candidates: Sequence[MemoryNode]
    ) -> list[str] | None:
        return gate_candidates(query, complexity, candidates)
