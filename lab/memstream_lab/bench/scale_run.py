"""The scale benchmark's run directory and small helpers: what is built and measured so far
(`progress.json`, so a run resumes), the bank of real embeddings, the progress bar."""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from memstream.bootstrap import Container
from memstream.settings import Settings
from memstream_lab.bench.scale_fill import BANK_SIZE
from memstream_lab.locomo import conversation_files, load_conversation, message_text

T = TypeVar("T")
LOCOMO_MESSAGES = 2760  # about the dev conversations' messages: the bank samples them evenly


class Run:
    """The run directory: the stores and what is built and measured (`progress.json`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file = path / "progress.json"
        self.doc: dict[str, Any] = (
            json.loads(self.file.read_text()) if self.file.exists() else {"built": {}}
        )

    def save(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        self.file.write_text(json.dumps(self.doc, indent=2, default=str) + "\n")

    def done(self, name: str) -> bool:
        return name in self.doc

    def keep(self, name: str, value: Any) -> Any:
        self.doc[name] = value
        self.save()
        return value


def stack_settings(run_dir: Path, collection: str) -> Settings:
    """The embedded stack of a run directory: its stores kept in it, one embedding thread."""
    return Settings(
        data_dir=run_dir / "stores",
        kafka_bootstrap="",
        redis_url="",
        qdrant_url="",
        qdrant_collection=collection,
        log_level="WARNING",
        embed_threads=1,
        embed_processes=1,
    )


def vector_bank(run: Run, c: Container, call: Callable[..., Any]) -> list[list[float]]:
    """Real embeddings of LoCoMo messages, made once per run directory."""
    path = run.path / "vector-bank.json"
    if path.exists():
        return list(json.loads(path.read_text()))
    texts = [
        message_text(m)
        for f in conversation_files()
        for s in load_conversation(f).sessions
        for m in s.messages
    ][:: max(1, LOCOMO_MESSAGES // BANK_SIZE)][:BANK_SIZE]
    bank = call(functools.partial(c.embedder.embed, texts))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(bank))
    return list(bank)


def as_async(work: Callable[[], T]) -> Callable[[], Awaitable[T]]:
    async def wrapped() -> T:
        result = work()
        return await result if asyncio.iscoroutine(result) else result

    return wrapped


def progress_bar() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
