"""What the frames read, by the embedder a deployment runs: with the local model, the
messages that could imply a fact are embedded each alone, and so are the prototypes."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from memstream.adapters.embedding.embedders import HashingEmbedder, LocalEmbedder
from memstream.adapters.embedding.steady import EachAlone, SteadyVectors
from memstream.segmenter.knowledge import FramePrototypes
from memstream.settings import Settings
from memstream.wiring.frames import framed_embedding


def _container(embedder: Any, backend: str = "local") -> Any:
    return SimpleNamespace(settings=Settings(embedder=backend), embedder=embedder)


def test_with_the_local_model_the_messages_that_could_imply_a_fact_are_embedded_alone() -> None:
    local = LocalEmbedder()  # nothing is loaded until it embeds
    outer = HashingEmbedder(local.dim)  # the write path's view of it (priority, tracing)

    embedder, frames = framed_embedding(_container(local), outer)

    assert isinstance(embedder, SteadyVectors) and embedder.dim == local.dim
    assert isinstance(frames, FramePrototypes)
    assert isinstance(frames._embedder, EachAlone)


def test_an_embedder_a_probe_names_embeds_everything_and_other_backends_read_no_frames() -> None:
    local, named = LocalEmbedder(), HashingEmbedder()

    embedder, frames = framed_embedding(_container(local), named, named=True)
    assert embedder is named and frames is not None and frames._embedder is named

    embedder, frames = framed_embedding(_container(named, backend="hashing"), named)
    assert embedder is named and frames is None
