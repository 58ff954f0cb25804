"""Degrade instead of failing: when the LLM cannot answer, the offline backend does.

A memory written by the fallback is marked `degraded`, so the consolidator can write it
again once the endpoint is back. The pipeline itself never stops for an LLM outage.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from memstream.adapters.llm.by_task import ByTaskLanguageModel
from memstream.adapters.llm.offline import OfflineLanguageModel
from memstream.domain.facts import FactReading
from memstream.domain.models import Complexity, Level, MemoryNode, Plan, Summary, Turn, Window
from memstream.domain.profile_facts import ProfileKnowledge
from memstream.domain.query import Query
from memstream.ports import LanguageModel
from memstream.settings import LLM_TASKS, Settings

if TYPE_CHECKING:
    from memstream.adapters.llm.openai import UsageHook

log = logging.getLogger(__name__)

FallbackHook = Callable[[str, BaseException], None]


class FallbackLanguageModel:
    """`primary`, or `offline` with `degraded=True` when `primary` raises (after its retries).

    Only `Exception` is caught: cancellation (`asyncio.CancelledError`) still propagates.
    """

    def __init__(
        self,
        primary: LanguageModel,
        offline: LanguageModel,
        *,
        on_fallback: FallbackHook | None = None,
    ) -> None:
        self._primary = primary
        self._offline = offline
        self._on_fallback = on_fallback

    def _failed(self, operation: str, exc: Exception) -> None:
        log.warning("LLM %s failed, using the offline backend: %r", operation, exc)
        if self._on_fallback is not None:
            self._on_fallback(operation, exc)

    async def write_segment(
        self, messages: Sequence[Turn], history: Sequence[MemoryNode]
    ) -> Summary:
        try:
            return await self._primary.write_segment(messages, history)
        except Exception as exc:
            self._failed("segment", exc)
        summary = await self._offline.write_segment(messages, history)
        return dataclasses.replace(summary, degraded=True)

    async def consolidate(
        self,
        level: Level,
        window: Window,
        children: Sequence[MemoryNode],
        history: Sequence[MemoryNode],
        knowledge: ProfileKnowledge | None = None,
    ) -> Summary:
        try:
            return await self._primary.consolidate(level, window, children, history, knowledge)
        except Exception as exc:
            self._failed(f"consolidate_l{int(level)}", exc)
        summary = await self._offline.consolidate(level, window, children, history, knowledge)
        return dataclasses.replace(summary, degraded=True)

    async def read_facts(self, leaf: MemoryNode) -> FactReading:
        # The rules' facts in its place: a leaf's knowledge is never left unread, and the
        # reading names the rules, which the leaf then records.
        try:
            return await self._primary.read_facts(leaf)
        except Exception as exc:
            self._failed("facts", exc)
        return await self._offline.read_facts(leaf)

    async def plan(self, query: Query) -> Plan:
        try:
            return await self._primary.plan(query)
        except Exception as exc:
            self._failed("plan", exc)
        return dataclasses.replace(await self._offline.plan(query), degraded=True)

    async def gate(
        self, query: Query, complexity: Complexity, candidates: Sequence[MemoryNode]
    ) -> list[str] | None:
        # None tells recall "no decision": it keeps the candidates rather than guess.
        try:
            return await self._primary.gate(query, complexity, candidates)
        except Exception as exc:
            self._failed("gate", exc)
        return None


def build_language_model(
    settings: Settings,
    *,
    on_usage: UsageHook | None = None,
    on_fallback: FallbackHook | None = None,
) -> LanguageModel:
    """Offline when no endpoint is configured; otherwise the endpoint with offline fallback."""
    if not settings.llm.base_url:
        return OfflineLanguageModel()
    # Imported only with an endpoint: openai takes a third of a second of CPU to import, on
    # the start-up of every worker that never calls it.
    from openai import AsyncOpenAI

    from memstream.adapters.llm.openai import OpenAILanguageModel

    client = AsyncOpenAI(
        base_url=settings.llm.base_url,
        # The client refuses an empty key; local OpenAI-compatible servers ignore it.
        api_key=settings.llm.api_key.get_secret_value() or "unused",
        timeout=settings.llm.timeout_s,
        max_retries=0,  # OpenAILanguageModel retries, telling transient errors apart
    )
    primary = OpenAILanguageModel(
        client,
        settings.llm.model,
        max_retries=settings.llm.max_retries,
        on_usage=on_usage,
        json_schema=settings.llm.json_schema,
        max_tokens=settings.llm.max_tokens,
    )
    offline = OfflineLanguageModel()
    model = FallbackLanguageModel(primary, offline, on_fallback=on_fallback)
    if settings.llm.named_tasks == LLM_TASKS:
        return model
    return ByTaskLanguageModel(model, offline, settings.llm.named_tasks)
