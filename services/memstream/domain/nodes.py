"""Building memory nodes: an L1 from its messages, an L2-L5 from its window and children.

Pure rules shared by the segmenter and the consolidator: deterministic ids, intervals grown
with `tree.grow`, source ids unioned from the children, the fingerprint that says whether a
node's inputs changed, and the vectors' small helpers.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Collection, Sequence
from dataclasses import replace

from memstream.domain.calendar import to_utc
from memstream.domain.derivation import Derivation
from memstream.domain.ids import segment_id
from memstream.domain.models import (
    Level,
    MemoryNode,
    SourceMessage,
    StoredNode,
    Summary,
    Turn,
    WindowClosed,
)
from memstream.domain.segment_text import CAPTION_KEYS, caption_of
from memstream.domain.tree import grow
from memstream.domain.windows import SegmentReady

# Summaries are found by climbing from their leaves, not by vector search, so their dense
# vector only needs the gist: the head of the text costs a fraction of the whole.
EMBEDDED_SUMMARY_WORDS = 64


def segment_node(
    user_id: str,
    segment: SegmentReady,
    summary: Summary,
    derivation: Derivation | None = None,
) -> MemoryNode:
    """The L1 memory of a segment's messages, as `summary` wrote it (and `derivation` says)."""
    messages = segment.messages
    return MemoryNode(
        id=segment_id(user_id, [m.event_id for m in messages]),
        user_id=user_id,
        level=Level.SEGMENT,
        t_start=min((m.ts for m in messages), key=to_utc),
        t_end=max((m.ts for m in messages), key=to_utc),
        text=summary.text,
        parent_id=segment.parent_id,
        source_ids=tuple(m.event_id for m in messages),
        degraded=summary.degraded,
        session_id=messages[0].session_id,
        speakers=tuple(dict.fromkeys(m.speaker for m in messages)),
        messages=tuple(source_message(m) for m in messages),
        derivation=derivation,
    )


def source_message(turn: Turn) -> SourceMessage:
    """A turn as the L1 keeps it: the words as spoken, who, when, and an image's caption."""
    return SourceMessage(
        turn.event_id,
        turn.speaker,
        turn.role,
        turn.text,
        turn.ts,
        caption_of(turn),
        seq=turn.seq,
        tz=turn.tz,
        flush=turn.flush,
    )


def window_node(
    closure: WindowClosed, children: Sequence[MemoryNode], summary: Summary, version: int
) -> MemoryNode:
    """The L2-L5 memory of a closed window: its interval grown to cover every child."""
    window = closure.window
    interval = (window.start, window.end)
    for child in children:
        interval = grow(interval, (child.t_start, child.t_end))
    return MemoryNode(
        id=closure.node_id,
        user_id=window.user_id,
        level=window.level,
        t_start=interval[0],
        t_end=interval[1],
        text=summary.text,
        parent_id=closure.parent_id,
        children=tuple(c.id for c in children),
        source_ids=union_sources(children),
        version=version,
        degraded=summary.degraded,
        session_id=window.session_id,
        speakers=tuple(dict.fromkeys(s for c in children for s in c.speakers)),
        facts=summary.facts,
        tz=window.tz,
    )


def fingerprint(children: Sequence[MemoryNode], derivation: Derivation | None = None) -> str:
    """Identifies a set of children by id and version (and whether they were degraded), and
    what would consolidate them: a new derivation makes the node's inputs new."""
    digest = hashlib.sha256()
    for child in sorted(children, key=lambda c: c.id):
        digest.update(f"{child.id}:{child.version}:{int(child.degraded)};".encode())
    if derivation is not None:
        digest.update(f"derivation:{derivation.key()}".encode())
    return digest.hexdigest()[:32]


def is_current(existing: StoredNode | None, print_: str) -> bool:
    """Whether `existing` was built from children with this fingerprint by the model itself.

    A degraded node (written by the offline fallback) is never current: its window is
    consolidated again, and written again only if that gives a different node.
    """
    return existing is not None and existing.fingerprint == print_ and not existing.node.degraded


def next_version(existing: StoredNode | None) -> int:
    return existing.node.version + 1 if existing else 1


def changes(existing: StoredNode | None, node: MemoryNode, print_: str) -> bool:
    """Whether writing `node`, built from children with fingerprint `print_`, changes the tree:
    its inputs are new, or on the same inputs it says something else (a degraded node that
    the model has now written). A replay that only writes the same degraded text again is no
    change, so it keeps the version."""
    if existing is None or existing.fingerprint != print_:
        return True
    return replace(node, version=existing.node.version) != existing.node


def union_sources(children: Sequence[MemoryNode]) -> tuple[str, ...]:
    """Every message id the children derive from, once each, in the children's order."""
    return tuple(dict.fromkeys(s for c in children for s in c.source_ids))


def embedding_head(text: str) -> str:
    """The first words of a summary: what its dense vector encodes."""
    return " ".join(text.split()[:EMBEDDED_SUMMARY_WORDS])


def mean_direction(vectors: Sequence[Sequence[float]]) -> list[float]:
    """The normalised mean of unit vectors (cosine-friendly centroid)."""
    if len(vectors) == 1:
        return list(vectors[0])
    summed = [sum(column) for column in zip(*vectors, strict=True)]
    norm = math.sqrt(sum(v * v for v in summed)) or 1.0
    return [v / norm for v in summed]


def remaining_turns(leaf: MemoryNode, forgotten: Collection[str]) -> tuple[Turn, ...]:
    """An L1's messages other than `forgotten`, as the turns they came in (enough of them to
    write the leaf again: who, when, what, and an image's caption)."""
    return tuple(
        Turn(
            event_id=m.event_id,
            user_id=leaf.user_id,
            session_id=leaf.session_id or "",
            seq=i if m.seq is None else m.seq,
            speaker=m.speaker,
            role=m.role,
            text=m.text,
            ts=m.ts,
            tz=m.tz,
            metadata={CAPTION_KEYS[0]: m.caption} if m.caption else {},
            flush=m.flush,
        )
        for i, m in enumerate(leaf.messages)
        if m.event_id not in forgotten
    )


def rewritten_leaf(leaf: MemoryNode, turns: Sequence[Turn], summary: Summary) -> MemoryNode:
    """`leaf` written again from fewer messages: same id and parent, the next version."""
    assert leaf.parent_id is not None, "an L1 always has its session as parent"
    fresh = segment_node(leaf.user_id, SegmentReady(tuple(turns), leaf.parent_id), summary)
    return replace(fresh, id=leaf.id, version=leaf.version + 1)
