"""The repair and the divergence check of a connected `Container` (`memstream.repair`)."""

from __future__ import annotations

import functools

from memstream.repair.divergence import DivergenceWatch, check_stores
from memstream.repair.restore import StoreRepair
from memstream.wiring.container import Container
from memstream.wiring.frames import framed_embedding


def build_repair(c: Container) -> StoreRepair:
    # A repair runs beside live traffic: behind the write path's embeddings. Its messages
    # are embedded as the segmenter's are, and read by the same frames.
    embedder, frames = framed_embedding(c, c.background_embedder)
    return StoreRepair(
        tree=c.tree,
        index=c.index,
        embedder=embedder,
        nodes_per_s=c.settings.rebuild.repair_nodes_per_s,
        # What the segmenter's knowledge write runs: the rules unless an LLM reads the facts.
        knowledge_rules=c.settings.lifecycle.knowledge and not c.settings.llm.does("facts"),
        frames=frames.frames if frames is not None else None,
    )


def divergence_watch(c: Container, sample_users: int | None = None) -> DivergenceWatch:
    """One per process: readiness and the scheduler's collector read the same check.
    `sample_users`: fewer than the setting where only readiness reads it (the recall API),
    which needs no more than whether a whole store is missing."""
    sample = sample_users or c.settings.rebuild.divergence_sample_users
    check = functools.partial(check_stores, c.tree, c.index, sample)
    return DivergenceWatch(check, c.settings.rebuild.divergence_check_s)
