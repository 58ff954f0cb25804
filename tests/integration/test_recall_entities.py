"""Recall through the entity index the segmenter commits in Redis: a leaf the search missed,
of the entity a question names by relation ("Maya's sister"), joins and is recalled; without
the index it is not."""

from __future__ import annotations

from datetime import timedelta

import pytest
from tests.unit.fakes import FakeEmbedder, FakeIndex, FakeLLM, FakeTree

from memstream.adapters.redis.tree import RedisTree
from memstream.domain.models import Level
from memstream.domain.recall_options import RecallOptions
from memstream.recall.pipeline import RecallPipeline, RecallRequest
from memstream.settings import Settings

from .knowledge_contract import JAN, leaf, write
from .tree_contract import scratch_tree

pytestmark = pytest.mark.integration

SISTER = leaf("l-anna", ("m-anna", "I live in Porto with my sister Anna.", JAN))
OTHERS = [
    leaf(f"l{i}", (f"m{i}", f"Maya went for a walk, day {i}.", JAN + timedelta(days=i)))
    for i in range(1, 6)
]


def pipeline(tree: RedisTree, *, entities: bool) -> RecallPipeline:
    # The search (a FakeIndex over the same leaves) ranks Anna's leaf last, out of a pool of 3.
    scores = {n.id: 0.9 - 0.1 * i for i, n in enumerate(OTHERS)} | {SISTER.id: 0.01}
    return RecallPipeline(
        tree=tree,
        index=FakeIndex(FakeTree([*OTHERS, SISTER]), scores=scores),
        embedder=FakeEmbedder(),
        llm=FakeLLM(),
        options=RecallOptions(leaf_pool=3, leaf_top_k=3),
        knowledge=tree if entities else None,
    )


async def test_the_leaf_of_the_entity_a_question_names_is_joined_and_recalled(
    stack_settings: Settings,
) -> None:
    async with scratch_tree(stack_settings.redis.url, "recall-entities") as tree:
        assert await write(tree, *OTHERS, SISTER)
        request = RecallRequest("ana", "Where does Maya's sister live?", complexity="simple")
        recalled = {}
        for entities in (False, True):
            result = await pipeline(tree, entities=entities).recall(request)
            recalled[entities] = [
                m.node.id for m in result.memories if m.node.level is Level.SEGMENT
            ]
        assert SISTER.id not in recalled[False]
        assert SISTER.id in recalled[True]
