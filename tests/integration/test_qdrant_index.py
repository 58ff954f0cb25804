"""QdrantIndex specifics against qdrant-client local mode.

The behaviour both indexes share is checked for both by `index_contract.py`, run from
`test_edge_index.py` (`TestEdgeIndex`, `TestLocalQdrantIndex`).
"""

import uuid
import warnings
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from qdrant_client import AsyncQdrantClient
from qdrant_client.common import client_warnings

from memstream.adapters.embedders import HashingEmbedder
from memstream.adapters.ports import IndexedMemory
from memstream.adapters.qdrant_index import QdrantIndex
from memstream.adapters.sparse import document_vector
from memstream.domain.models import Level, MemoryNode

pytestmark = pytest.mark.integration

DIM = 32
T0 = datetime(2023, 5, 8, 13, 0, tzinfo=UTC)
embedder = HashingEmbedder(DIM)


@pytest.fixture
async def index(tmp_path: Path) -> AsyncIterator[QdrantIndex]:
    client = AsyncQdrantClient(path=str(tmp_path / "qdrant"))
    idx = QdrantIndex(client, "memories", DIM)
    await idx.ensure_collection()
    yield idx
    await client.close()


def make_node(user: str, text: str, level: Level = Level.SEGMENT, version: int = 1) -> MemoryNode:
    return MemoryNode(
        id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"{user}/{level}/{text}")),
        user_id=user,
        level=level,
        t_start=T0,
        t_end=T0 + timedelta(minutes=5),
        text=text,
        source_ids=(f"{user}:e1", f"{user}:e2"),
        speakers=("Caroline", "Melanie"),
        version=version,
        session_id="s1",
    )


async def indexed(node: MemoryNode, dense: list[float] | None = None) -> IndexedMemory:
    vector = dense if dense is not None else (await embedder.embed([node.text]))[0]
    return IndexedMemory(node=node, dense=vector, sparse=document_vector(node.text))


async def test_ensure_collection_is_idempotent_and_quiet(tmp_path: Path) -> None:
    client = AsyncQdrantClient(path=str(tmp_path / "q"))
    # The local-mode warning is shown once per process; forget that it was shown.
    client_warnings.SEEN_MESSAGES.discard("create-local-payload-indexes")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        await QdrantIndex(client, "m", DIM).ensure_collection()
        await QdrantIndex(client, "m", DIM).ensure_collection()
    assert not [w for w in caught if "Payload indexes" in str(w.message)]
    with pytest.raises(ValueError, match="dense size 32"):
        await QdrantIndex(client, "m", DIM + 1).ensure_collection()
    await client.close()
