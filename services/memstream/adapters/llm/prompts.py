"""Chat prompts for the LLM backend: one small function per task, each returning messages.

Every prompt asks for a single JSON object, so answers parse into pydantic models. Dates are
spelled out in the input because the memories must carry absolute dates: "yesterday" means
nothing once the conversation is months old.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memstream.domain.models import Complexity, Level, MemoryNode, Turn, Window

Message = dict[str, str]

_TEXT_REPLY = 'Reply with one JSON object: {"text": "<the memory>"}.'

# What each level's memory is for; the consolidation prompt is built around it.
_LEVEL_TASKS: dict[Level, str] = {
    Level.SESSION: (
        "Merge the segment memories of one conversation session into a factual summary of "
        "what happened and what was said. Remove repetition; keep names, dates, places, "
        "numbers and stated feelings. Stay factual: no interpretation."
    ),
    Level.DAY: (
        "Consolidate the session summaries of one day. Describe the day's context: what the "
        "person did, recurring activities and routines, and the topics they kept coming back "
        "to. Keep the concrete facts that support each point."
    ),
    Level.WEEK: (
        "Consolidate the daily memories of one week into the patterns it shows: how the "
        "person's behaviour, interests, plans and preferences developed or changed over the "
        "week. Anchor each pattern to the dates it comes from."
    ),
    Level.MONTH: (
        "Maintain a long-term profile of the person. Start from the previous profile, if any, "
        "and refine it with this month's weekly memories: stable personality traits, "
        "preferences, values, relationships, goals and important life facts. Keep what still "
        "holds, update what changed (say when), and drop nothing important without evidence."
    ),
}
_LEVEL_WORDS: dict[Level, int] = {
    Level.SESSION: 120,
    Level.DAY: 150,
    Level.WEEK: 180,
    Level.MONTH: 250,
}


def _when(instant: datetime) -> str:
    return instant.strftime("%Y-%m-%d %H:%M %Z").strip()


def _memory_lines(nodes: Sequence[MemoryNode]) -> str:
    if not nodes:
        return "(none)"
    ordered = sorted(nodes, key=lambda n: n.t_start)
    return "\n".join(f"- [{_when(n.t_start)} to {_when(n.t_end)}] {n.text}" for n in ordered)


def segment_prompt(messages: Sequence[Turn], history: Sequence[MemoryNode]) -> list[Message]:
    """L1: the new facts of one exchange, in the third person, with absolute dates."""
    exchange = "\n".join(f"[{_when(m.ts)}] {m.speaker}: {m.text}" for m in messages)
    system = (
        "You write memories for a conversational assistant. Turn the new exchange into a "
        "short third-person account (two to four plain sentences) that names each speaker "
        "and gives the date of the exchange. Keep every concrete detail: people, places, "
        "events, objects, numbers, titles, and feelings the speakers stated. Where a relative "
        "time appears ('last week'), add the absolute date it refers to, computed from the "
        "message date. Leave out greetings and filler. Do not repeat what the earlier "
        "memories already say, and do not invent anything. " + _TEXT_REPLY
    )
    user = f"Earlier memories:\n{_memory_lines(history)}\n\nNew exchange:\n{exchange}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def consolidation_prompt(
    level: Level, window: Window, children: Sequence[MemoryNode], history: Sequence[MemoryNode]
) -> list[Message]:
    """L2-L5: one level up, from the window's children and the same level's recent memories."""
    system = (
        f"You consolidate memories for a conversational assistant. {_LEVEL_TASKS[level]} "
        f"Write in the third person, at most about {_LEVEL_WORDS[level]} words, plain prose "
        "without lists or headings, and mention absolute dates where they matter. "
        "Use only the information given. " + _TEXT_REPLY
    )
    label = "Previous profile and recent profiles" if level is Level.MONTH else "Recent memories"
    user = (
        f"Period: {_when(window.start)} to {_when(window.end)}\n\n"
        f"{label} at this level (for continuity; do not copy them):\n"
        f"{_memory_lines(history)}\n\n"
        f"Memories to consolidate:\n{_memory_lines(children)}"
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


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
