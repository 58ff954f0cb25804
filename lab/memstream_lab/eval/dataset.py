"""The evaluation's view of LoCoMo: which questions are asked, of whom, at what time."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from memstream_lab.locomo import (
    ADVERSARIAL_CATEGORY,
    SECONDS_PER_MESSAGE,
    LocomoConversation,
    conversation_files,
    load_conversation,
    message_text,
)


@dataclass(frozen=True, slots=True)
class EvalQuestion:
    sample: str
    index: int  # position in the file's `qa` list: stable across runs and subsets
    category: int
    question: str
    answer: str
    evidence: tuple[str, ...]  # only ids naming a message of the conversation


@dataclass(frozen=True, slots=True)
class EvalConversation:
    conversation: LocomoConversation
    questions: tuple[EvalQuestion, ...]

    @property
    def sample(self) -> str:
        return self.conversation.sample_id

    @property
    def user_id(self) -> str:
        """The same user id `conversation_events` gives the conversation's events."""
        return f"locomo-{self.sample}"

    @property
    def query_time(self) -> datetime:
        """When the questions are asked: the time of the conversation's last message."""
        last = self.conversation.sessions[-1]
        return last.start + timedelta(seconds=(len(last.messages) - 1) * SECONDS_PER_MESSAGE)

    def documents(self) -> tuple[list[str], list[str]]:
        """Message ids and "Speaker: text" documents for the flat baselines, in order."""
        ids: list[str] = []
        texts: list[str] = []
        for session in self.conversation.sessions:
            for message in session.messages:
                ids.append(message.dia_id)
                texts.append(f"{message.speaker}: {message_text(message)}")
        return ids, texts


def load_split(
    data_dir: Path, *, conversations: int | None = None, max_questions: int | None = None
) -> list[EvalConversation]:
    """The first `conversations` files, each with its first `max_questions` non-adversarial
    questions (all of them when None)."""
    files = conversation_files(data_dir)
    if not files:
        raise FileNotFoundError(f"no LoCoMo conversation files in {data_dir}")
    return [_prepare(load_conversation(path), max_questions) for path in files[:conversations]]


def _prepare(conv: LocomoConversation, max_questions: int | None) -> EvalConversation:
    known = conv.dia_ids
    questions: list[EvalQuestion] = []
    for index, item in enumerate(conv.questions):
        if item.category == ADVERSARIAL_CATEGORY:
            continue
        evidence = tuple(dict.fromkeys(e for e in item.evidence if e in known))
        questions.append(
            EvalQuestion(conv.sample_id, index, item.category, item.question, item.answer, evidence)
        )
    return EvalConversation(conv, tuple(questions[:max_questions]))


def question_count(split: Sequence[EvalConversation]) -> int:
    return sum(len(c.questions) for c in split)
