"""A session cut into L1s again in `seq` order, when a turn later than the reorder window
changes how its messages pair (`windows.Resegment`).

The reducer pairs a user's message with the reply that follows it in `seq` order; a message
that comes after the session went past it could pair with a neighbour already written
alone, and one that is the session's first renames the session. Cutting the session's
stored messages and the late one again, with the reducer's own pairing rules, gives the
L1s an in-order sender gets: their ids are their event ids (`ids.segment_id`), whatever
order the records came in. Only what differs is written: a leaf the cut keeps under the
same parent stays as it is, one it keeps under a renamed session is written again there
(version + 1), one it no longer has is removed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from memstream.domain.ids import segment_id
from memstream.domain.models import MemoryNode, Turn
from memstream.domain.nodes import remaining_turns
from memstream.domain.windows import SegmentReady, WindowRules, gathered


@dataclass(frozen=True, slots=True)
class SessionCut:
    """What cutting a session again changes: the segments to write, each with its version,
    the stored leaves written again under another parent (as stored: their old link goes)
    and the stored leaves that go."""

    written: list[tuple[SegmentReady, int]] = field(default_factory=list)
    moved: list[MemoryNode] = field(default_factory=list)
    removed: list[MemoryNode] = field(default_factory=list)


def exchanges(turns: Sequence[Turn], rules: WindowRules) -> list[tuple[Turn, ...]]:
    """`turns` (one session's, in `seq` order) grouped into segments as the reducer groups
    them when they arrive in that order and the session then closes."""
    groups: list[tuple[Turn, ...]] = []
    pending: tuple[Turn, ...] = ()
    for turn in turns:
        complete, pending = gathered(pending, turn, rules)
        groups += complete
    return [*groups, pending] if pending else groups


def cut_again(
    leaves: Sequence[MemoryNode],
    stored: Mapping[str, MemoryNode],
    late: Turn,
    parent_id: str,
    rules: WindowRules,
) -> SessionCut:
    """The session whose L1s are `leaves`, with `late` among its messages, cut in `seq`
    order under `parent_id`. `stored`: those of them the store holds, as it holds them."""
    by_id = {leaf.id: leaf for leaf in leaves}
    messages = {t.event_id: t for leaf in leaves for t in remaining_turns(leaf, ())}
    messages[late.event_id] = late
    ordered = sorted(messages.values(), key=lambda t: (t.seq, t.ts, t.event_id))
    cut = SessionCut()
    kept: set[str] = set()
    for group in exchanges(ordered, rules):
        leaf_id = segment_id(late.user_id, [t.event_id for t in group])
        kept.add(leaf_id)
        leaf = by_id.get(leaf_id)
        if leaf is not None and leaf.parent_id == parent_id:
            continue  # the in-order leaf already
        was = stored.get(leaf_id)
        if was is not None and was.parent_id != parent_id:
            cut.moved.append(was)
        cut.written.append((SegmentReady(group, parent_id, late=True), _next(was)))
    cut.removed.extend(stored.get(leaf.id, leaf) for leaf in leaves if leaf.id not in kept)
    return cut


def _next(stored: MemoryNode | None) -> int:
    return 1 if stored is None else stored.version + 1
