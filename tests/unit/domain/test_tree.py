"""Tree rules: intervals grow to cover children, and check_containment finds every broken link."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from functools import reduce
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.tree_audit import check_containment

from memstream.domain.calendar import Interval, to_utc, window_for
from memstream.domain.models import Level, MemoryNode
from memstream.domain.tree import covers, grow

BERLIN = ZoneInfo("Europe/Berlin")
ZONES = [UTC, BERLIN, ZoneInfo("Asia/Kolkata"), ZoneInfo("Pacific/Kiritimati")]

instants = st.builds(
    lambda at, zone: at.astimezone(zone),
    st.datetimes(
        min_value=datetime(1990, 1, 1), max_value=datetime(2090, 12, 31), timezones=st.just(UTC)
    ),
    st.sampled_from(ZONES),
)
durations = st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=3))
intervals = st.builds(lambda start, span: (start, start + span), instants, durations)

# Trees draw many intervals; whole minutes within a season keep generation fast and make
# siblings overlap and overrun their parents often.
TREE_EPOCH = datetime(2024, 1, 1, tzinfo=UTC)
tree_intervals = st.builds(
    lambda offset, span, zone: (
        (TREE_EPOCH + timedelta(minutes=offset)).astimezone(zone),
        (TREE_EPOCH + timedelta(minutes=offset + span)).astimezone(zone),
    ),
    st.integers(min_value=0, max_value=90 * 24 * 60),
    st.integers(min_value=0, max_value=3 * 24 * 60),
    st.sampled_from(ZONES),
)


def node(
    node_id: str,
    level: Level,
    span: Interval,
    *,
    parent_id: str | None = None,
    children: tuple[str, ...] = (),
    source_ids: tuple[str, ...] = (),
) -> MemoryNode:
    return MemoryNode(
        id=node_id,
        user_id="alice",
        level=level,
        t_start=span[0],
        t_end=span[1],
        text="",
        parent_id=parent_id,
        children=children,
        source_ids=source_ids,
    )


@st.composite
def trees(draw: st.DrawFn) -> list[MemoryNode]:
    """A sound tree from L1 up to L5: each parent starts from a random window and grows over
    its children, the way consolidators stretch a day over a session past midnight."""
    count = draw(st.integers(min_value=1, max_value=16))
    layer = [
        node(f"L1-{i}", Level.SEGMENT, draw(tree_intervals), source_ids=(f"m{i}", f"m{i}b"))
        for i in range(count)
    ]
    done: list[MemoryNode] = []
    for level in (Level.SESSION, Level.DAY, Level.WEEK, Level.MONTH):
        cuts = draw(st.lists(st.booleans(), min_size=len(layer) - 1, max_size=len(layer) - 1))
        groups: list[list[MemoryNode]] = [[layer[0]]]
        for cut, child in zip(cuts, layer[1:], strict=True):
            if cut:
                groups.append([])
            groups[-1].append(child)
        parents = []
        for index, group in enumerate(groups):
            parent_id = f"{level.label}-{index}"
            span = reduce(grow, [(c.t_start, c.t_end) for c in group], draw(tree_intervals))
            sources = tuple(sorted({s for c in group for s in c.source_ids}))
            children = tuple(c.id for c in group)
            parents.append(node(parent_id, level, span, children=children, source_ids=sources))
            done.extend(replace(c, parent_id=parent_id) for c in group)
        layer = parents
    return done + layer


def inner(tree: list[MemoryNode]) -> list[MemoryNode]:
    return [n for n in tree if n.children]


# --- covers and grow --------------------------------------------------------------------


@settings(max_examples=200)
@given(intervals, intervals)
def test_grow_covers_both_intervals(parent: Interval, child: Interval) -> None:
    grown = grow(parent, child)
    assert covers(*grown, *parent)
    assert covers(*grown, *child)
    # Nothing larger than needed: each bound comes from one of the two intervals.
    assert to_utc(grown[0]) == min(to_utc(parent[0]), to_utc(child[0]))
    assert to_utc(grown[1]) == max(to_utc(parent[1]), to_utc(child[1]))


@settings(max_examples=200)
@given(intervals, intervals)
def test_grow_leaves_a_covering_parent_unchanged(parent: Interval, child: Interval) -> None:
    if covers(*parent, *child):
        assert grow(parent, child) == parent
    assert grow(grow(parent, child), child) == grow(parent, child)


def test_covers_includes_the_bounds() -> None:
    start, end = datetime(2024, 5, 1, tzinfo=UTC), datetime(2024, 5, 2, tzinfo=UTC)
    assert covers(start, end, start, end)
    assert not covers(start, end, start - timedelta(seconds=1), end)
    assert not covers(start, end, start, end + timedelta(seconds=1))


def test_covers_compares_instants_not_wall_clocks() -> None:
    # During Berlin's repeated hour, 02:30 (second reading) is after 02:40 (first reading);
    # a wall-clock comparison would say otherwise.
    parent = (
        datetime(2024, 10, 27, 1, tzinfo=BERLIN),
        datetime(2024, 10, 27, 2, 40, tzinfo=BERLIN),
    )
    child_start = datetime(2024, 10, 27, 2, 30, tzinfo=BERLIN, fold=1)
    child = (child_start, child_start.replace(minute=35))
    assert not covers(*parent, *child)
    assert to_utc(grow(parent, child)[1]) == to_utc(child[1])


def test_day_grows_over_a_session_past_midnight() -> None:
    day = window_for(Level.DAY, datetime(2024, 5, 10, 12, tzinfo=UTC), "Europe/Berlin")
    session = (
        datetime(2024, 5, 10, 23, 30, tzinfo=BERLIN),
        datetime(2024, 5, 11, 0, 40, tzinfo=BERLIN),
    )
    assert not covers(*day, *session)
    grown = grow(day, session)
    assert grown == (day[0], session[1])
    sound = [
        node("s", Level.SESSION, session, parent_id="d", source_ids=("m1",)),
        node("d", Level.DAY, grown, children=("s",), source_ids=("m1",)),
    ]
    assert check_containment(sound) == []
    assert len(check_containment([sound[0], replace(sound[1], t_end=day[1])])) == 1


# --- check_containment ------------------------------------------------------------------


@settings(max_examples=200)
@given(trees())
def test_a_tree_built_with_grow_is_sound(tree: list[MemoryNode]) -> None:
    assert check_containment(tree) == []
    # Order does not matter, and a partial view (links with a missing end) is still sound.
    assert check_containment(reversed(tree)) == []
    assert check_containment(n for n in tree if n.level != Level.DAY) == []


@settings(max_examples=200)
@given(trees(), st.data())
def test_any_single_break_is_reported(tree: list[MemoryNode], data: st.DataObject) -> None:
    parent = data.draw(st.sampled_from(inner(tree)))
    by_id = {n.id: n for n in tree}
    child = by_id[data.draw(st.sampled_from(parent.children))]
    later = to_utc(child.t_start) + timedelta(microseconds=1)
    broken = {
        "interval": [replace(parent, t_start=later)],
        "level": [replace(child, level=parent.level)],
        "parent_id": [replace(child, parent_id="elsewhere")],
        "sources": [replace(parent, source_ids=parent.source_ids[1:])],
        "extra_child": [replace(parent, children=(*parent.children, parent.id))],
    }[data.draw(st.sampled_from(["interval", "level", "parent_id", "sources", "extra_child"]))]
    mutated = {**by_id, **{n.id: n for n in broken}}
    assert check_containment(mutated.values()) != []


def test_each_kind_of_violation_is_named() -> None:
    day = (datetime(2024, 5, 10, tzinfo=UTC), datetime(2024, 5, 11, tzinfo=UTC))
    late = (datetime(2024, 5, 11, 1, tzinfo=UTC), datetime(2024, 5, 11, 2, tzinfo=UTC))
    nodes = [
        node("d", Level.DAY, day, children=("s1", "s2", "s3"), source_ids=("m1", "m9")),
        node("s1", Level.SESSION, late, parent_id="d", source_ids=("m1",)),
        node("s2", Level.SESSION, day, parent_id="other", source_ids=("m2",)),
        node("s3", Level.SEGMENT, day, parent_id="d"),
        node("s4", Level.SESSION, day, parent_id="d"),
    ]
    problems = "\n".join(check_containment(nodes))
    assert "L3 node d [2024-05-10T00:00:00+00:00" in problems
    assert "does not cover its child L2 node s1" in problems
    assert "lists child L2 node s2, whose parent_id is 'other'" in problems
    assert "not one level above its child L1 node s3" in problems
    assert "L2 node s4 names parent L3 node d, which does not list it" in problems
    assert "missing ['m2'], extra ['m9']" in problems


def test_other_structural_faults_are_reported() -> None:
    span = (datetime(2024, 5, 10, tzinfo=UTC), datetime(2024, 5, 11, tzinfo=UTC))
    backwards = (span[1], span[0])
    leaf = node("a", Level.SEGMENT, span, parent_id="s", source_ids=("m1",))
    parent = replace(node("s", Level.SESSION, span, children=("a",), source_ids=("m1",)))
    assert check_containment([leaf, parent]) == []
    assert check_containment([leaf, replace(parent, user_id="bob")]) == [
        "L2 node s and its child L1 node a belong to different users"
    ]
    assert check_containment([leaf, leaf, parent]) == ["L1 node a appears more than once"]
    assert "L1 node a ends before it starts" in check_containment(
        [replace(leaf, t_start=backwards[0], t_end=backwards[1]), parent]
    )
