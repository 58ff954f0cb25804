"""Recall's use of the entity index: the leaves of the entities a query names join the pool,
and the heat the re-rank reads (`domain/entity_heatmap.py`, `domain/rerank.py`).

A joined leaf has no fused score of its own: it enters at the score of the last leaf the
pool would keep (`leaf_top_k`), so only the re-rank's bonuses (heat, speaker, time, summary)
decide whether it is kept.
"""

from __future__ import annotations

from memstream.domain.entity_heatmap import leaves_to_join, rarity
from memstream.domain.entity_index import (
    EntityIndex,
    entity_leaves,
    leaf_entities,
    query_entities,
)
from memstream.domain.models import Level
from memstream.domain.query import Query
from memstream.domain.ranking import RecalledMemory
from memstream.domain.recall_options import RecallOptions
from memstream.domain.rerank import EntityHeat
from memstream.ports import NodeReader

__all__ = ["join_entity_leaves"]


async def join_entity_leaves(
    tree: NodeReader,
    user_id: str,
    query: Query,
    index: EntityIndex,
    pool: list[RecalledMemory],
    options: RecallOptions,
) -> tuple[EntityHeat, list[RecalledMemory]]:
    """The entities the query names, and the pool with their leaves the search missed (read
    in one MGET)."""
    keys = query_entities(index, query.text)
    found = {m.node.id for m in pool}
    of_entity = entity_leaves(index, keys)
    wanted = leaves_to_join(of_entity, keys, found, options.entity_join, options.entity_join_scan)
    joined = await tree.get_many(user_id, list(wanted)) if wanted else []
    scores = sorted((m.score for m in pool), reverse=True)
    cutoff = scores[min(len(scores), options.leaf_top_k) - 1] if scores else 0.0
    pool = pool + [
        RecalledMemory(n, cutoff)
        for n in joined
        if n.user_id == user_id and n.level == Level.SEGMENT
    ]
    weights = {k: rarity(len(of_entity.get(k, ())), len(index.leaves)) for k in keys}
    leaf_keys = {m.node.id: leaf_entities(index, m.node.id) for m in pool}
    return EntityHeat(weights, leaf_keys), pool
