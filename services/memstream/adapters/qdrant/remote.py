"""The vector index of another process, through its `index_server`: what an API process of
`memstream up` uses when the write path's process owns the in-process engine's shard.

Same surface as `EdgeIndex` (and the same contract tests), each call one request on one
connection per event loop, several in flight (each answer names its request). The server's
exceptions are raised here as they were there (a ValueError stays a ValueError).

The first call waits for the server (up to `connect_timeout_s`): `memstream up` starts its
API process while its own start is still under way, so both start side by side, and the
API's readiness turns true once the index answers. The first connection checks the served
index's vector size. A server that goes away later fails the calls in flight with
ConnectionError; the next call connects once more, failing at once if it cannot: the API
process's readiness then says so, and its parent, which owned the server, is stopping anyway.

The progress marks the server pushes go to `on_progress` (`announce_progress_to`), on the
loop of the connection that received them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from memstream.adapters.embedding.recent import LastVectors
from memstream.adapters.qdrant.index_server import (
    DIM,
    PROGRESS,
    RECENT_VECTORS,
    VECTORS,
    frame,
    read_frame,
)
from memstream.adapters.socket_clients import Multiplexed, PerLoop, connect
from memstream.domain.models import IndexedMemory, Level, MemoryNode, ScoredId, SparseVector

# The marks of one turns topic (None: the shared one), as `Container.progress_marked` takes them.
OnProgress = Callable[[Mapping[int, int], str | None], None]


class _Connection(Multiplexed[Any]):
    """Calls to the index server: pickled (method, args, kwargs), answered (ok, value)."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        on_push: Callable[[Any], None],
    ) -> None:
        super().__init__(reader, writer, read_frame, server="index server", on_push=on_push)

    async def call(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        ok, value = await self.ask(lambda request_id: frame(request_id, (method, args, kwargs)))
        if not ok:
            raise value
        return value


class RemoteIndex:
    """`VectorIndex` (and the payload and scan reads) of the index served at `path`."""

    def __init__(
        self, path: Path, dim: int, *, connect_timeout_s: float = 0.0, vectors_kept: int = 1024
    ) -> None:
        self._path = path
        self._dim = dim
        # The vectors the owner pushed (`IndexServer.announce_vectors`), newest last.
        self._vectors = LastVectors(vectors_kept)
        self._connect_timeout_s = connect_timeout_s
        self._started = False  # connected once: no more waiting for the server to come up
        self._on_progress: OnProgress | None = None
        # Streams belong to one event loop: a connection per loop (a test's and a server's).
        self._per_loop: PerLoop[_Connection] = PerLoop(self._open)

    async def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        connection = await self._connection()
        return await connection.call(method, args, kwargs)

    async def _connection(self) -> _Connection:
        return await self._per_loop.get()

    async def _open(self) -> _Connection:
        # Until it has answered once, its owner may still be starting: wait for it.
        wait_s = 0.0 if self._started else self._connect_timeout_s
        reader, writer = await connect(self._path, wait_s=wait_s, server="index server")
        connection = _Connection(reader, writer, self._pushed)
        try:
            served = await connection.call(DIM, (), {})
        except BaseException:
            await connection.close()
            raise
        if served != self._dim:
            await connection.close()
            raise ValueError(
                f"the index served at {self._path} has dense size {served}, not {self._dim}"
            )
        self._started = True
        return connection

    def announce_progress_to(self, on_progress: OnProgress) -> None:
        """Hand the owner's progress marks to `on_progress` as they come
        (`Container.progress_marked`: this process's waiting reads)."""
        self._on_progress = on_progress

    def _pushed(self, message: Any) -> None:
        kind, body = message
        if kind == PROGRESS and self._on_progress is not None:
            marks, topic = body
            self._on_progress(marks, topic)
        elif kind == VECTORS:
            for text, vector in body:
                self._vectors.keep(text, vector)

    async def ensure_collection(self) -> None:
        """Connect, which checks that the served index holds vectors of this size (its owner
        created the collection)."""
        await self._connection()

    async def close(self) -> None:
        """Close this event loop's connection (the next call opens another)."""
        await self._per_loop.close()

    async def ping(self) -> bool:
        answer: bool = await self._call("ping")
        return answer

    async def recent_vectors(self, texts: Sequence[str]) -> list[list[float] | None]:
        """The vectors the owner's embedder has just computed for these texts, None for each
        it has not (`embedding.recent.KnownVectorsFirst`): those it pushed from here, the
        rest asked for."""
        found = [self._vectors.get(text) for text in texts]
        missing = [text for text, vector in zip(texts, found, strict=True) if vector is None]
        if missing:  # embedded before this process connected, or by another
            asked: list[list[float] | None] = await self._call(RECENT_VECTORS, missing)
            answers = iter(asked)
            found = [next(answers) if vector is None else vector for vector in found]
        return found

    async def upsert(self, memories: Sequence[IndexedMemory]) -> None:
        await self._call("upsert", list(memories))

    async def search_leaves(
        self,
        user_id: str,
        dense: Sequence[float],
        sparse: SparseVector,
        *,
        limit: int,
        dense_weight: float,
        level: Level = Level.SEGMENT,
    ) -> list[ScoredId]:
        found: list[ScoredId] = await self._call(
            "search_leaves",
            user_id,
            list(dense),
            sparse,
            limit=limit,
            dense_weight=dense_weight,
            level=level,
        )
        return found

    async def get(
        self, ids: Sequence[str], *, user_id: str | None = None
    ) -> dict[str, dict[str, Any]]:
        if not ids:
            return {}
        found: dict[str, dict[str, Any]] = await self._call("get", list(ids), user_id=user_id)
        return found

    async def count(self, user_id: str, level: Level | None = None) -> int:
        counted: int = await self._call("count", user_id, level)
        return counted

    async def delete_user(self, user_id: str) -> int:
        removed: int = await self._call("delete_user", user_id)
        return removed

    async def vacuum(self) -> None:
        await self._call("vacuum")

    async def delete_points(self, user_id: str, point_ids: Sequence[str]) -> None:
        if point_ids:
            await self._call("delete_points", user_id, list(point_ids))

    async def total(self) -> int:
        counted: int = await self._call("total")
        return counted

    async def users_with_points(self, limit: int) -> list[str]:
        users: list[str] = await self._call("users_with_points", limit)
        return users

    async def user_nodes(
        self, user_id: str, after: str | None, limit: int
    ) -> tuple[list[MemoryNode], str | None]:
        page: tuple[list[MemoryNode], str | None] = await self._call(
            "user_nodes", user_id, after, limit
        )
        return page

    async def versions(self, user_id: str, node_ids: Sequence[str]) -> dict[str, int]:
        found: dict[str, int] = await self._call("versions", user_id, list(node_ids))
        return found
