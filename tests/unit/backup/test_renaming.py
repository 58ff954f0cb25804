"""A tree given to another user id gets the ids the pipeline would give it there."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from memstream.backup.renaming import renaming, rule_id
from memstream.contracts.codec import encode_state
from memstream.domain.facts import AtomicFact, make_fact
from memstream.domain.ids import segment_id, window_node_id
from memstream.domain.models import Level, MemoryNode, Window
from memstream.domain.windows import OpenWindow, UserWindows

AT = datetime(2024, 3, 4, 9, 0, tzinfo=UTC)
LEAF = segment_id("ana", ["m1", "m2"])
SESSION = window_node_id("ana", Level.SESSION, AT, "s1")
DAY = window_node_id("ana", Level.DAY, AT.replace(hour=0))


def tree() -> list[MemoryNode]:
    leaf = MemoryNode(
        LEAF, "ana", Level.SEGMENT, AT, AT, "…", SESSION, source_ids=("m1", "m2"), session_id="s1"
    )
    session = MemoryNode(
        SESSION, "ana", Level.SESSION, AT, AT, "…", DAY, children=(LEAF,), session_id="s1"
    )
    day = MemoryNode(DAY, "ana", Level.DAY, AT.replace(hour=0), AT, "…", children=(SESSION,))
    return [leaf, session, day]


def test_each_node_and_its_links_take_the_new_users_ids() -> None:
    names = renaming(tree(), "ana", "bea")
    leaf, session, day = (names.node(n) for n in tree())
    assert names.not_reproduced == 0
    assert leaf.id == segment_id("bea", ["m1", "m2"]) and leaf.user_id == "bea"
    assert session.id == window_node_id("bea", Level.SESSION, AT, "s1")
    assert (leaf.parent_id, session.parent_id, day.children) == (session.id, day.id, (session.id,))
    assert all(rule_id(n, "bea") == n.id for n in (leaf, session, day))


def test_a_node_the_rule_does_not_give_back_is_named_from_its_old_id() -> None:
    # A leaf written again after one of its messages was forgotten keeps its first id.
    leaf, *rest = tree()
    shrunk = replace(leaf, source_ids=("m2",))
    names = renaming([shrunk, *rest], "ana", "bea")
    assert names.not_reproduced == 1
    renamed = names.node(shrunk)
    assert renamed.id not in (LEAF, segment_id("bea", ["m2"]))
    assert renamed.id == renaming([shrunk], "ana", "bea").node(shrunk).id  # deterministic
    assert names.node(rest[0]).children == (renamed.id,)


def test_facts_and_open_windows_follow_the_new_id() -> None:
    def said_by(user_id: str) -> AtomicFact:
        return make_fact(
            user_id=user_id, subject="speaker:ana", subject_name="Ana", attribute="lives_in",
            value="Porto", text="Ana lives in Porto", valid_from=AT, recorded_at=AT,
            source_ids=("m1",),
        )  # fmt: skip

    names = renaming(tree(), "ana", "bea")
    assert names.fact(said_by("ana")) == said_by("bea")
    week_start = AT.replace(hour=0) - timedelta(days=AT.weekday())
    week = Window("ana", Level.WEEK, week_start, week_start + timedelta(days=7))
    week_id = window_node_id("ana", Level.WEEK, week_start)
    state = encode_state(
        UserWindows("ana", "UTC", open_windows={"w": OpenWindow(week, week_id, None)})
    )
    moved_state = names.state(state)
    assert moved_state["user_id"] == "bea"
    assert moved_state["open_windows"]["w"]["node_id"] == window_node_id(
        "bea", Level.WEEK, week_start
    )
    assert state["user_id"] == "ana"  # the file's value is left as it was
