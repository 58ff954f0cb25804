"""The offline language model: deterministic text rules, no network, no model weights.

It is the default backend when no LLM endpoint is configured and the fallback when the
endpoint fails. The rules are pure domain logic: L1 in `domain/segment_text.py`, L2-L5 in
`domain/summary_text.py` (a profile's fact lines: `domain/profile_facts.py`), the recall
planner and gate in `domain/query_heuristics.py`.
"""

from __future__ import annotations

from collections.abc import Sequence

from memstream.domain.derivation import RULES_EXTRACTION
from memstream.domain.fact_extraction import extract_facts
from memstream.domain.facts import FactReading
from memstream.domain.models import Complexity, Level, MemoryNode, Plan, Summary, Turn, Window
from memstream.domain.profile_facts import ProfileKnowledge, offline_profile
from memstream.domain.query import Query
from memstream.domain.query_heuristics import gate_candidates, plan_query
from memstream.domain.segment_text import render_segment
from memstream.domain.summary_text import consolidate_summary


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
        knowledge: ProfileKnowledge | None = None,
    ) -> Summary:
        if level is Level.MONTH:
            return offline_profile(window, children, history, knowledge)
        return consolidate_summary(level, window, children, history)

    async def read_facts(self, leaf: MemoryNode) -> FactReading:
        return FactReading(extract_facts(leaf.messages, user_id=leaf.user_id), RULES_EXTRACTION)

    async def plan(self, query: Query) -> Plan:
        return plan_query(query)

    async def gate(
        self, query: Query, complexity: Complexity, candidates: Sequence[MemoryNode]
    ) -> list[str] | None:
        return gate_candidates(query, complexity, candidates)
