"""A session cut into L1s again in `seq` order (`domain.resegment`): the reducer's pairing,
and only what differs from the stored leaves written, moved or removed."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from memstream.domain.ids import segment_id
from memstream.domain.models import MemoryNode, Summary, Turn
from memstream.domain.nodes import segment_node
from memstream.domain.resegment import cut_again, exchanges
from memstream.domain.windows import SegmentReady, WindowRules, apply, initial_state

RULES = WindowRules(reorder_turns=2)
T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)


def turn(seq: int, role: str) -> Turn:
    at = T0 + timedelta(minutes=seq)
    return Turn(f"m{seq}", "u1", "s1", seq, role, role, f"text {seq}", at)  # type: ignore[arg-type]


def leaf(parent: str, *turns: Turn, version: int = 1) -> MemoryNode:
    node = segment_node("u1", SegmentReady(turns, parent), Summary("x"))
    return replace(node, version=version)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from(["user", "assistant", "other"]), min_size=1, max_size=12))
def test_a_cut_pairs_as_the_reducer_does_in_order(roles: list[str]) -> None:
    turns = [turn(seq, role) for seq, role in enumerate(roles)]
    state, taken = initial_state("u1", "UTC"), []
    for t in turns:
        state, out = apply(state, t, T0, RULES)
        taken += [o.messages for o in out if isinstance(o, SegmentReady)]
    taken += [state.pending] if state.pending else []
    assert ids(exchanges(turns, RULES)) == ids(taken)


def ids(groups: list[tuple[Turn, ...]]) -> list[list[str]]:
    return [[t.event_id for t in group] for group in groups]


def test_a_late_question_joins_the_reply_written_alone() -> None:
    q0, a1, q2, a3 = turn(0, "user"), turn(1, "assistant"), turn(2, "user"), turn(3, "assistant")
    first, alone = leaf("s", q0, a1), leaf("s", a3, version=2)
    cut = cut_again([first, alone], {first.id: first, alone.id: alone}, q2, "s", RULES)
    assert [(seg.messages, version) for seg, version in cut.written] == [((q2, a3), 1)]
    assert cut.removed == [alone] and cut.moved == []  # the first exchange stays as it is


def test_a_renamed_session_has_its_leaves_written_again_under_it() -> None:
    q1, a2 = turn(1, "user"), turn(2, "assistant")
    stored = leaf("old", q1, a2, version=3)
    cut = cut_again([stored], {stored.id: stored}, turn(0, "other"), "new", RULES)
    written = {segment_id("u1", [m.event_id for m in s.messages]): v for s, v in cut.written}
    assert written == {segment_id("u1", ["m0"]): 1, stored.id: 4}
    assert all(seg.parent_id == "new" for seg, _ in cut.written)
    assert cut.moved == [stored] and cut.removed == []
