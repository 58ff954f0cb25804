"""A LoCoMo conversation sent with each session's turns out of `seq` order and duplicates
mixed in, through the real broker, workers, Redis and Qdrant, in steps that cut exchanges:
the tree has the in-order tree's nodes (ids, levels, parents, intervals, messages); the
in-order tree is built by the same handlers over the fakes (`session_rig`), whose texts
differ (another writer) but whose ids and shape do not."""

from __future__ import annotations

import json
import random
from datetime import datetime
from pathlib import Path

import pytest
from tests.unit.segmenter.session_rig import (
    handler_rig,
    locomo_events,
    shuffled_within_sessions,
    with_duplicates,
)

from memstream.contracts.codec import encode_turn
from memstream.domain.models import InputEvent, Level, MemoryNode, SessionEnded, Turn
from memstream.domain.windows import WindowRules
from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.entrypoints.embedded.ingest import publish_file
from memstream.entrypoints.runner import WRITE_PATH, run_parts
from memstream.settings import Settings

pytestmark = pytest.mark.integration

USER = "shuffled-locomo"
Shape = tuple[Level, str | None, datetime, datetime, tuple[str, ...]]


def shape(nodes: list[MemoryNode]) -> dict[str, Shape]:
    return {n.id: (n.level, n.parent_id, n.t_start, n.t_end, n.source_ids) for n in nodes}


def wire(event: InputEvent) -> dict[str, object]:
    if isinstance(event, Turn):
        return encode_turn(event)
    assert isinstance(event, SessionEnded)  # LoCoMo sends nothing else
    return {
        "type": "session_end.v1",
        "user_id": event.user_id,
        "session_id": event.session_id,
        "ts": event.ts.isoformat(),
    }


# The reorder window is off by default (docs/producers.md): a producer whose records may
# arrive out of order turns it on.
REORDER_TURNS = 32


async def test_turns_out_of_order_through_the_broker_give_the_in_order_tree(
    settings: Settings, tmp_path: Path
) -> None:
    events = locomo_events("30", 2, "assistant", user_id=USER)
    rig = handler_rig(WindowRules(reorder_turns=REORDER_TURNS))
    await rig.send_in_batches(events, [16])
    in_order = shape(list(rig.nodes(USER).values()))
    rng = random.Random(3)
    sent = with_duplicates(shuffled_within_sessions(events, rng, reach=8), rng, share=0.1)
    assert sent != events
    path = tmp_path / "shuffled.jsonl"
    path.write_text("".join(json.dumps(wire(e)) + "\n" for e in sent))

    local = settings.model_copy(
        update={
            "data_dir": tmp_path,
            "consume_step_size": 3,
            "clock_grace_s": 0.0,
            "clock_interval_s": 0.5,
            "session_reorder_turns": REORDER_TURNS,
        }
    )
    async with run_parts(local, WRITE_PATH, fast_rebalance=True) as running:
        rt = running.container
        await publish_file(
            path, catalog=rt.catalog, bootstrap=local.broker.bootstrap, show_progress=False
        )
        await wait_caught_up(rt, [USER], timeout_s=120)
        nodes: list[MemoryNode] = []
        for level in Level:
            nodes += await rt.tree.get_many(USER, await rt.tree.level_ids(USER, level, 10_000))
    assert {lv for lv, *_ in in_order.values()} == set(Level)
    assert shape(nodes) == in_order
