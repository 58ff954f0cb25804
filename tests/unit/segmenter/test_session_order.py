"""Trees that do not depend on how producers send: a session's turns out of `seq` order
(within the reorder window), duplicates mixed in, in batches of any size, give the in-order
tree node by node; through the real segmenter and consolidator handlers over the fakes."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta

import pytest
from tests.unit.segmenter.session_rig import (
    NOW,
    HandlerRig,
    handler_rig,
    locomo_events,
    shuffled_within_sessions,
    with_duplicates,
)

from memstream.contracts.codec import decode_state
from memstream.contracts.records import Outbound
from memstream.domain.models import (
    ClockTicked,
    InputEvent,
    Level,
    MemoryNode,
    SessionEnded,
    Turn,
)
from memstream.domain.windows import WindowRules

CONVERSATION = "26"
SESSIONS = 3  # 58 messages: enough for every window level, small enough for many seeds
SEEDS = range(5)
LAYOUTS = ["other", "assistant"]


def batch_sizes(rng: random.Random) -> list[int]:
    return [rng.randint(1, 9) for _ in range(12)]


async def tree_of(rules: WindowRules, events: Sequence[InputEvent], sizes: list[int]) -> HandlerRig:
    rig = handler_rig(rules)
    await rig.send_in_batches(events, sizes)
    return rig


def differences(got: dict[str, MemoryNode], want: dict[str, MemoryNode]) -> list[str]:
    """Node by node: ids missing or extra, and every field that differs."""
    found = [f"missing {want[i].level.label} {i}" for i in want.keys() - got.keys()]
    found += [f"extra {got[i].level.label} {i}" for i in got.keys() - want.keys()]
    for i in want.keys() & got.keys():
        for name in MemoryNode.__dataclass_fields__:
            if getattr(got[i], name) != getattr(want[i], name):
                found.append(f"{want[i].level.label} {i}: {name} differs")
    return found


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("seed", SEEDS)
async def test_turns_shuffled_within_their_sessions_give_the_in_order_tree(
    layout: str, seed: int
) -> None:
    rng = random.Random(seed)
    rules = WindowRules(reorder_turns=64)  # a whole session may arrive backwards
    events = locomo_events(CONVERSATION, SESSIONS, layout)
    in_order = (await tree_of(rules, events, [8])).nodes("locomo")
    sent = with_duplicates(shuffled_within_sessions(events, rng), rng, share=0.1)
    assert sent != events
    shuffled = await tree_of(rules, sent, batch_sizes(rng))
    assert differences(shuffled.nodes("locomo"), in_order) == []
    assert {n.level for n in in_order.values()} == set(Level)


@pytest.mark.parametrize("layout", LAYOUTS)
async def test_a_bounded_shuffle_within_the_default_window_gives_the_in_order_tree(
    layout: str,
) -> None:
    rules = WindowRules(reorder_turns=32)  # the bound docs/producers.md suggests
    events = locomo_events(CONVERSATION, SESSIONS, layout)
    in_order = (await tree_of(rules, events, [8])).nodes("locomo")
    for seed in SEEDS:
        rng = random.Random(100 + seed)
        sent = with_duplicates(shuffled_within_sessions(events, rng, reach=6), rng, share=0.1)
        shuffled = await tree_of(rules, sent, batch_sizes(rng))
        assert differences(shuffled.nodes("locomo"), in_order) == [], seed


async def test_without_a_reorder_window_a_shuffle_changes_the_tree() -> None:
    """The window is what makes the trees equal: turns taken as they arrive pair otherwise."""
    rules = WindowRules(reorder_turns=0)
    events = locomo_events(CONVERSATION, SESSIONS, "assistant")
    in_order = (await tree_of(rules, events, [8])).nodes("locomo")
    sent = shuffled_within_sessions(events, random.Random(7))
    shuffled = await tree_of(rules, sent, [8])
    assert differences(shuffled.nodes("locomo"), in_order) != []


def shape(nodes: dict[str, MemoryNode]) -> dict[str, tuple[object, ...]]:
    return {i: (n.level, n.parent_id, n.t_start, n.t_end, n.source_ids) for i, n in nodes.items()}


@pytest.mark.parametrize("closed", [False, True])
async def test_a_turn_later_than_the_window_is_late_data_in_its_own_session(
    closed: bool,
) -> None:
    """Between two people every message is an exchange of its own: a message that comes
    after the window has let its session go on is late data and the tree has the in-order
    nodes (ids, parents, intervals, messages); if its session had closed, the session and
    the windows above it that had closed are written again (their versions tell)."""
    rules = WindowRules(reorder_turns=4)
    events = locomo_events(CONVERSATION, SESSIONS, "other")
    in_order = (await tree_of(rules, events, [8])).nodes("locomo")
    late = events[5]  # the first session's sixth message
    assert isinstance(late, Turn) and late.seq == 5
    at = 25 if closed else 18  # after the next session's first messages, or before its end
    sent = [*events[:5], *events[6:at], late, *events[at:]]
    got = (await tree_of(rules, sent, [8])).nodes("locomo")
    assert shape(got) == shape(in_order)
    bumped = {n.level for i, n in got.items() if n.version != in_order[i].version}
    assert bumped == ({Level.SESSION, Level.DAY, Level.WEEK} if closed else set())


def differences_but_versions(got: dict[str, MemoryNode], want: dict[str, MemoryNode]) -> list[str]:
    """`differences`, versions aside: late data writes a node again (version + 1)."""
    return differences(
        {i: replace(n, version=1) for i, n in got.items()},
        {i: replace(n, version=1) for i, n in want.items()},
    )


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("seed", SEEDS)
async def test_turns_later_than_the_window_still_give_the_in_order_tree(
    layout: str, seed: int
) -> None:
    """A window of 2 and each session shuffled whole: most turns come later than the window,
    as late data (questions written alone before their replies come, sessions named after a
    message taken first), with duplicates mixed in; their sessions are cut again and every
    node is the in-order one, versions aside."""
    rng = random.Random(200 + seed)
    rules = WindowRules(reorder_turns=2)
    events = locomo_events(CONVERSATION, SESSIONS, layout)
    in_order = (await tree_of(rules, events, [8])).nodes("locomo")
    sent = with_duplicates(shuffled_within_sessions(events, rng), rng, share=0.1)
    shuffled = await tree_of(rules, sent, batch_sizes(rng))
    assert differences_but_versions(shuffled.nodes("locomo"), in_order) == []
    # Each message leads to the leaf that holds it now (a message forget looks it up so).
    leaves = [n for n in in_order.values() if n.level == Level.SEGMENT]
    for leaf in leaves:
        assert await shuffled.tree.leaves_citing("locomo", leaf.source_ids) == [leaf.id]
    announced, replaced = feed_view(shuffled.publisher.sent)
    assert announced == set(in_order)  # the feed's consumer holds the tree, nothing else
    # With replies, late questions and replies replaced the leaves written without them.
    assert bool(replaced) == (layout == "assistant")


@pytest.mark.parametrize("layout", LAYOUTS)
async def test_a_whole_conversation_shuffled_past_the_window_gives_the_in_order_tree(
    layout: str,
) -> None:
    """All 19 sessions (419 messages) of the conversation, each shuffled whole, with a
    window of 2 and duplicates mixed in: node by node the in-order tree, versions aside."""
    rng = random.Random(400)
    rules = WindowRules(reorder_turns=2)
    events = locomo_events(CONVERSATION, 19, layout)
    in_order = (await tree_of(rules, events, [32])).nodes("locomo")
    sent = with_duplicates(shuffled_within_sessions(events, rng), rng, share=0.1)
    shuffled = await tree_of(rules, sent, [rng.randint(8, 40) for _ in range(12)])
    assert differences_but_versions(shuffled.nodes("locomo"), in_order) == []
    assert feed_view(shuffled.publisher.sent)[0] == set(in_order)


@pytest.mark.parametrize("seed", SEEDS)
async def test_a_message_sent_with_flush_stays_alone_when_its_session_is_cut(seed: int) -> None:
    """Every third message of the user's sent with `flush` (written at once, alone): a session
    cut again for late data keeps them alone, as an in-order sender gets them."""
    rng = random.Random(600 + seed)
    rules = WindowRules(reorder_turns=2)
    events = [
        replace(e, flush=True) if isinstance(e, Turn) and e.role == "user" and e.seq % 3 == 0 else e
        for e in locomo_events(CONVERSATION, SESSIONS, "assistant")
    ]
    in_order = (await tree_of(rules, events, [8])).nodes("locomo")
    alone = [n for n in in_order.values() if n.level == Level.SEGMENT and len(n.source_ids) == 1]
    assert alone  # the flushed messages are L1s of their own in order
    sent = with_duplicates(shuffled_within_sessions(events, rng), rng, share=0.1)
    shuffled = await tree_of(rules, sent, batch_sizes(rng))
    assert differences_but_versions(shuffled.nodes("locomo"), in_order) == []


def feed_view(sent: Sequence[Outbound]) -> tuple[set[str], set[str]]:
    """The memory ids a consumer of the change feed holds at the end, and those it was told
    were replaced."""
    held: set[str] = set()
    replaced: set[str] = set()
    for event in (o.value for o in sent if o.topic == "memories"):
        if event["type"] == "memory.v1":
            held.add(event["id"])
        elif event["type"] == "memory_removed.v1":
            held -= set(event["ids"])
            if event["reason"] == "replaced":
                replaced |= set(event["ids"])
    return held, replaced


class Crashed(Exception):
    """The worker died inside the step (before its commit)."""


@pytest.mark.parametrize("size", [None, 2, 3])  # by exchange, or every `size` messages
@pytest.mark.parametrize("layout", LAYOUTS)
async def test_late_data_redone_after_a_crash_in_every_step_gives_the_in_order_tree(
    layout: str, size: int | None
) -> None:
    """Every batch is first cut short at its commit (its leaves written and indexed, the
    points of the leaves it replaces deleted), then handled again, and every other one also
    fails to publish after committing: the replays give the in-order tree all the same."""
    rng = random.Random(300)
    rules = WindowRules(reorder_turns=2)
    if size is not None:
        rules = replace(rules, segment_messages=size, segment_by_exchange=False)
    events = locomo_events(CONVERSATION, SESSIONS, layout)
    in_order = (await tree_of(rules, events, [8])).nodes("locomo")
    sent = with_duplicates(shuffled_within_sessions(events, rng), rng, share=0.1)
    rig = handler_rig(rules)
    commit = rig.tree.commit_user

    async def crash(_: object) -> bool:
        raise Crashed

    for n, at in enumerate(range(0, len(sent), 5)):
        batch = sent[at : at + 5]
        rig.tree.commit_user = crash  # type: ignore[method-assign]
        with pytest.raises(Crashed):
            await rig.send(*batch)
        rig.tree.commit_user = commit  # type: ignore[method-assign]
        if n % 2:
            rig.publisher.failures = 1
            with pytest.raises(ConnectionError):
                await rig.send(*batch)
        await rig.send(*batch)
    await rig.send(ClockTicked("locomo", NOW + timedelta(days=1)))
    assert differences_but_versions(rig.nodes("locomo"), in_order) == []
    assert feed_view(rig.publisher.sent)[0] == set(in_order)


def pending_ids(rig: HandlerRig) -> list[str]:
    """The messages the reducer still gathers into a segment (its open session's)."""
    return [t.event_id for t in decode_state(json.loads(rig.tree.states["locomo"])).pending]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("size", [2, 3])
@pytest.mark.parametrize("seed", range(3))
async def test_count_mode_cuts_an_open_session_as_in_order(
    layout: str, size: int, seed: int
) -> None:
    """Every `size` messages an L1, whoever spoke, with a window of 2 and each session
    shuffled whole (duplicates mixed in): a late turn of the open session is cut with the
    messages the reducer is gathering. While the last session is open, the tree and the
    group still gathered are the in-order ones; once it closes, so is the whole tree."""
    rng = random.Random(500 + seed)
    rules = WindowRules(segment_messages=size, segment_by_exchange=False, reorder_turns=2)
    events = locomo_events(CONVERSATION, SESSIONS, layout)
    assert isinstance(events[-1], SessionEnded)
    events = events[:-1]  # the last session stays open
    sent = with_duplicates(shuffled_within_sessions(events, rng), rng, share=0.1)
    in_order, shuffled = handler_rig(rules), handler_rig(rules)
    await in_order.send_in_batches(events, [8], tick=False)
    await shuffled.send_in_batches(sent, batch_sizes(rng), tick=False)
    assert pending_ids(in_order)  # a partial group is being gathered
    assert pending_ids(shuffled) == pending_ids(in_order)
    assert differences_but_versions(shuffled.nodes("locomo"), in_order.nodes("locomo")) == []
    for rig in (in_order, shuffled):
        await rig.send(ClockTicked("locomo", NOW + timedelta(days=1)))
    want = in_order.nodes("locomo")
    assert differences_but_versions(shuffled.nodes("locomo"), want) == []
    assert feed_view(shuffled.publisher.sent)[0] == set(want)
