"""The local embedding model, run in a child process of its own.

In a worker thread the model shares the interpreter lock with the event loop: every one of
the hundreds of small Python steps of a forward pass waits for the loop to let go of it, and
while the loop validates, stores and publishes a batch the model ran at half speed. A child
process has its own interpreter, so the two only share the cores.

Thread settings belong to the child, the process that runs the model: torch and onnxruntime
read `OMP_NUM_THREADS` when they load, and a `torch.set_num_threads` in the parent never
reaches the child. The child sets them before it imports either, and `OMP_WAIT_POLICY=PASSIVE`
so idle threads sleep rather than spin on cores the event loop needs (on shared cores a
two-thread encode took p95 533 ms against 14 ms with one thread).

One child serves every `LocalEmbedder` of a process with the same model and settings, so a test
session or an evaluation loads the model once. The children are started with `spawn`
(never `fork`: the parent runs threads), ignore Ctrl-C, which the parent handles, and exit
when the parent does, however it ends.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import multiprocessing.process
import os
import signal
import threading
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

RUNTIMES = ("torch", "onnx-fp32", "onnx-int8")


@dataclass(frozen=True)
class ModelSpec:
    """Which model the child runs, how, and where an exported ONNX graph is cached."""

    path: str
    runtime: str = "torch"
    threads: int = 1
    device: str = "cpu"
    cache_dir: str = ""

    def __post_init__(self) -> None:
        if self.runtime not in RUNTIMES:
            raise ValueError(f"runtime must be one of {RUNTIMES}, not {self.runtime!r}")
        if self.threads <= 0:
            raise ValueError("threads must be positive")

    def process_key(self) -> ModelSpec:
        """What tells two model processes apart: not where the graph is cached (the same
        model from another data directory is the same model, and a test session or an
        evaluation with many data directories should load it once)."""
        return replace(self, cache_dir="")


# In the child: the loaded model (see `_loaded`).
_model: Any = None


def _start_child(threads: int) -> None:
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
        return self._model.encode(
            texts,
            batch_size=batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )


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


_children: dict[ModelSpec, ProcessPoolExecutor] = {}
_children_lock = threading.Lock()


def model_process(spec: ModelSpec) -> ProcessPoolExecutor:
    """The child that holds the model `spec` names, started on first use."""
    key = spec.process_key()
    with _children_lock:
        child = _children.get(key)
        if child is None:
            child = ProcessPoolExecutor(
                max_workers=1,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_start_child,
                initargs=(spec.threads,),
            )
            _children[key] = child
        return child


def forget_model_process(spec: ModelSpec, broken: ProcessPoolExecutor) -> None:
    """Drop a child that died (killed for memory, say), so the next call starts a new one."""
    key = spec.process_key()
    with _children_lock:
        if _children.get(key) is broken:
            del _children[key]
    broken.shutdown(wait=False, cancel_futures=True)
