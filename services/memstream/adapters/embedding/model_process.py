"""The local embedding model, run in a child process of its own.

In a worker thread the model shares the interpreter lock with the event loop: every one of
the hundreds of small Python steps of a forward pass waits for the loop to let go of it, and
while the loop validates, stores and publishes a batch the model ran far slower. A child
process has its own interpreter, so the two only share the cores.

Thread settings belong to the child, the process that runs the model: torch and onnxruntime
read `OMP_NUM_THREADS` when they load, and a `torch.set_num_threads` in the parent never
reaches the child. The child sets them before it imports either, and `OMP_WAIT_POLICY=PASSIVE`
so idle threads sleep rather than spin on cores the event loop needs (on shared cores a
two-thread encode's tail latency was many times one thread's).

A worker may run the model in several processes (`ModelSpec.processes`), each with its own
copy of the model, taking whole batches: data parallel. With one process of two intra-op
threads, a pass waits for its slower thread, so anything else on either core (the event
loop, the broker) stalls both; with two single-threaded processes it slows one of them.
The cost is a second copy of the model in memory (see `MEMSTREAM_EMBED_PROCESSES` in
docs/configuration.md).

One set of children serves every `LocalEmbedder` of a process with the same model and
settings, so a test session or an evaluation loads the model once. The children are started
with `spawn` (never `fork`: the parent runs threads), ignore Ctrl-C, which the parent
handles, and exit when the parent does, however it ends.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import multiprocessing.connection
import multiprocessing.process
import os
import signal
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
log = logging.getLogger(__name__)

RUNTIMES = ("torch", "onnx-fp32", "onnx-int8")


@dataclass(frozen=True)
class ModelSpec:
    """Which model the children run, how (threads each, how many children), and where an
    exported ONNX graph is cached."""

    path: str
    runtime: str = "torch"
    threads: int = 1
    device: str = "cpu"
    cache_dir: str = ""
    processes: int = 1

    def __post_init__(self) -> None:
        if self.runtime not in RUNTIMES:
            raise ValueError(f"runtime must be one of {RUNTIMES}, not {self.runtime!r}")
        if self.threads <= 0 or self.processes <= 0:
            raise ValueError("threads and processes must be positive")

    def process_key(self) -> ModelSpec:
        """What tells two model processes apart: not where the graph is cached (the same
        model from another data directory is the same model, and a test session or an
        evaluation with many data directories should load it once)."""
        return replace(self, cache_dir="")


# In the child: the loaded model (see `_loaded`).
_model: Any = None


def configure_model_process(threads: int) -> None:
    """In a process that is to run the model (a child, or the model server), before torch
    or onnxruntime is imported: their thread settings, and Ctrl-C left to the parent."""
    # Before torch or onnxruntime is imported (they load on the first call): both read these.
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(threads)
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A parent killed outright (SIGKILL, OOM) cannot stop its pool: go when it goes, or the
    # child would hold the model's memory and the parent's output pipes forever.
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_with, args=(parent,), daemon=True).start()


def _exit_with(parent: multiprocessing.process.BaseProcess) -> None:
    multiprocessing.connection.wait([parent.sentinel])
    os._exit(0)


class _SentenceTransformerModel:
    def __init__(self, spec: ModelSpec) -> None:
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(spec.threads)
        self._model = SentenceTransformer(spec.path, device=spec.device, local_files_only=True)

    def dimension(self) -> int:
        # Renamed in sentence-transformers 5; the old name warns there.
        dimension_of = getattr(self._model, "get_embedding_dimension", None)
        dimension_of = dimension_of or self._model.get_sentence_embedding_dimension
        return int(dimension_of())

    def encode(self, texts: list[str], batch_size: int) -> Any:
        import numpy as np

        from memstream.adapters.embedding.passes import forward_passes

        # sentence-transformers sorts one call's texts by characters and pads each slice of
        # `batch_size` to its longest; passes cut by token counts waste less (`passes`).
        tokens = [len(ids) for ids in self._model.tokenizer(texts, truncation=True)["input_ids"]]
        vectors = np.zeros((len(texts), self.dimension()), dtype=np.float32)
        for rows in forward_passes(tokens, batch_size):
            vectors[rows] = self._model.encode(
                [texts[i] for i in rows],
                batch_size=len(rows),
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return vectors


def _loaded(spec: ModelSpec) -> Any:
    # Loaded on the first call, not by the pool's initializer, so a bad path or a broken
    # install reaches the caller as an exception and not as a dead process.
    global _model
    if _model is None:
        if spec.runtime == "torch":
            _model = _SentenceTransformerModel(spec)
        else:
            from memstream.adapters.embedding.onnx_model import OnnxModel

            _model = OnnxModel.load(
                Path(spec.path), spec.runtime, Path(spec.cache_dir), threads=spec.threads
            )
    return _model


def dimension(spec: ModelSpec) -> int:
    """In the child: the model's vector size."""
    return int(_loaded(spec).dimension())


def encode(spec: ModelSpec, texts: list[str], batch_size: int) -> Any:
    """In the child: unit vectors as a float32 array (it pickles compactly and fast)."""
    return _loaded(spec).encode(texts, batch_size)


# A long and a short text: a first pass of each shape allocates and (ONNX Runtime) plans.
WARM_UP_TEXTS = ["warm up", " ".join(["warm up the model"] * 40)]


def warm(spec: ModelSpec, texts: list[str], batch_size: int) -> int:
    """In the child: load the model, run `texts` through it once (a first pass allocates
    and, with ONNX Runtime, plans) and return its vector size."""
    encode(spec, texts, batch_size)
    return dimension(spec)


class ModelProcesses:
    """The `spec.processes` children that hold the model `spec` names, one call queue each.

    A call goes to the child with the fewest calls outstanding, so two batches sent together
    run side by side. A child that dies (killed for memory, say) is replaced, and the call
    tried once more on its replacement.
    """

    def __init__(self, spec: ModelSpec) -> None:
        self._threads = spec.threads
        self._lock = threading.Lock()
        self._children = [self._start() for _ in range(spec.processes)]
        self._outstanding = [0] * spec.processes

    def _start(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            max_workers=1,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=configure_model_process,
            initargs=(self._threads,),
        )

    @property
    def executors(self) -> list[ProcessPoolExecutor]:
        """One executor per child (the benchmark counts the model's idle time on them)."""
        with self._lock:
            return list(self._children)

    async def call(self, function: Callable[..., T], *args: object) -> T:
        """`function(*args)` in the least busy child."""
        with self._lock:
            index = min(range(len(self._children)), key=self._outstanding.__getitem__)
        return await self._call_on(index, function, *args)

    async def call_each(self, function: Callable[..., T], *args: object) -> list[T]:
        """`function(*args)` in every child: in the first, then in the others together (a
        first call may export the ONNX graph, which the others then find cached)."""
        first = await self._call_on(0, function, *args)
        rest = [self._call_on(i, function, *args) for i in range(1, len(self._children))]
        return [first, *await asyncio.gather(*rest)]

    async def _call_on(self, index: int, function: Callable[..., T], *args: object) -> T:
        loop = asyncio.get_running_loop()
        with self._lock:
            child = self._children[index]
            self._outstanding[index] += 1
        try:
            try:
                return await loop.run_in_executor(child, function, *args)
            except BrokenProcessPool:
                # The arguments are still here: try once more, in a new child.
                log.warning("an embedding model process died; starting a new one")
                child = self._replace(index, child)
                return await loop.run_in_executor(child, function, *args)
        finally:
            with self._lock:
                self._outstanding[index] -= 1

    def _replace(self, index: int, broken: ProcessPoolExecutor) -> ProcessPoolExecutor:
        with self._lock:
            if self._children[index] is broken:  # not already replaced by a concurrent call
                self._children[index] = self._start()
            replacement = self._children[index]
        broken.shutdown(wait=False, cancel_futures=True)
        return replacement


_processes: dict[ModelSpec, ModelProcesses] = {}
_processes_lock = threading.Lock()


def model_processes(spec: ModelSpec) -> ModelProcesses:
    """The children that hold the model `spec` names, started on first use."""
    key = spec.process_key()
    with _processes_lock:
        found = _processes.get(key)
        if found is None:
            found = _processes[key] = ModelProcesses(spec)
        return found


def running_model_executors() -> list[ProcessPoolExecutor]:
    """Every model child of this process (for the benchmark's idle count)."""
    with _processes_lock:
        return [executor for found in _processes.values() for executor in found.executors]


def stop_model_processes() -> None:
    """Stop every model child of this process and forget them: the next call starts new ones
    (the benchmark measures each configuration from a clean slate)."""
    with _processes_lock:
        stopping = list(_processes.values())
        _processes.clear()
    for processes in stopping:
        for executor in processes.executors:
            executor.shutdown(wait=True, cancel_futures=True)
