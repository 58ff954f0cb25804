"""Read the knowledge-update set and turn it into what a harness publishes and scores."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from memstream_lab.knowledge.score import (
    Question,
    QuestionScore,
    ReturnedItem,
    score_question,
    shares_by_kind,
)

# lab/memstream_lab/knowledge/dataset.py -> lab/data/knowledge_updates
DATA_DIR = Path(__file__).resolve().parents[2] / "data" / "knowledge_updates"
SCHEMA_PATH = DATA_DIR / "schema.json"
# How the set was written: the rules were developed on the first split; each later one was
# written without reading them, so its score is what a new conversation would get.
SPLITS = {
    "ku01-ku34": "rules developed here",
    "ku35-ku44": "blind, written 29 Nov 2026",
    "ku45-ku54": "blind, written 30 Nov 2026",
}

Conversation = dict[str, Any]
# What a system under test returns for one question of one conversation, best first.
Answerer = Callable[[Conversation, dict[str, Any]], Sequence[ReturnedItem]]


# "ku35" or the inclusive range "ku35-ku44" (the second prefix may be left out: "ku35-44").
_ID_OR_RANGE = re.compile(r"(?P<prefix>[a-z]+)(?P<first>\d+)(?:-(?:(?P=prefix))?(?P<last>\d+))?")


def ids_in(spec: str) -> tuple[str, ...]:
    """The conversation ids a comma-separated list of ids and ranges names, in the order given.

    ``"ku35-ku44,ku03"`` names ku35 to ku44 then ku03; a range keeps its first id's digits.
    """
    ids: list[str] = []
    for part in (p.strip() for p in spec.split(",")):
        matched = _ID_OR_RANGE.fullmatch(part.casefold())
        if matched is None:
            raise ValueError(f"not a conversation id or range: {part!r}")
        prefix, first = matched["prefix"], matched["first"]
        last = matched["last"] or first
        if int(last) < int(first):
            raise ValueError(f"range ends before it starts: {part!r}")
        ids += [f"{prefix}{n:0{len(first)}d}" for n in range(int(first), int(last) + 1)]
    return tuple(dict.fromkeys(ids))


def conversation_paths(data_dir: Path = DATA_DIR) -> list[Path]:
    """The set's conversation files, in id order (the schema sits beside them)."""
    return sorted(p for p in data_dir.glob("ku*.json"))


def load_conversation(path: Path) -> Conversation:
    """One conversation as its JSON object (validate it against ``schema.json`` to trust it)."""
    loaded: Conversation = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def load_all(data_dir: Path = DATA_DIR) -> list[Conversation]:
    return [load_conversation(p) for p in conversation_paths(data_dir)]


def sessions_in_published_order(conversation: Conversation) -> list[dict[str, Any]]:
    """Sessions as the harness publishes them: late sessions come after newer ones."""
    return sorted(conversation["sessions"], key=lambda s: s["published_order"])


def event_id(said: dict[str, Any]) -> str:
    """The event id of the turn a record names by its session and place (`session_id`,
    `seq`): a turn's own, or an annotated fact's, which names the turn stating it."""
    return f"{said['session_id']}-{said['seq']}"


def turn_events(conversation: Conversation) -> Iterator[dict[str, Any]]:
    """The conversation as ``turn.v1`` values, session by session in published order."""
    for session in sessions_in_published_order(conversation):
        for turn in session["turns"]:
            yield {
                "type": "turn.v1",
                "event_id": event_id({"session_id": session["session_id"], **turn}),
                "user_id": conversation["user_id"],
                "session_id": session["session_id"],
                "seq": turn["seq"],
                "speaker": turn["speaker"],
                "role": turn["role"],
                "text": turn["text"],
                "ts": turn["ts"],
                "tz": conversation["tz"],
            }


def question_for_scoring(question: dict[str, Any]) -> Question:
    """The scorer's view of one question: accepted forms first the expected one."""
    query_time = question.get("query_time")
    return Question(
        kind=question["kind"],
        expected=(question["expected"], *question["accepted"]),
        superseded=tuple(question["superseded"]),
        query_time=datetime.fromisoformat(query_time) if query_time else None,
        distractors=tuple(question.get("distractors", ())),
    )


def conversation_text(conversation: Conversation) -> str:
    """Every turn's text, one per line: what a system could have learned from."""
    return "\n".join(t["text"] for s in conversation["sessions"] for t in s["turns"])


def set_size(conversations: list[Conversation]) -> dict[str, int]:
    """What the set holds: conversations, sessions, turns, fact changes and questions per kind."""
    sessions = [s for c in conversations for s in c["sessions"]]
    facts = Counter(f["change"] for c in conversations for f in c["facts"])
    kinds = Counter(q["kind"] for c in conversations for q in c["questions"])
    return {
        "conversations": len(conversations),
        "sessions": len(sessions),
        "turns": sum(len(s["turns"]) for s in sessions),
        "fact_changes": facts["update"],
        "restatements": facts["restatement"],
        "late_statements": facts["late"],
        "questions": sum(kinds.values()),
        **{f"questions_{kind}": n for kind, n in sorted(kinds.items())},
    }


def score_all(conversations: list[Conversation], answer: Answerer) -> list[QuestionScore]:
    """Ask every question of every conversation and judge each ranked answer."""
    return [
        score_question(question_for_scoring(q), answer(c, q))
        for c in conversations
        for q in c["questions"]
    ]


def evaluate(conversations: list[Conversation], answer: Answerer) -> dict[str, float]:
    """Share of questions passed per kind and over all: the figure issue #33 asks for."""
    return shares_by_kind(score_all(conversations, answer))
