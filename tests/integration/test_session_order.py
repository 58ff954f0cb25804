"""A LoCoMo conversation sent with each session's turns out of `seq` order and duplicates
mixed in, through the real broker, workers, Redis and Qdrant, in steps that cut exchanges:
the tree has the in-order tree's nodes (ids, levels, parents, intervals, messages); the
in-order tree is built by the same handlers over the fakes (`session_rig`), whose texts
differ (another writer) but whose ids and shape do not. So does the same conversation of
another user with two turns sent after both sessions have closed (later than the window):
their sessions are cut again, one renamed, in the real stores."""

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
from memstream.ports import TreeStore
from memstream.settings import Settings

pytestmark = pytest.mark.integration

USER = "shuffled-locomo"
LATE_USER = "late-locomo"
LATE_TURNS = {("session_1", 0), ("session_2", 3)}
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
    late_events = locomo_events("30", 2, "assistant", user_id=LATE_USER)
    rig = handler_rig(WindowRules(reorder_turns=REORDER_TURNS))
    await rig.send_in_batches(events + late_events, [16])
    in_order = shape(list(rig.nodes(USER).values()))
    late_in_order = shape(list(rig.nodes(LATE_USER).values()))
    rng = random.Random(3)
    sent = with_duplicates(shuffled_within_sessions(events, rng, reach=8), rng, share=0.1)
    assert sent != events
    path = tmp_path / "shuffled.jsonl"
    path.write_text("".join(json.dumps(wire(e)) + "\n" for e in [*sent, *later(late_events)]))

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
        await wait_caught_up(rt, [USER, LATE_USER], timeout_s=120)
        nodes = await tree_of(rt.tree, USER)
        late_nodes = await tree_of(rt.tree, LATE_USER)
        # The index holds the tree: what the cuts replaced is gone from it too.
        indexed = [await rt.index.count(LATE_USER, level) for level in Level]
    assert {lv for lv, *_ in in_order.values()} == set(Level)
    assert shape(nodes) == in_order
    assert shape(late_nodes) == late_in_order
    assert indexed == [sum(1 for n in late_nodes if n.level == level) for level in Level]


def later(events: list[InputEvent]) -> list[InputEvent]:
    """`events` with two turns sent last, after both sessions have ended, later than any
    window: the first session's `seq` 0 (which names it) and a question of the second
    (whose reply is then written alone)."""
    late = [e for e in events if isinstance(e, Turn) and (e.session_id, e.seq) in LATE_TURNS]
    assert [(t.seq, t.role) for t in late] == [(0, "assistant"), (3, "user")]
    return [*(e for e in events if e not in late), *late]


async def tree_of(tree: TreeStore, user_id: str) -> list[MemoryNode]:
    nodes: list[MemoryNode] = []
    for level in Level:
        nodes += await tree.get_many(user_id, await tree.level_ids(user_id, level, 10_000))
    return nodes
