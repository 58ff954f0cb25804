"""The tree written back from the index with the fakes: as it was, and never for a user a
forget's tombstone guards."""

from __future__ import annotations

from tests.unit.fakes import FakeEmbedder, FakeIndex, FakeTree, sample_tree

from memstream.domain.forgetting import Tombstone
from memstream.domain.models import Level
from memstream.repair.restore import StoreRepair


def repairing(tree: FakeTree, index: FakeIndex) -> StoreRepair:
    return StoreRepair(tree=tree, index=index, embedder=FakeEmbedder(), nodes_per_s=1e6)


async def test_a_lost_tree_comes_back_from_the_index_as_it_was() -> None:
    kept = FakeTree(sample_tree("u1"))
    lost = FakeTree()
    report = await repairing(lost, FakeIndex(kept)).repair("u1")
    assert report.restored == len(kept.stored) and report.indexed == 0
    assert {k: s.node for k, s in lost.stored.items()} == kept.nodes
    for level in Level:
        assert await lost.level_ids("u1", level) == await kept.level_ids("u1", level)
    again = await repairing(lost, FakeIndex(kept)).repair("u1")
    assert (again.indexed, again.restored) == (0, 0)


async def test_a_forgotten_user_is_not_written_back_from_points_left_in_the_index() -> None:
    kept = FakeTree(sample_tree("u1"))
    forgotten = FakeTree()
    forgotten.tombstones["u1"] = Tombstone(forgotten_at=1.0)
    report = await repairing(forgotten, FakeIndex(kept)).repair("u1")
    assert report.restored == 0 and forgotten.stored == {}
