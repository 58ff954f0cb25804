"""The frames with the real all-MiniLM-L6-v2 model: a change told without a construction
implies its value, a trip to the same place does not, and a leaf restored from the index
implies it again (no network; a few seconds to load the
model: hence `integration`)."""

from datetime import UTC, datetime

import pytest
from tests.unit.fakes import FakeIndex, FakeTree

from memstream.adapters.embedding.embedders import LocalEmbedder
from memstream.domain.fact_frames import leaf_facts
from memstream.domain.models import Level, MemoryNode, SourceMessage
from memstream.repair.restore import StoreRepair
from memstream.segmenter.knowledge import FramePrototypes

pytestmark = pytest.mark.integration

SAID = datetime(2024, 3, 2, 9, 30, tzinfo=UTC)
TOLD = {
    "Got the keys to our new flat in Lisbon, still unpacking boxes.": ("lives_in", "Lisbon"),
    "First week at the new office of Brightline went great.": ("works_at", "Brightline"),
    "We're visiting Lisbon this weekend, the sights are lovely.": None,
    "Work was hectic today, back to back meetings about Brightline.": None,
}


async def test_a_change_told_in_passing_implies_its_value_and_a_trip_does_not() -> None:
    embedder = LocalEmbedder(runtime="torch")
    frames = await FramePrototypes(embedder).frames()
    vectors = dict(zip(TOLD, await embedder.embed(list(TOLD)), strict=True))
    for index, (text, expected) in enumerate(TOLD.items()):
        message = SourceMessage(f"m{index}", "Maya", "user", text, SAID)
        leaf = MemoryNode("l1", "u1", Level.SEGMENT, SAID, SAID, "", messages=(message,))
        found = {(f.attribute, f.value) for f in leaf_facts(leaf, vectors, frames)}
        assert found == ({expected} if expected else set()), text


async def test_a_leaf_restored_from_the_index_implies_what_it_implied_when_written() -> None:
    # Redis lost, the tree written back from the index: the rules read the leaf's messages
    # again, and its frames are read again from the messages embedded anew.
    embedder = LocalEmbedder(runtime="torch")
    # The rules read no employer here; only the frame does.
    text = "First week at the new office of Brightline went great."
    message = SourceMessage("m0", "Maya", "user", text, SAID)
    leaf = MemoryNode("l1", "u1", Level.SEGMENT, SAID, SAID, text, messages=(message,))
    kept = FakeTree([leaf])
    restored: dict[bool, set[tuple[str, str]]] = {}
    for frames in (None, FramePrototypes(embedder).frames):
        lost = FakeTree()
        repair = StoreRepair(
            tree=lost,
            index=FakeIndex(kept),
            embedder=embedder,
            nodes_per_s=1e6,
            knowledge_rules=True,
            frames=frames,
        )
        assert (await repair.repair("u1")).restored == 1
        restored[frames is not None] = {(f.attribute, f.value) for f in await lost.facts("u1")}
    assert restored == {False: set(), True: {("works_at", "Brightline")}}
