"""Reading the leaves of a session a late turn cuts again (`domain.resegment`), as the
step sees them: stored, with what the step itself has written and removed so far."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from memstream.domain.models import MemoryNode
from memstream.domain.resegment import SessionCut, cut_again
from memstream.domain.windows import Resegment, WindowRules
from memstream.ports import NodeReader


async def session_cut(
    tree: NodeReader,
    user_id: str,
    late: Resegment,
    written: Mapping[str, MemoryNode],
    gone: Collection[str],
    rules: WindowRules,
) -> tuple[SessionCut, set[str]]:
    """The cut of `late`'s session, and the ids of its leaves the store holds. `written`: the
    L1s this step wrote so far (not yet committed), `gone`: the stored ones it removed."""
    parents = {late.parent_id, late.in_order_parent_id}
    ids: set[str] = set()
    for parent in sorted(parents):  # the in-order parent holds leaves only on a replay
        ids.update(await tree.children_ids(user_id, parent))
    mine = {i: n for i, n in written.items() if n.parent_id in parents}
    # Stored as the store holds them: a leaf this step moved is still under its old parent.
    stored = {n.id: n for n in await tree.get_many(user_id, sorted((ids | set(mine)) - set(gone)))}
    leaves = {i: n for i, n in stored.items() if i in ids} | mine
    cut = cut_again(list(leaves.values()), stored, late.turn, late.in_order_parent_id, rules)
    return cut, set(stored)
