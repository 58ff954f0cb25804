"""Answering a question from recalled memories, and judging the answer, with an LLM.

The protocol follows TiMem's appendix E.1 (itself Mem0's): the answerer sees the memories
with their dates, must turn relative time references into dates using those dates, and
answers in a few words; the judge compares the answer with the gold answer and is generous:
same topic, same date or period in another format, a longer answer that contains the gold
one, all count as CORRECT. The prompts are our own wording of that protocol.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from memstream.domain.models import Level
from memstream.settings import Settings

if TYPE_CHECKING:
    from openai import AsyncOpenAI

_LABEL = re.compile(r"\b(CORRECT|WRONG)\b")
ANSWER_MAX_TOKENS = 64
JUDGE_MAX_TOKENS = 128


@dataclass(frozen=True, slots=True)
class ContextMemory:
    """A recalled memory as the answerer sees it: when it happened and what it says."""

    level: Level
    t_start: datetime
    t_end: datetime
    text: str

    def render(self) -> str:
        start, end = f"{self.t_start:%d %B %Y}", f"{self.t_end:%d %B %Y}"
        when = start if start == end else f"{start} to {end}"
        return f"- [{when}] {self.text}"


def answer_prompt(question: str, memories: Sequence[ContextMemory]) -> list[dict[str, str]]:
    listed = "\n".join(m.render() for m in memories) or "(no memories were recalled)"
    system = (
        "You answer questions about two people from memories of their past conversations. "
        "Each memory is dated in square brackets. Rules: use only what the memories say; "
        "when memories disagree, trust the most recent one; when a memory speaks of a "
        "relative time (yesterday, last week, two months ago, next summer), work out the "
        "actual date, month or year from that memory's date and give that instead of the "
        "relative phrase; do not mix up people who are merely mentioned with the two people "
        "talking. Reply with the answer only, in at most six words."
    )
    user = f"Memories:\n{listed}\n\nQuestion: {question}\nAnswer:"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def judge_prompt(question: str, gold: str, generated: str) -> list[dict[str, str]]:
    system = (
        "You grade answers to questions one person asks another about their past "
        "conversations. Compare a generated answer with the gold answer and label it "
        "CORRECT or WRONG. Be generous: the generated answer is CORRECT when it refers to the "
        "same thing as the gold answer, even if it is longer, worded differently or adds "
        "detail; for dates and periods it is CORRECT when it points to the same date or period "
        "in any format (for example '7 May' and 'May 7th', or 'the week before 9 June 2023' "
        "and 'early June 2023'). It is WRONG when it names something else, misses the point, "
        "or says it does not know. Give one short sentence of reasoning, then reply with a "
        'JSON object {"label": "CORRECT"} or {"label": "WRONG"}; use only one of the two words.'
    )
    user = f"Question: {question}\nGold answer: {gold}\nGenerated answer: {generated}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def parse_label(content: str) -> bool | None:
    """True for CORRECT, False for WRONG, None when the reply names neither (or both)."""
    for candidate in re.findall(r"\{[^{}]*\}", content):
        try:
            label = json.loads(candidate).get("label")
        except (json.JSONDecodeError, AttributeError):
            continue
        if isinstance(label, str) and label.strip().upper() in ("CORRECT", "WRONG"):
            return label.strip().upper() == "CORRECT"
    found = set(_LABEL.findall(content.upper()))
    return (found == {"CORRECT"}) if len(found) == 1 else None


class Answerer:
    """Answers and judges through one OpenAI-compatible chat endpoint."""

    def __init__(self, client: AsyncOpenAI, model: str) -> None:
        self._client = client
        self._model = model

    @classmethod
    def from_settings(cls, settings: Settings) -> Answerer:
        from openai import AsyncOpenAI

        client = AsyncOpenAI(
            base_url=settings.llm.base_url,
            # Local OpenAI-compatible servers ignore the key; the client refuses an empty one.
            api_key=settings.llm.api_key.get_secret_value() or "unused",
            timeout=settings.llm.timeout_s,
            max_retries=settings.llm.max_retries,  # the client retries transient errors
        )
        return cls(client, settings.llm.model)

    async def close(self) -> None:
        await self._client.close()

    async def _complete(self, messages: list[dict[str, str]], max_tokens: int) -> str:
        response = await self._client.chat.completions.create(
            model=self._model,
            messages=messages,  # type: ignore[arg-type]
            temperature=0.0,
            max_tokens=max_tokens,
        )
        return (response.choices[0].message.content or "").strip()

    async def answer(self, question: str, memories: Sequence[ContextMemory]) -> str:
        return await self._complete(answer_prompt(question, memories), ANSWER_MAX_TOKENS)

    async def judge(self, question: str, gold: str, generated: str) -> bool:
        """The judge's verdict; a reply naming no label counts as WRONG (never inflates)."""
        reply = await self._complete(judge_prompt(question, gold, generated), JUDGE_MAX_TOKENS)
        return parse_label(reply) is True
