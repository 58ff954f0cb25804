"""Re-deriving (rebuilding) a user's tree: the job a `rebuild.v1` starts, and its rules.

A rebuild re-runs the leaves of a user's history from the messages they keep verbatim, with
the current derivation (backend, model, prompt version, embedder), then has the windows
above them consolidated again, as late data is. The segmenter, the one writer of the user's
tree, does it in chunks of leaves, one chunk per `rebuild.v1` record (the scheduler sends the
next while work remains, at a bounded rate), so the user's live turns and every other user
of the partition never wait behind a whole rebuild.

Progress is this job, stored with the user's state and committed in the same transaction as
the chunk's leaves: a worker killed in a chunk replays it from the job as committed and ends
with the tree an uninterrupted rebuild writes. The job itself is a few counters: the ids of
its leaves and windows (`RebuildPlan`) are written once, beside it, when it is planned, and a
chunk reads only its own range of them, so what a chunk reads and writes does not grow with
the user's history.

- A leaf whose derivation is already the current one is left alone: a rebuild with nothing
  changed writes nothing (no version bump anywhere).
- The windows to consolidate again are closed once, bottom-up, after the last chunk, not
  after each: a session whose leaves span two chunks is written once (version + 1).
- The windows are every stored ancestor of the leaves in scope and every stored node of the
  requested levels 2-5 in scope; the consolidator writes again only those whose inputs or
  derivation changed (the fingerprint includes the derivation), so the others stay as they are.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from memstream.domain.derivation import Derivation
from memstream.domain.models import Level, MemoryNode, RebuildRequested
from memstream.domain.windows import bottom_up


@dataclass(frozen=True, slots=True)
class RebuildPlan:
    """What a job covers: written once, when it is planned, and read by range."""

    leaves: tuple[str, ...]  # ids of the leaves in scope, oldest first
    windows: tuple[str, ...]  # ids of the L2-L5 nodes to consolidate again at the end


@dataclass(frozen=True, slots=True)
class RebuildJob:
    """One user's rebuild: what it covers, with what, and how far it got."""

    rebuild_id: str
    derivation: Derivation | None  # what the leaves are re-derived with (the worker's)
    since: datetime | None  # only nodes ending at or after this (None: the whole history)
    levels: tuple[Level, ...]
    leaf_count: int  # how many leaves are in scope (their ids: the plan's)
    window_count: int  # how many windows are consolidated again at the end
    done: int = 0  # how many of the leaves are handled
    rewritten: int = 0  # how many of those were written again (the others were current)
    finished: bool = False  # every leaf handled and the windows' closures committed
    # Set while the plan is still to be written beside the job (the step that plans it, or
    # one that read a job stored whole before plans were kept apart); None once written.
    plan: RebuildPlan | None = None

    def advanced(self, handled: int, rewritten: int) -> RebuildJob:
        done = min(self.leaf_count, self.done + handled)
        return replace(
            self,
            done=done,
            rewritten=self.rewritten + rewritten,
            finished=done == self.leaf_count,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "rebuild_id": self.rebuild_id,
            "derivation": self.derivation.to_json() if self.derivation else None,
            "since": self.since.isoformat() if self.since else None,
            "levels": [int(level) for level in self.levels],
            "leaf_count": self.leaf_count,
            "window_count": self.window_count,
            "done": self.done,
            "rewritten": self.rewritten,
            "finished": self.finished,
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> RebuildJob:
        since = doc.get("since")
        plan = None
        if "leaves" in doc:  # stored whole, before plans were kept apart: moved at its next step
            plan = RebuildPlan(tuple(doc["leaves"]), tuple(doc["windows"]))
        return cls(
            rebuild_id=str(doc["rebuild_id"]),
            derivation=Derivation.from_json(doc["derivation"]) if doc.get("derivation") else None,
            since=datetime.fromisoformat(since) if since else None,
            levels=tuple(Level(int(n)) for n in doc["levels"]),
            leaf_count=len(plan.leaves) if plan else int(doc["leaf_count"]),
            window_count=len(plan.windows) if plan else int(doc["window_count"]),
            done=int(doc["done"]),
            rewritten=int(doc.get("rewritten", 0)),
            finished=bool(doc["finished"]),
            plan=plan,
        )


def in_scope(node: MemoryNode, request: RebuildRequested) -> bool:
    """Whether a rebuild re-derives this node itself (its level asked for, ending in range)."""
    if node.level not in request.levels:
        return False
    return request.since is None or node.t_end >= request.since


def plan_job(
    request: RebuildRequested,
    derivation: Derivation | None,
    leaves: Sequence[MemoryNode],
    ancestors: Iterable[MemoryNode],
    upper: Iterable[MemoryNode],
) -> RebuildJob:
    """The job for `request`: `leaves` are the user's L1s, `ancestors` every stored ancestor of
    those in scope, `upper` the user's stored L2-L5 nodes (those in scope are kept)."""
    chosen = sorted((n for n in leaves if in_scope(n, request)), key=lambda n: (n.t_end, n.id))
    windows = {n.id: n for n in ancestors} | {n.id: n for n in upper if in_scope(n, request)}
    plan = RebuildPlan(
        leaves=tuple(n.id for n in chosen),
        windows=tuple(n.id for n in bottom_up(windows.values())),
    )
    return RebuildJob(
        rebuild_id=request.rebuild_id,
        derivation=derivation,
        since=request.since,
        levels=request.levels,
        leaf_count=len(plan.leaves),
        window_count=len(plan.windows),
        plan=plan,
    )


def needs_rederiving(node: MemoryNode, derivation: Derivation | None) -> bool:
    """A node derived otherwise than `derivation` (or before derivations were kept)."""
    return node.derivation != derivation
