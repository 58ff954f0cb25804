"""A user's entity index as a pure reducer: the leaves observed, and the entities they name.

The index keeps what each leaf said (its mentions, their times) and derives the entities
from that set alone: the same leaves give the same entities whatever the order they came
in, observing a leaf again changes nothing, and forgetting a leaf is exactly as if it had
never been observed. Aliases are merged in the derivation, so a name said later folds in
an earlier kin reference ("my sister" ... "my sister Anna") and a short form a later full
name ("Mel" ... "Melanie").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from memstream.domain.entities import (
    EntityKind,
    Mention,
    clean_text,
    mentions,
    name_key,
    relation_key,
)
from memstream.domain.entity_keys import KeySurfaces, key_surfaces, newest_first, vote
from memstream.domain.entity_lexicon import FIRST_PERSON

# A short form merges into a longer name only if it is this long ("Al" stays itself).
MIN_PREFIX_CHARS = 3
# ...and only into a name that has this share of the mentions of all the names it begins
# ("Mel" is Melanie's, not the one-off typo "Mell"'s; between Melanie and Melissa it stays).
PREFIX_DOMINANCE = 0.8
# Kinds a short form can stand for: people and pets have nicknames, places rarely do.
_NICKNAMED: frozenset[EntityKind] = frozenset({"person", "pet", "unknown"})
_THIRD_PERSON = frozenset({"his", "her", "their"})


class SaidMessage(Protocol):
    """What the index reads of a message (a `Turn` is one)."""

    @property
    def speaker(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def ts(self) -> datetime: ...


@dataclass(frozen=True, slots=True)
class Surface:
    """One key as one leaf said it: how often, how, when, and whether only weakly."""

    key: str
    name: str
    kind: EntityKind
    count: int
    weak: bool  # every mention in the leaf was weak (sentence-initial, a month name)
    speaker: bool  # the key is a speaker of the leaf
    first: datetime
    last: datetime


@dataclass(frozen=True, slots=True)
class LeafEntities:
    """What one leaf contributes: its surfaces and the aliases it states (relation, name)."""

    surfaces: tuple[Surface, ...]
    links: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class Entity:
    """Someone or something the user's memories are about."""

    key: str
    name: str
    kind: EntityKind
    aliases: tuple[str, ...]  # other keys that resolve to this entity
    first_seen: datetime
    last_seen: datetime
    leaf_ids: tuple[str, ...]
    mentions: int
    # `leaf_ids`, the latest said first (by when each leaf said this entity), ties by leaf id
    recent: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class EntityIndex:
    """The leaves observed and the entities derived from them (never mutated)."""

    leaves: Mapping[str, LeafEntities] = field(default_factory=dict)
    entities: Mapping[str, Entity] = field(default_factory=dict)
    keys: Mapping[str, str] = field(default_factory=dict)  # every alias key -> entity key


def read_leaf(messages: Iterable[SaidMessage]) -> LeafEntities:
    """The surfaces and alias links of a leaf's messages."""
    seen: dict[str, list[tuple[Mention, datetime]]] = {}
    links: set[tuple[str, str]] = set()
    # What each speaker's message before named: "Her name is Marisol" opening a message
    # names the relation it named.
    earlier: dict[str, tuple[Mention, ...]] = {}
    for message in messages:
        named = mentions(message.text, message.speaker, earlier.get(message.speaker, ()))
        earlier[message.speaker] = named
        for m in named:
            said = seen.get(m.key)
            if said is None:
                seen[m.key] = [(m, message.ts)]
            else:
                said.append((m, message.ts))
            if m.alias_of is not None:
                links.add((m.alias_of, m.key))
    surfaces = tuple(_surface(key, said) for key, said in sorted(seen.items()))
    return LeafEntities(surfaces, tuple(sorted(links)))


def _surface(key: str, said: list[tuple[Mention, datetime]]) -> Surface:
    """One key's mentions in a leaf as one surface."""
    if len(said) == 1:  # most keys of a leaf: said once, so there is nothing to vote on
        m, ts = said[0]
        return Surface(key, m.name, m.kind, 1, m.weak, m.form == "speaker", ts, ts)
    names = Counter(m.name for m, _ in said)
    return Surface(
        key=key,
        name=min(names, key=lambda n: (-names[n], n)),
        kind=_vote([m.kind for m, _ in said if m.kind != "unknown"]),
        count=len(said),
        weak=all(m.weak for m, _ in said),
        speaker=any(m.form == "speaker" for m, _ in said),
        first=min(ts for _, ts in said),
        last=max(ts for _, ts in said),
    )


def observe(index: EntityIndex, leaf_id: str, messages: Iterable[SaidMessage]) -> EntityIndex:
    """The index with a leaf's messages read; a leaf already observed is replaced."""
    leaf = read_leaf(messages)
    if index.leaves.get(leaf_id) == leaf:
        return index
    return build({**index.leaves, leaf_id: leaf})


def forget(index: EntityIndex, leaf_ids: Iterable[str]) -> EntityIndex:
    """The index without the given leaves; entities no remaining leaf mentions are gone."""
    drop = set(leaf_ids) & set(index.leaves)
    if not drop:
        return index
    return build({k: v for k, v in index.leaves.items() if k not in drop})


def build(leaves: Mapping[str, LeafEntities]) -> EntityIndex:
    """The entities a set of leaves names, aliases merged."""
    said: dict[str, dict[str, Surface]] = {}
    for leaf_id, leaf in leaves.items():
        for s in leaf.surfaces:
            said.setdefault(s.key, {})[leaf_id] = s
    summed = {k: key_surfaces(by_leaf) for k, by_leaf in said.items()}
    return clustered(leaves, {k: v for k, v in summed.items() if v is not None})


def clustered(
    leaves: Mapping[str, LeafEntities],
    by_key: Mapping[str, KeySurfaces],
    kept: Callable[[Sequence[str]], Entity | None] = lambda members: None,
    ordered: Callable[[Sequence[str]], tuple[str, ...] | None] = lambda members: None,
) -> EntityIndex:
    """`build`, given each key's surfaces already counted (`key_surfaces`): what a reader
    keeps from one revision to the next (`knowledge_view`), with `kept(members)` the entity
    it derived before of these keys if none of their surfaces changed since, and
    `ordered(members)` the leaves of an entity of several keys newest first if it can step
    them forward. Nothing below depends on the order of the leaves."""
    real = set(by_key)
    kinds = {k: by_key[k].kind for k in real}
    parent = {k: k for k in real}

    def root(k: str) -> str:
        while parent[k] != k:
            k = parent[k]
        return k

    def union(a: str, b: str) -> None:
        ra, rb = root(a), root(b)
        if ra != rb:
            keep, fold = sorted((ra, rb), key=_key_rank)
            parent[fold] = keep

    # Short forms, first names and surnames, longest first, so "Mel" meets "Melanie" already
    # merged with "Melanie Smith" and finds one entity, not two.
    names_only = sorted((k for k in real if "'s " not in k), key=lambda k: (-len(k), k))
    for short in names_only:
        if " " in short or len(short) < MIN_PREFIX_CHARS or kinds[short] not in _NICKNAMED:
            continue
        targets = Counter[str]()
        for k in names_only:
            if k != short and kinds[k] in _NICKNAMED and _shortens(short, k):
                targets[root(k)] += by_key[k].mentions
        if targets:
            target, count = min(targets.items(), key=lambda kv: (-kv[1], kv[0]))
            if count >= PREFIX_DOMINANCE * sum(targets.values()):
                union(short, target)
    # "Mel's sister" and "Melanie's sister" are one relation once Mel is Melanie.
    relations: dict[tuple[str, str], list[str]] = {}
    for k in sorted(real - set(names_only)):
        owner, _, relation = k.partition("'s ")
        relations.setdefault((root(owner) if owner in real else owner, relation), []).append(k)
    for group in relations.values():
        for k in group[1:]:
            union(group[0], k)
    # A relation given one name is that name; given two ("my sister Anna", "my sister Beth")
    # it stays an entity of its own, since the speaker has two of them.
    named: dict[str, set[str]] = {}
    for leaf in leaves.values():
        for relation, name in leaf.links:
            if relation in real and name in real:
                named.setdefault(root(relation), set()).add(root(name))
    for relation, names in sorted(named.items()):
        if len(names) == 1:
            union(relation, next(iter(names)))

    clusters: dict[str, list[str]] = {}
    for k in sorted(real):
        clusters.setdefault(root(k), []).append(k)
    entities: dict[str, Entity] = {}
    keys: dict[str, str] = {}
    for members in clusters.values():
        ranked = sorted(members, key=_key_rank)
        entity = kept(ranked) or _entity(ranked, by_key, leaves, ordered)
        entities[entity.key] = entity
        for k in members:
            keys[k] = entity.key
    return EntityIndex(dict(leaves), entities, keys)


def _shortens(short: str, name: str) -> bool:
    """Whether one word may stand for a longer name: "Mel" for "Melanie", "Potter" for
    "Harry Potter". Titles with "of" have no short form ("Game" is not "Game of Thrones")."""
    words = name.split()
    if " of " in name:
        return False
    return words[0].startswith(short) or (len(words) > 1 and words[-1] == short)


def _entity(
    members: list[str],
    by_key: Mapping[str, KeySurfaces],
    leaves: Mapping[str, LeafEntities],
    ordered: Callable[[Sequence[str]], tuple[str, ...] | None],
) -> Entity:
    summed = [by_key[k] for k in members]
    names = Counter[str]()
    kinds = Counter[EntityKind]()
    for k, key in zip(members, summed, strict=True):
        if "'s " not in k or len(members) == 1:
            names.update(key.names)
        kinds.update(key.kinds)
    leaf_ids = (
        summed[0].leaves if len(summed) == 1 else sorted({i for k in summed for i in k.leaves})
    )
    return Entity(
        key=members[0],
        name=min(names, key=lambda n: (-names[n], -len(n), n)),
        kind=vote(kinds),
        aliases=tuple(members[1:]),
        first_seen=min(key.first for key in summed),
        last_seen=max(key.last for key in summed),
        leaf_ids=tuple(leaf_ids),
        mentions=sum(key.mentions for key in summed),
        recent=summed[0].recent
        if len(summed) == 1
        else ordered(members) or _merged_recent(members, by_key, leaves),
    )


def _merged_recent(
    members: list[str], by_key: Mapping[str, KeySurfaces], leaves: Mapping[str, LeafEntities]
) -> tuple[str, ...]:
    """The leaves of an entity of several keys, the latest said first: a leaf is as recent as
    the latest of the entity's keys it says (among the surfaces that count)."""
    said_at: dict[str, datetime] = {}
    for key in members:
        for leaf_id in by_key[key].leaves:
            last = next(s.last for s in leaves[leaf_id].surfaces if s.key == key)
            if leaf_id not in said_at or last > said_at[leaf_id]:
                said_at[leaf_id] = last
    return newest_first(said_at)


def _key_rank(key: str) -> tuple[int, int, int, str]:
    """Which key names a merged entity: a name over a relation, then the fullest name."""
    return (int("'s " in key), -len(key.split()), -len(key), key)


def _vote(kinds: Sequence[EntityKind]) -> EntityKind:
    return vote(Counter(kinds))


def resolve(index: EntityIndex, name: str, owner: str | None = None) -> str | None:
    """The entity a name in a query stands for: "Mel", "Melanie's", "her sister", or None.

    `owner` is whom "I"/"my" and "her"/"his" refer to, when the caller knows it.
    """
    words = name_key(name).split()
    if not words:
        return None
    owner_key = name_key(owner) if owner else None
    if len(words) == 1 and words[0] in FIRST_PERSON:
        return index.keys.get(owner_key) if owner_key else None
    if len(words) >= 2 and words[0] in FIRST_PERSON | {"our"} | _THIRD_PERSON:
        relation = " ".join(words[1:])
        if owner_key is not None:
            owner_entity = index.keys.get(owner_key)
            chained = relation_key(owner_key, _said_relation(name))
            return (
                index.keys.get(relation_key(owner_key, relation))
                or index.keys.get(chained)
                or (_relation_of(index, owner_entity, relation) if owner_entity else None)
            )
        if words[0] in _THIRD_PERSON:
            # "her sister" with no one to refer to: the one sister the index knows, if one.
            found = {v for k, v in index.keys.items() if k.endswith(f"'s {relation}")}
            return found.pop() if len(found) == 1 else None
        return None
    raw = clean_text(name).split()
    if len(raw) >= 2 and raw[0].endswith("'s"):
        owner_entity = resolve(index, raw[0], owner)
        relation = " ".join(words[1:])
        direct = index.keys.get(relation_key(words[0], relation)) or index.keys.get(
            relation_key(words[0], _said_relation(name))
        )
        if direct is not None or owner_entity is None:
            return direct
        return _relation_of(index, owner_entity, relation)
    key = " ".join(words)
    if key in index.keys:
        return index.keys[key]
    if len(words) == 1 and len(key) >= MIN_PREFIX_CHARS:
        found = {
            v
            for k, v in index.keys.items()
            if "'s " not in k and k.startswith(key) and index.entities[v].kind in _NICKNAMED
        }
        return found.pop() if len(found) == 1 else None
    return None


def _said_relation(name: str) -> str:
    """The relation after a name's first word as said, possessives kept ("my sister's
    husband": "sister's husband"), as a chain of relations is keyed."""
    return " ".join(clean_text(name).casefold().split()[1:])


def _relation_of(index: EntityIndex, owner_entity: str, relation: str) -> str | None:
    """The entity that is `relation` of the owner under any of the owner's aliases."""
    found = {
        v
        for k, v in index.keys.items()
        if k.endswith(f"'s {relation}") and index.keys.get(k.partition("'s ")[0]) == owner_entity
    }
    return found.pop() if len(found) == 1 else None


def query_entities(
    index: EntityIndex, query_text: str, asker: str | None = None
) -> tuple[str, ...]:
    """The keys of the entities a question names, in the order it names them."""
    found: list[str] = []
    for m in mentions(query_text, asker or ""):
        if m.form == "speaker":
            continue  # "I" in a question is the asker, not a topic of it
        key = index.keys.get(m.key) or resolve(index, m.name, asker)
        if key is not None and key not in found:
            found.append(key)
    # "her sister" in "What did Melanie and her sister do?" is most likely Melanie's.
    people = [k for k in found if index.entities[k].kind == "person"]
    for phrase in _third_person_relations(query_text):
        key = (
            resolve(index, phrase, index.entities[people[0]].name) if people else None
        ) or resolve(index, phrase)
        if key is not None and key not in found:
            found.append(key)
    return tuple(found)


def _third_person_relations(text: str) -> list[str]:
    words = name_key(text.replace("?", " ").replace(",", " ")).split()
    return [f"{w} {words[i + 1]}" for i, w in enumerate(words[:-1]) if w in _THIRD_PERSON]


def leaf_entities(index: EntityIndex, leaf_id: str) -> frozenset[str]:
    """The keys of the entities a leaf mentions."""
    leaf = index.leaves.get(leaf_id)
    if leaf is None:
        return frozenset()
    return frozenset(index.keys[s.key] for s in leaf.surfaces if s.key in index.keys)


def entity_leaves(index: EntityIndex, keys: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """The leaves of each given entity, the latest said first (ties by leaf id).

    Kept in that order by the index (`Entity.recent`), so recall, which asks this on every
    request, reads no leaf: dating an entity's leaves here cost a heavy user's recall more
    than all its other stages (a friend named in thousands of leaves)."""
    return {key: entity.recent for key in keys if (entity := index.entities.get(key)) is not None}
