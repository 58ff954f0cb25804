"""What the frames read (`domain.fact_frames`): the messages' vectors and the prototypes'.

A frame is a threshold on a vector, so with the local model the messages that could imply a
fact by their frame, and the prototypes, are embedded each in a forward pass of its own: a
replay, batched differently, then keeps the same facts (`adapters.embedding.steady`).
"""

from __future__ import annotations

from memstream.adapters.embedding.embedders import LocalEmbedder
from memstream.adapters.embedding.frame_similarities import left_fold_similarities
from memstream.adapters.embedding.steady import EachAlone, SteadyVectors
from memstream.domain.fact_frames import may_imply
from memstream.ports import Embedder
from memstream.segmenter.knowledge import FramePrototypes
from memstream.wiring.container import Container


def framed_embedding(
    c: Container, embedder: Embedder, *, named: bool = False
) -> tuple[Embedder, FramePrototypes | None]:
    """The embedder to embed the messages with, and the frames to read them by: none
    unless the local model embeds (the frames' thresholds are its distances). `named`: a
    probe named `embedder` itself, and it embeds everything."""
    if c.settings.embedding.backend != "local":
        return embedder, None
    if named or not isinstance(c.embedder, LocalEmbedder):
        return embedder, FramePrototypes(embedder, left_fold_similarities)
    each = c.embedder.embed_each
    prototypes = FramePrototypes(EachAlone(c.embedder.dim, each), left_fold_similarities)
    return SteadyVectors(embedder, each, may_imply), prototypes
