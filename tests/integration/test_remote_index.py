"""RemoteIndex, through an index server on a real EdgeIndex, against the index contract;
and what the server adds: the owner's recent vectors, its errors raised as they were."""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import tempfile
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path

import pytest

from memstream.adapters.embedding.embedders import HashingEmbedder
from memstream.adapters.embedding.recent import KnownVectorsFirst, RecentVectors
from memstream.adapters.qdrant.edge import EdgeIndex
from memstream.adapters.qdrant.index_server import IndexServer, Lookup
from memstream.adapters.qdrant.remote import RemoteIndex

from .index_contract import DIM, IndexContract, Opened

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def short_dir() -> Iterator[Path]:
    """A directory for sockets: a Unix socket's path must be short (108 bytes), and
    pytest's tmp_path for a long test name is not."""
    path = Path(tempfile.mkdtemp(prefix="ix-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


async def serve_remote(
    shard: Path, sockets: Path, dim: int = DIM, recent: Lookup | None = None
) -> tuple[RemoteIndex, Opened, IndexServer]:
    edge = EdgeIndex.open(shard, dim)
    await edge.ensure_collection()
    server = IndexServer(
        edge,
        sockets / f"{os.urandom(4).hex()}.sock",
        dim=dim,
        owner_loop=asyncio.get_running_loop(),
        recent=recent,
    )
    server.start()
    remote = RemoteIndex(server.path, dim)

    async def close() -> None:
        await remote.close()
        await asyncio.to_thread(server.stop)
        await edge.close()

    try:
        await remote.ensure_collection()
    except BaseException:
        await close()
        raise
    return remote, Opened(remote, close), server


class TestRemoteIndex(IndexContract):
    @pytest.fixture(autouse=True)
    def _sockets(self, short_dir: Path) -> None:
        self.sockets = short_dir

    async def open_index(self, path: Path, dim: int = DIM) -> Opened:
        _, opened, _ = await serve_remote(path, self.sockets, dim)
        return opened


@pytest.fixture
async def served(
    tmp_path: Path, short_dir: Path
) -> AsyncIterator[tuple[RemoteIndex, Opened, IndexServer]]:
    recent = RecentVectors(HashingEmbedder(DIM), 8)
    await recent.embed(["Remember this: my locker code is 4711."])
    remote, opened, server = await serve_remote(tmp_path / "shard", short_dir, recent=recent.known)
    yield remote, opened, server
    await opened.close()


async def test_the_socket_is_the_owner_s_alone(
    served: tuple[RemoteIndex, Opened, IndexServer],
) -> None:
    remote, _, _ = served
    mode = stat.S_IMODE(os.stat(remote._path).st_mode)
    assert mode == 0o600


async def test_the_owner_s_recent_vectors_are_used_before_the_model(
    served: tuple[RemoteIndex, Opened, IndexServer],
) -> None:
    remote, _, _ = served
    said = "Remember this: my locker code is 4711."
    model = RecentVectors(HashingEmbedder(DIM), 8)  # counts what reaches the model
    embedder = KnownVectorsFirst(model, remote.recent_vectors)
    vectors = await embedder.embed([said, "What is my locker code?"])
    assert embedder.hits == 1
    assert vectors[0] == (await HashingEmbedder(DIM).embed([said]))[0]
    assert len(vectors[1]) == DIM
    assert list(model._vectors) == ["What is my locker code?"]  # only the new text embedded


async def test_a_wrong_size_and_an_unknown_method_are_refused(
    served: tuple[RemoteIndex, Opened, IndexServer],
) -> None:
    remote, _, _ = served
    with pytest.raises(ValueError, match="dense size 32, not 33"):
        await RemoteIndex(remote._path, DIM + 1).ensure_collection()
    with pytest.raises(ValueError, match="does not serve 'close'"):
        await remote._call("close")
    assert await remote.ping()  # the connection outlives a refused call


async def test_a_server_gone_fails_calls_with_connection_error(
    tmp_path: Path, short_dir: Path
) -> None:
    remote, opened, _ = await serve_remote(tmp_path / "shard", short_dir)
    assert await remote.count("alice") == 0
    await opened.close()
    with pytest.raises(ConnectionError):
        await remote.count("alice")


async def test_the_owner_s_progress_marks_are_pushed_to_the_api_process(
    served: tuple[RemoteIndex, Opened, IndexServer],
) -> None:
    remote, _, server = served
    received: asyncio.Queue[tuple[dict[int, int], str | None]] = asyncio.Queue()
    remote.announce_progress_to(lambda marks, topic: received.put_nowait((dict(marks), topic)))
    assert await remote.ping()  # connected: pushes reach this connection from now on
    server.announce({0: 17, 3: 4})
    server.announce({0: 18})
    server.announce({0: 2}, "memstream.turns.v1.acme")  # a tenant's topic, named
    assert await asyncio.wait_for(received.get(), 10) == ({0: 17, 3: 4}, None)
    assert await asyncio.wait_for(received.get(), 10) == ({0: 18}, None)  # in the order written
    assert await asyncio.wait_for(received.get(), 10) == ({0: 2}, "memstream.turns.v1.acme")
    assert await remote.count("alice") == 0  # answers still find their callers


async def test_the_owner_s_new_vectors_are_pushed_and_answered_without_a_round_trip(
    tmp_path: Path, short_dir: Path
) -> None:
    owner = RecentVectors(HashingEmbedder(DIM), 8)
    asked: list[list[str]] = []

    def known(texts: Sequence[str]) -> list[list[float] | None]:
        asked.append(list(texts))
        return owner.known(texts)

    remote, opened, server = await serve_remote(tmp_path / "shard", short_dir, recent=known)
    try:
        early = "Embedded before the API process connected."
        await owner.embed([early])  # nobody told: asked for when needed
        owner.on_kept = server.announce_vectors
        said = "Remember this: my locker code is 4711."
        [vector] = await owner.embed([said])
        deadline = asyncio.get_running_loop().time() + 10
        while said not in remote._vectors:  # the push is on its way: poll with a deadline
            assert asyncio.get_running_loop().time() < deadline, "no vectors pushed"
            await asyncio.sleep(0.01)
        assert await remote.recent_vectors([said]) == [vector]
        assert asked == []  # answered here, with no call to the owner
        found = await remote.recent_vectors([said, early, "never embedded"])
        assert found[0] == vector and found[1] is not None and found[2] is None
        assert asked == [[early, "never embedded"]]  # only the texts it was not pushed
    finally:
        await opened.close()
