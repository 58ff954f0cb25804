"""Chat prompts for the LLM backend: one small function per task, each returning messages.

Every prompt asks for a single JSON object, so answers parse into pydantic models. Dates are
spelled out in the input because the memories must carry absolute dates: "yesterday" means
nothing once the conversation is months old.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memstream.domain.facts import ATTRIBUTES
from memstream.domain.models import (
    Complexity,
    Fact,
    Level,
    MemoryNode,
    SourceMessage,
    Turn,
    Window,
)
from memstream.domain.profile_facts import without_knowledge_lines

Message = dict[str, str]

# The version of these prompts, recorded in every node's derivation: change it with any change
# to a prompt's wording, so `memstream rebuild` writes the memories again (and only then).
# The offline backend records it too: 2024.2 is also its summaries dating relative times.
# 2024.3: a profile is given the facts holding at its month's end and the month's changes.
PROMPT_VERSION = "2024.3"

# The facts prompt's version, recorded as the extraction of every L1 the LLM backend reads
# (`domain.derivation`): change it with the prompt or its schema, so a rebuild reads again.
# llm-facts-2: an ending told without its attribute is the attribute `ended`.
# llm-facts-3: past the offered attributes, a noun names the slot ("medication", "landlord").
FACTS_PROMPT_VERSION = "llm-facts-3"

_TEXT_REPLY = 'Reply with one JSON object: {"text": "<the memory>"}.'
_FACTS_REPLY = (
    'Reply with one JSON object: {"facts": [{"text": "<one fact>", "source_ids": '
    '["<ids of the lines it comes from>"]}]}. Every fact cites at least one id, copied '
    "exactly from the lines given; never cite an id that is not listed."
)

# What each level keeps; every level keeps only what people disclosed or decided.
_LEVEL_TASKS: dict[Level, str] = {
    Level.SESSION: "List the facts disclosed in one conversation session.",
    Level.DAY: "Merge the facts of one day's sessions, joining those that say the same.",
    Level.WEEK: "Merge the facts of one week's days, joining those that say the same.",
    Level.MONTH: (
        "Keep a profile of the people: who they are, people in their life, places, "
        "activities and interests, preferences, plans and goals. Start from the previous "
        "profile's facts that still hold, add this month's, and begin a fact with 'New:' "
        "when it changed or appeared this month."
    ),
}
# With the knowledge write on, a profile is also given the facts known at the month's end.
_KNOWN_TASK = (
    "The facts known at the period's end come first in the profile: keep each one that "
    "says what holds now or what changed this month ('moved from Porto to Berlin') as a "
    "fact of its own, citing its ids, and never state a replaced value as current."
)
# At most this many tokens of known fact lines in a profile's prompt.
KNOWN_FACT_TOKENS = 800
# Facts per level: each level compresses the one below (see domain/summary_text budgets).
LEVEL_FACTS: dict[Level, int] = {
    Level.SESSION: 6,
    Level.DAY: 7,
    Level.WEEK: 8,
    Level.MONTH: 12,
}


def _when(instant: datetime) -> str:
    return instant.strftime("%Y-%m-%d %H:%M %Z").strip()


def _memory_lines(nodes: Sequence[MemoryNode]) -> str:
    if not nodes:
        return "(none)"
    ordered = sorted(nodes, key=lambda n: n.t_start)
    return "\n".join(f"- [{_when(n.t_start)} to {_when(n.t_end)}] {n.text}" for n in ordered)


def source_lines(children: Sequence[MemoryNode]) -> list[tuple[tuple[str, ...], str]]:
    """What a consolidation reads, one line per citable unit: a leaf's messages (by event
    id) or a summary's facts (by their source ids); a node with neither by its own sources."""
    lines: list[tuple[tuple[str, ...], str]] = []
    for node in sorted(children, key=lambda n: (n.t_start, n.id)):
        if node.messages:
            for m in node.messages:
                caption = f" [photo: {m.caption}]" if m.caption else ""
                lines.append(((m.event_id,), f"{m.ts:%Y-%m-%d} {m.speaker}: {m.text}{caption}"))
        elif node.facts:
            lines.extend(
                (f.source_ids, f"{(f.at or node.t_start):%Y-%m-%d} {f.text}") for f in node.facts
            )
        else:
            lines.append((node.source_ids, f"{node.t_start:%Y-%m-%d} {node.text}"))
    return lines


def segment_prompt(messages: Sequence[Turn], history: Sequence[MemoryNode]) -> list[Message]:
    """L1: the new facts of one exchange, attributed, with absolute dates."""
    exchange = "\n".join(f"[{_when(m.ts)}] {m.speaker}: {m.text}" for m in messages)
    system = (
        "You keep memories for a conversational assistant. Write down what this exchange "
        "tells about the people in it, in two to four plain sentences: name who said each "
        "thing, give the date, and keep every concrete detail (people, places, events, "
        "objects, numbers, titles, stated feelings). Turn relative times ('last week') into "
        "dates counted from the message date. Skip greetings and small talk, skip what the "
        "earlier memories already hold, and add nothing that was not said. " + _TEXT_REPLY
    )
    user = f"Earlier memories:\n{_memory_lines(history)}\n\nNew exchange:\n{exchange}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def consolidation_prompt(
    level: Level,
    window: Window,
    children: Sequence[MemoryNode],
    history: Sequence[MemoryNode],
    known: Sequence[Fact] = (),
) -> list[Message]:
    """L2-L5: the window's facts, each citing the ids of the lines it comes from; a profile
    is also given the `known` fact lines (`domain.profile_facts`), with their ids."""
    task = f"{_LEVEL_TASKS[level]} {_KNOWN_TASK}" if known else _LEVEL_TASKS[level]
    system = (
        f"You keep memories for a conversational assistant. {task} A fact is "
        "something a person told about their life: an event, a plan, a preference, a "
        "relationship, a place, a date, a number. Name the person and give the date in each "
        "fact, turning relative times ('yesterday', 'last Friday') into dates counted from "
        "the line's date. Leave out greetings, thanks, compliments, questions and an assistant's "
        f"pleasantries. At most {LEVEL_FACTS[level]} facts, one short sentence each, using "
        "only the lines given. " + _FACTS_REPLY
    )
    numbered = "\n".join(
        f"[{', '.join(ids)}] {text}" for ids, text in source_lines(children) if ids
    )
    previous = ""
    if level is Level.MONTH and history:
        # Its fact lines are not carried: this month's known facts replace them.
        latest = without_knowledge_lines(max(history, key=lambda h: h.t_end))
        carried = "\n".join(f"[{', '.join(f.source_ids)}] {f.text}" for f in latest.facts)
        previous = f"Previous profile:\n{carried or latest.text}\n\n"
    facts = "\n".join(f"[{', '.join(f.source_ids)}] {f.text}" for f in known)
    known_now = f"Facts known at the period's end:\n{facts}\n\n" if known else ""
    user = (
        f"Period: {_when(window.start)} to {_when(window.end)}\n\n{previous}{known_now}"
        f"Lines (ids in brackets):\n{numbered or '(none)'}"
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def facts_prompt(messages: Sequence[SourceMessage]) -> list[Message]:
    """An L1's facts: who each is about, which attribute, what value, since when."""
    attributes = ", ".join(sorted(ATTRIBUTES))
    system = (
        "You keep a record of what is true in people's lives, read from their chats with an "
        "assistant. From the numbered lines, list each thing a person says about their own "
        "life or about someone they know. Give each one:\n"
        "- subject: who or what it is about: the person's name when about themselves; the "
        "relation ('sister', 'boss') when they name someone that way, with relation_of set "
        "to the person speaking; otherwise the name given (a friend, a pet, a town).\n"
        f"- attribute: one of {attributes} when one fits. Otherwise the noun a person "
        "would put after 'my' for it, in the singular when they have one at a time "
        "('medication', 'landlord', 'coach', 'bank', 'favourite cafe'). Use statement, with "
        "a short clause as the value, only when nothing names it. Use ended when a line "
        "says something stopped without saying what kind of thing it was ('I've left the "
        "Magpies', 'Ellie quit keto', 'we stopped going to the climbing gym'): the value is "
        "what ended.\n"
        "- value: the place, organisation, occupation, thing or activity, in the person's "
        "own words, without the verb.\n"
        "- negated: true when the line says it stopped holding ('moved out of', 'quit', "
        "'no longer').\n"
        "- since: the day it began to hold as YYYY-MM-DD when the line says or implies it "
        "(count 'last month' from the line's date), otherwise null.\n"
        "- certainty: stated when said outright, implied when only suggested.\n"
        "- source_ids: the ids of the lines it comes from, copied exactly.\n"
        "Leave out questions, greetings, wishes, what might happen, and what the assistant "
        "says. When the lines state nothing of the kind, the list is empty. "
        'Reply with one JSON object: {"facts": [{"subject": "...", "relation_of": null, '
        '"attribute": "...", "value": "...", "negated": false, "since": null, '
        '"certainty": "stated", "source_ids": ["..."]}]}.'
    )
    lines = "\n".join(
        f"[{m.event_id}] {m.ts:%Y-%m-%d} {m.speaker} ({m.role}): {m.text}" for m in messages
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": lines}]


def planner_prompt(query: str) -> list[Message]:
    """Recall planning: how much of the tree the query needs, and its keywords."""
    system = (
        "You plan memory recall for a conversational assistant. Classify the question:\n"
        '- "simple": one stated fact answers it (who, what, where, which).\n'
        '- "hybrid": it needs several facts combined, or facts placed in time (when, how '
        "often, before/after, comparisons, lists of things).\n"
        '- "complex": it needs the person\'s preferences, habits, personality or values, or '
        "reasoning about them (why, would they likely, what kind of person, patterns over "
        "time, predictions, hypotheticals).\n"
        "Also give one to five keywords: the content words that a matching memory would "
        "contain (objects, activities, places, topics), not filler words. "
        'Reply with one JSON object: {"complexity": "simple" | "hybrid" | "complex", '
        '"keywords": ["..."]}.'
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": query}]


_GATE_BREADTH: dict[Complexity, str] = {
    "simple": "Be strict: keep only memories that state the answer or its time and place.",
    "hybrid": "Keep every memory that contributes one of the facts needed, and nothing else.",
    "complex": (
        "Be generous: keep memories that give useful context about the person's habits, "
        "preferences or history relevant to the question, and drop only unrelated ones."
    ),
}


def gate_prompt(
    query: str, complexity: Complexity, candidates: Sequence[MemoryNode]
) -> list[Message]:
    """Recall gating: which numbered candidates help answer the question."""
    system = (
        "You filter recalled memories before they reach an assistant that must answer a "
        f"question. {_GATE_BREADTH[complexity]} "
        'Reply with one JSON object: {"keep": [<numbers of the memories to keep>]}.'
    )
    listing = "\n".join(
        f"{i}. (level {int(c.level)}, {_when(c.t_start)} to {_when(c.t_end)}) {c.text}"
        for i, c in enumerate(candidates, start=1)
    )
    user = f"Question: {query}\n\nMemories:\n{listing}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]
