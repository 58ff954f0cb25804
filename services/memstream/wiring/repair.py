"""The repair and the divergence check of a connected `Container` (`memstream.repair`)."""

from __future__ import annotations

import functools

from memstream.adapters.embedding.frame_similarities import left_fold_similarities
from memstream.repair.divergence import DivergenceWatch, check_stores
from memstream.repair.restore import StoreRepair
from memstream.segmenter.knowledge import FramePrototypes
from memstream.wiring.container import Container


def build_repair(c: Container) -> StoreRepair:
    return StoreRepair(
        tree=c.tree,
        index=c.index,
        # A repair runs beside live traffic: behind the write path's embeddings.
        embedder=c.background_embedder,
        nodes_per_s=c.settings.rebuild.repair_nodes_per_s,
        # What the segmenter's knowledge write runs: the rules unless an LLM reads the facts.
        knowledge_rules=c.settings.lifecycle.knowledge and not c.settings.llm.base_url,
        # The frames' thresholds are the local model's distances, as for the segmenter.
        frames=(
            FramePrototypes(c.background_embedder, left_fold_similarities).frames
            if c.settings.embedding.backend == "local"
            else None
        ),
    )


def divergence_watch(c: Container, sample_users: int | None = None) -> DivergenceWatch:
    """One per process: readiness and the scheduler's collector read the same check.
    `sample_users`: fewer than the setting where only readiness reads it (the recall API),
    which needs no more than whether a whole store is missing."""
    sample = sample_users or c.settings.rebuild.divergence_sample_users
    check = functools.partial(check_stores, c.tree, c.index, sample)
    return DivergenceWatch(check, c.settings.rebuild.divergence_check_s)
