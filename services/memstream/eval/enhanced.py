"""Recall improvements under evaluation, applied around the production RecallPipeline."""

from __future__ import annotations

from memstream.adapters.ports import Embedder
from memstream.bootstrap import Runtime
from memstream.eval.variants import Variant
from memstream.recall.pipeline import RecallPipeline


def build_pipeline(runtime: Runtime, variant: Variant, *, embedder: Embedder) -> RecallPipeline:
    return RecallPipeline(
        tree=runtime.tree,
        index=runtime.index,
        embedder=embedder,
        llm=runtime.llm,
        settings=runtime.settings,
        options=variant.options,
    )
