"""Count mode: a session's turns in any order, through the reducer and the cut of each late
turn (`domain.count_groups`, `domain.resegment`), give the in-order L1s and, while the
session is open, the in-order group still gathered."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from memstream.domain.models import MemoryNode, SessionEnded, Summary, Turn
from memstream.domain.nodes import segment_node
from memstream.domain.reorder import apply_in_order
from memstream.domain.resegment import cut_again, exchanges
from memstream.domain.windows import (
    Output,
    Resegment,
    SegmentReady,
    UserWindows,
    WindowRules,
    initial_state,
)

T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)


def turn(seq: int) -> Turn:
    role = "user" if seq % 2 == 0 else "assistant"
    at = T0 + timedelta(minutes=seq)
    return Turn(f"m{seq}", "u1", "s1", seq, role, role, f"text {seq}", at)  # type: ignore[arg-type]


class Leaves:
    """The session's L1s as a store would hold them after each output is written."""

    def __init__(self, rules: WindowRules) -> None:
        self.rules = rules
        self.nodes: dict[str, MemoryNode] = {}

    def write(self, outputs: list[Output]) -> None:
        for out in outputs:
            if isinstance(out, SegmentReady):
                self._add(out)
            elif isinstance(out, Resegment):
                parents = {out.parent_id, out.in_order_parent_id}
                mine = [n for n in self.nodes.values() if n.parent_id in parents]
                cut = cut_again(
                    mine,
                    self.nodes,
                    out.turn,
                    out.in_order_parent_id,
                    self.rules,
                    out.pending,
                    out.still_pending,
                )
                for gone in cut.removed:
                    del self.nodes[gone.id]
                for seg, _ in cut.written:
                    self._add(seg)

    def _add(self, seg: SegmentReady) -> None:
        node = segment_node("u1", seg, Summary("x"))
        self.nodes[node.id] = node

    def groups(self) -> list[list[str]]:
        return sorted(list(n.source_ids) for n in self.nodes.values())


def in_order(turns: list[Turn], rules: WindowRules) -> list[list[str]]:
    return [[t.event_id for t in group] for group in exchanges(turns, rules)]


@settings(max_examples=300, deadline=None)
@given(
    st.integers(min_value=1, max_value=14).flatmap(lambda n: st.permutations(list(range(n)))),
    st.integers(min_value=2, max_value=4),
    st.integers(min_value=1, max_value=3),
)
def test_any_arrival_order_gives_the_in_order_groups(
    order: list[int], size: int, window: int
) -> None:
    rules = WindowRules(segment_messages=size, segment_by_exchange=False, reorder_turns=window)
    turns = [turn(seq) for seq in range(len(order))]
    state: UserWindows = initial_state("u1", "UTC")
    leaves = Leaves(rules)
    for seq in order:
        state, out = apply_in_order(state, turns[seq], T0, rules)
        leaves.write(out)
    assert state.held == ()
    want = in_order(turns, rules)
    gathered = [t.event_id for t in state.pending]
    assert want[-1] == gathered if gathered else len(want[-1]) == size  # open: as in order
    assert leaves.groups() == sorted(want[:-1] if gathered else want)
    state, out = apply_in_order(state, SessionEnded("u1", "s1", T0 + timedelta(hours=1)), T0, rules)
    leaves.write(out)
    assert leaves.groups() == sorted(want)  # closed: the last group written too
    assert state.pending == () and state.written_tail == ()
