"""What one entity key's surfaces give the entity index: which of them count, and their sums.

The index (`entity_index.build`) merges keys into entities and describes each entity by its
keys' surfaces: the names said and how often, the kinds, the first and last time, the leaves,
the mentions. All of these are sums over the surfaces that count, so a key is summed once
(`key_surfaces`) and an entity adds up its keys. A reader stepping its index forward
(`knowledge_view`) sums again only the keys a change names, and a key a change only adds to
(new leaves saying it as it was said before) is added to, not summed again (`added_to`):
a speaker's name, said in every leaf, costs the leaves added, not the leaves held. Each key
also keeps its leaves newest first (`recent`), so recall reads the newest leaves of an entity
without dating every leaf of it at each question. Pure, standard library only.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from memstream.domain.entities import EntityKind

# A word capitalised mostly where sentences start is an ordinary word ("Let's", "See"):
# its weak mentions count only if at least one leaf in this many says it mid-sentence.
WEAK_TO_STRONG_LEAVES = 5
# When votes tie, the more specific kind wins, in this order.
KIND_ORDER: tuple[EntityKind, ...] = ("person", "pet", "organisation", "place", "thing")


class Surface(Protocol):
    """What is summed of one leaf's surface of a key (`entity_index.Surface`)."""

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> EntityKind: ...
    @property
    def count(self) -> int: ...
    @property
    def weak(self) -> bool: ...
    @property
    def speaker(self) -> bool: ...
    @property
    def first(self) -> datetime: ...
    @property
    def last(self) -> datetime: ...


@dataclass(frozen=True, slots=True)
class KeySurfaces:
    """The sums of one key's surfaces that count (none: the key is not in `by_key`)."""

    leaves: tuple[str, ...]  # the leaves whose surfaces count, sorted
    recent: tuple[str, ...]  # the same leaves, the latest said first (`newest_first`)
    names: Mapping[str, int]  # name as said -> mentions
    kinds: Mapping[EntityKind, int]  # kind (never "unknown") -> surfaces
    kind: EntityKind
    first: datetime
    last: datetime
    mentions: int
    strong: int  # surfaces said strongly (or by a speaker)
    kept: int  # those, and the weak ones spelled as a strong one
    strong_only: bool  # the weak ones are outnumbered and left out


def vote(kinds: Mapping[EntityKind, int]) -> EntityKind:
    """The kind most surfaces give, ties by `KIND_ORDER`; none: unknown."""
    if not kinds:
        return "unknown"
    return min(kinds, key=lambda k: (-kinds[k], KIND_ORDER.index(k)))


def newest_first(said_at: Mapping[str, datetime]) -> tuple[str, ...]:
    """Leaf ids by the time they said something, the latest first, ties by leaf id."""
    return tuple(sorted(sorted(said_at), key=said_at.__getitem__, reverse=True))


def _strong(surface: Surface) -> bool:
    return not surface.weak or surface.speaker


def key_surfaces(by_leaf: Mapping[str, Surface]) -> KeySurfaces | None:
    """One key's surfaces (leaf id -> surface) summed as the merging counts them; None when
    none counts. A weakly said key counts only where it is a name elsewhere: said strongly,
    or by a speaker, and spelled the same (a weak "Got" is not the strong "GoT")."""
    strong = [(leaf_id, s) for leaf_id, s in by_leaf.items() if _strong(s)]
    spelled = {s.name for _, s in strong}
    kept = [(leaf_id, s) for leaf_id, s in by_leaf.items() if _strong(s) or s.name in spelled]
    strong_only = len(strong) * WEAK_TO_STRONG_LEAVES < len(kept)
    chosen = strong if strong_only else kept
    if not chosen:
        return None
    names: Counter[str] = Counter()
    kinds: Counter[EntityKind] = Counter()
    for _, s in chosen:
        names[s.name] += s.count
        if s.kind != "unknown":
            kinds[s.kind] += 1
    return KeySurfaces(
        leaves=tuple(sorted(leaf_id for leaf_id, _ in chosen)),
        recent=newest_first({leaf_id: s.last for leaf_id, s in chosen}),
        names=names,
        kinds=kinds,
        kind=vote(kinds),
        first=min(s.first for _, s in chosen),
        last=max(s.last for _, s in chosen),
        mentions=sum(s.count for _, s in chosen),
        strong=len(strong),
        kept=len(kept),
        strong_only=strong_only,
    )


def added_to(summed: KeySurfaces, added: Mapping[str, Surface]) -> KeySurfaces | None:
    """`summed` with the surfaces of new leaves added, when that is all that changes: no name
    is said strongly for the first time (which could bring in weak surfaces held), the weak
    ones stay in or out as they were, and every leaf added said the key after every leaf
    held (new leaves go in front of `recent`; a late one would have to be placed among
    them). None otherwise: sum the key again. The names summed are the names spelled
    strongly, whichever surfaces count."""
    strong_added = {i: s for i, s in added.items() if _strong(s)}
    if any(s.name not in summed.names for s in strong_added.values()):
        return None
    kept_added = {i: s for i, s in added.items() if _strong(s) or s.name in summed.names}
    strong, kept = summed.strong + len(strong_added), summed.kept + len(kept_added)
    if (strong * WEAK_TO_STRONG_LEAVES < kept) != summed.strong_only:
        return None
    chosen = strong_added if summed.strong_only else kept_added
    if any(s.last <= summed.last for s in chosen.values()):
        return None
    names, kinds = Counter(summed.names), Counter(summed.kinds)
    leaves = list(summed.leaves)
    for leaf_id, s in chosen.items():
        names[s.name] += s.count
        if s.kind != "unknown":
            kinds[s.kind] += 1
        bisect.insort(leaves, leaf_id)
    return KeySurfaces(
        leaves=tuple(leaves),
        recent=newest_first({leaf_id: s.last for leaf_id, s in chosen.items()}) + summed.recent,
        names=names,
        kinds=kinds,
        kind=vote(kinds),
        first=min([summed.first, *(s.first for s in chosen.values())]),
        last=max([summed.last, *(s.last for s in chosen.values())]),
        mentions=summed.mentions + sum(s.count for s in chosen.values()),
        strong=strong,
        kept=kept,
        strong_only=summed.strong_only,
    )
