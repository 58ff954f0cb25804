"""A language model for some tasks, the offline backend for the rest.

A deployment may want the model's judgement where it pays and none where it costs most:
recall's plan and gate are two model calls on every request, in the path an agent waits on,
while an L1's facts and the summaries are written once, off that path. `MEMSTREAM_LLM_TASKS`
names what the model does; each call of the `LanguageModel` port goes to it or to the
offline backend by its task (`settings.LLM_TASKS`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from memstream.domain.facts import FactReading
from memstream.domain.models import Complexity, Level, MemoryNode, Plan, Summary, Turn, Window
from memstream.domain.profile_facts import ProfileKnowledge
from memstream.domain.query import Query
from memstream.ports import LanguageModel


class ByTaskLanguageModel:
    """`model` for the tasks named, `offline` for the others."""

    def __init__(
        self, model: LanguageModel, offline: LanguageModel, tasks: Collection[str]
    ) -> None:
        self._tasks = frozenset(tasks)
        self._model = model
        self._offline = offline

    def _for(self, task: str) -> LanguageModel:
        return self._model if task in self._tasks else self._offline

    async def write_segment(
        self, messages: Sequence[Turn], history: Sequence[MemoryNode]
    ) -> Summary:
        return await self._for("segment").write_segment(messages, history)

    async def read_facts(self, leaf: MemoryNode) -> FactReading:
        return await self._for("facts").read_facts(leaf)

    async def consolidate(
        self,
        level: Level,
        window: Window,
        children: Sequence[MemoryNode],
        history: Sequence[MemoryNode],
        knowledge: ProfileKnowledge | None = None,
    ) -> Summary:
        return await self._for("consolidate").consolidate(
            level, window, children, history, knowledge
        )

    async def plan(self, query: Query) -> Plan:
        return await self._for("plan").plan(query)

    async def gate(
        self, query: Query, complexity: Complexity, candidates: Sequence[MemoryNode]
    ) -> list[str] | None:
        return await self._for("gate").gate(query, complexity, candidates)
