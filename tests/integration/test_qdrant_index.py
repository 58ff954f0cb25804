"""QdrantIndex specifics against qdrant-client local mode.

The behaviour both indexes share is checked for both by `index_contract.py`, run from
`test_edge_index.py` (`TestEdgeIndex`, `TestLocalQdrantIndex`).
"""

import warnings
from pathlib import Path

import pytest
from qdrant_client import AsyncQdrantClient
from qdrant_client.common import client_warnings

from memstream.adapters.qdrant.server import QdrantIndex

pytestmark = pytest.mark.integration

DIM = 32


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
