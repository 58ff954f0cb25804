"""The local embedding model, run in a child process of its own.

In a worker thread the model shares the interpreter lock with the event loop: every one of
the hundreds of small Python steps of a forward pass waits for the loop to let go of it, and
while the loop validates, stores and publishes a batch the model ran at half speed. A child
process has its own interpreter, so the two only share the cores.

One child serves every `LocalEmbedder` of a process with the same model and settings, so a
test session or an evaluation loads the model once. The children are started with `spawn`
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
from pathlib import Path
from typing import Any

# In the child: the loaded SentenceTransformer.
_model: Any = None


def _start_child() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A parent killed outright (SIGKILL, OOM) cannot stop its pool: go when it goes, or the
    # child would hold the model's memory and the parent's output pipes forever.
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_with, args=(parent,), daemon=True).start()


def _exit_with(parent: multiprocessing.process.BaseProcess) -> None:
    multiprocessing.connection.wait([parent.sentinel])
    os._exit(0)


def _loaded(path: str, device: str) -> Any:
    # Loaded on the first call, not by the pool's initializer, so a bad path or a broken
    # install reaches the caller as an exception and not as a dead process.
    global _model
    if _model is None:
        from sentence_transformers import SentenceTransformer

        _model = SentenceTransformer(path, device=device, local_files_only=True)
    return _model


def dimension(path: str, device: str) -> int:
    """In the child: the model's vector size."""
    model = _loaded(path, device)
    # Renamed in sentence-transformers 5; the old name warns there.
    dimension_of = getattr(model, "get_embedding_dimension", None)
    dimension_of = dimension_of or model.get_sentence_embedding_dimension
    return int(dimension_of())


def encode(path: str, device: str, texts: list[str], batch_size: int) -> Any:
    """In the child: unit vectors as a float32 array (it pickles compactly and fast)."""
    return _loaded(path, device).encode(
        texts,
        batch_size=batch_size,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )


_children: dict[tuple[str, str], ProcessPoolExecutor] = {}
_children_lock = threading.Lock()


def model_process(path: Path, device: str) -> ProcessPoolExecutor:
    """The child that holds the model at `path` on `device`, started on first use."""
    key = (str(path), device)
    with _children_lock:
        child = _children.get(key)
        if child is None:
            child = ProcessPoolExecutor(
                max_workers=1,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_start_child,
            )
            _children[key] = child
        return child


def forget_model_process(path: Path, device: str, broken: ProcessPoolExecutor) -> None:
    """Drop a child that died (killed for memory, say), so the next call starts a new one."""
    key = (str(path), device)
    with _children_lock:
        if _children.get(key) is broken:
            del _children[key]
    broken.shutdown(wait=False, cancel_futures=True)
