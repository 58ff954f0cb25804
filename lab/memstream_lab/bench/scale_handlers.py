"""The segmenter and consolidator the scale probes drive: the deployment's, with the hashing
embedder in place of the model (the probes measure the handlers' own work, not the model's)
and the derivation each probe names."""

from __future__ import annotations

from memstream.adapters.embedding.embedders import HashingEmbedder
from memstream.bootstrap import Container
from memstream.consolidator.handler import Consolidator
from memstream.domain.derivation import Derivation
from memstream.segmenter.handler import Segmenter, Topics
from memstream.wiring.handlers import window_rules


def probe_segmenter(
    c: Container, derivation: Derivation | None, rebuild_chunk_leaves: int
) -> Segmenter:
    return Segmenter(
        tree=c.tree,
        index=c.index,
        embedder=HashingEmbedder(c.embedder.dim),
        llm=c.llm,
        publisher=c.publisher,
        topics=Topics(memories=c.catalog.memories.name, windows=c.catalog.windows.name),
        forget=c.forget_user,
        rules=window_rules(c.settings),
        history_window=c.settings.lifecycle.history_window,
        derivation=derivation,
        knowledge=c.settings.lifecycle.knowledge,
        rebuild_chunk_leaves=rebuild_chunk_leaves,
    )


def probe_consolidator(c: Container, derivation: Derivation | None) -> Consolidator:
    return Consolidator(
        tree=c.tree,
        index=c.index,
        embedder=HashingEmbedder(c.embedder.dim),
        llm=c.llm,
        publisher=c.publisher,
        memories_topic=c.catalog.memories.name,
        history_window=c.settings.lifecycle.history_window,
        derivation=derivation,
        knowledge=c.tree if c.settings.lifecycle.knowledge else None,
    )
