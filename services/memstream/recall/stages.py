"""The stages of the recall pipeline that an evaluation may replace: the gate and the fit.

`RecallPipeline` takes each as a function, the shipped one by default; an ablation
(tools/eval/variants.py) passes another, so production code holds no switch for it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

from memstream.domain.excerpt import excerpt_long_leaves
from memstream.domain.models import Complexity
from memstream.domain.query import Query
from memstream.domain.ranking import RecalledMemory, leaf_spend
from memstream.domain.summary_trim import fit_without_repeats
from memstream.ports import LanguageModel

__all__ = ["Fit", "Gate", "fit_in_place_of_leaves", "gate_by_model"]

log = logging.getLogger(__name__)


class Gate(Protocol):
    async def __call__(
        self,
        llm: LanguageModel,
        query: Query,
        complexity: Complexity,
        candidates: list[RecalledMemory],
    ) -> tuple[list[RecalledMemory], bool]:
        """The candidates kept, and whether the gate failed (then: all of them)."""
        ...


class Fit(Protocol):
    def __call__(
        self,
        query: Query,
        memories: Sequence[RecalledMemory],
        max_tokens: int,
        summary_share: float,
    ) -> tuple[list[RecalledMemory], int]:
        """The memories that fit `max_tokens`, best first, and the tokens they take."""
        ...


async def gate_by_model(
    llm: LanguageModel,
    query: Query,
    complexity: Complexity,
    candidates: list[RecalledMemory],
) -> tuple[list[RecalledMemory], bool]:
    """The candidates the language model keeps; all of them when it cannot decide."""
    if not candidates:
        return candidates, False
    try:
        kept = await llm.gate(query, complexity, [m.node for m in candidates])
    except Exception:
        log.warning("recall gate failed; returning the ungated candidates", exc_info=True)
        kept = None
    if kept is None:
        return candidates, True
    keep = set(kept)
    return [m for m in candidates if m.node.id in keep], False


def fit_in_place_of_leaves(
    query: Query,
    memories: Sequence[RecalledMemory],
    max_tokens: int,
    summary_share: float,
) -> tuple[list[RecalledMemory], int]:
    """Summaries take the place of the weakest leaves, never more tokens than the leaves
    alone; each says only what the leaves returned do not, and only its facts sharing a
    term with the query, but for a query asking when, its facts dating relative times. A
    leaf longer than the whole budget comes as an excerpt around the query's terms."""
    memories = excerpt_long_leaves(memories, query.term_set, max_tokens)
    budget = leaf_spend(memories, max_tokens)
    return fit_without_repeats(memories, budget, summary_share, query, query.asks_when)
