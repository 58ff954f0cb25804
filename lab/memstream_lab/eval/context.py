"""What every method runner shares: the split, the record log, progress, optional answering."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

import numpy as np
import numpy.typing as npt
from rich.progress import Progress, TaskID

from memstream.domain.models import Level
from memstream.ports import Embedder
from memstream_lab.eval.answer import Answerer, ContextMemory
from memstream_lab.eval.dataset import EvalConversation, EvalQuestion
from memstream_lab.eval.records import Record, RecordLog
from memstream_lab.locomo import SECONDS_PER_MESSAGE

# Answers are I/O-bound HTTP calls: overlap this many while recall keeps going.
ANSWER_CONCURRENCY = 8


class AnswerPool:
    """Answers and judges recalled memories in the background, then logs the record."""

    def __init__(
        self, answerer: Answerer, log: RecordLog, concurrency: int = ANSWER_CONCURRENCY
    ) -> None:
        self._answerer = answerer
        self._log = log
        self._slots = asyncio.Semaphore(concurrency)
        self._tasks: set[asyncio.Task[None]] = set()
        self.failures = 0

    def submit(self, record: Record, question: EvalQuestion, memories: list[ContextMemory]) -> None:
        task = asyncio.create_task(self._answer(record, question, memories))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _answer(
        self, record: Record, question: EvalQuestion, memories: list[ContextMemory]
    ) -> None:
        async with self._slots:
            try:
                answer = await self._answerer.answer(question.question, memories)
                correct = await self._answerer.judge(question.question, question.answer, answer)
            except Exception:
                # Not logged: the question is answered again by the next (resumed) run.
                self.failures += 1
                return
        self._log.add(replace(record, answer=answer, correct=correct))

    async def drain(self) -> None:
        while self._tasks:
            await asyncio.gather(*list(self._tasks))


@dataclass
class RunContext:
    split: Sequence[EvalConversation]
    log: RecordLog
    progress: Progress
    query_vectors: dict[str, list[float]]
    answers: AnswerPool | None = None
    answer_methods: frozenset[str] = frozenset()
    message_times: dict[str, dict[str, datetime]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for conv in self.split:
            self.message_times[conv.sample] = {
                m.dia_id: s.start + timedelta(seconds=seq * SECONDS_PER_MESSAGE)
                for s in conv.conversation.sessions
                for seq, m in enumerate(s.messages)
            }

    def task(self, method: str) -> tuple[TaskID, int]:
        """A progress bar for a method, already advanced by the questions it has done."""
        total = sum(len(c.questions) for c in self.split)
        return self.progress.add_task(method, total=total), total

    def emit(self, record: Record, question: EvalQuestion, memories: list[ContextMemory]) -> None:
        """Log a record now, or after its answer is judged when this method is answered."""
        if self.answers is not None and record.method in self.answer_methods:
            self.answers.submit(record, question, memories)
        else:
            self.log.add(record)

    def wants_answer(self, method: str) -> bool:
        return self.answers is not None and method in self.answer_methods

    def message_memory(self, sample: str, dia_id: str, text: str) -> ContextMemory:
        at = self.message_times[sample][dia_id]
        return ContextMemory(Level.SEGMENT, at, at, text)

    def vector(self, text: str) -> npt.NDArray[np.float32]:
        return np.asarray(self.query_vectors[text], dtype=np.float32)


async def embed_queries(embedder: Embedder, texts: Sequence[str]) -> dict[str, list[float]]:
    unique = list(dict.fromkeys(texts))
    return dict(zip(unique, await embedder.embed(unique), strict=True))


async def single_query_embed_ms(embedder: Embedder, texts: Sequence[str]) -> float:
    """Median time to embed one query on its own (what a recall call pays on a cache miss)."""
    timings: list[float] = []
    for text in texts:
        started = time.perf_counter()
        await embedder.embed([text])
        timings.append((time.perf_counter() - started) * 1000)
    timings.sort()
    return timings[len(timings) // 2] if timings else 0.0
