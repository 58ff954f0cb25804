"""Structural rules of the Temporal Memory Tree: containment, interval growth, a soundness check.

Intervals are compared in UTC, because two datetimes sharing a tzinfo compare by wall clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from memstream.domain.calendar import Interval, to_utc
from memstream.domain.models import MemoryNode


def covers(
    parent_start: datetime, parent_end: datetime, child_start: datetime, child_end: datetime
) -> bool:
    """Whether the parent interval covers the child interval (bounds included)."""
    return to_utc(parent_start) <= to_utc(child_start) and to_utc(child_end) <= to_utc(parent_end)


def grow(interval: Interval, child_interval: Interval) -> Interval:
    """The smallest interval covering both: a parent stretched over a child that overruns it."""
    (start, end), (child_start, child_end) = interval, child_interval
    # min/max keep the first of equal bounds, so an unchanged parent keeps its own zone.
    return min(start, child_start, key=to_utc), max(end, child_end, key=to_utc)


def check_containment(nodes: Iterable[MemoryNode]) -> list[str]:
    """Every broken tree rule among `nodes`, one sentence each; empty when the tree is sound.

    A link is checked only when both its ends are among `nodes`, and a node's source_ids only
    when all its children are, so a partial view of a tree can be audited too.
    """
    by_id: dict[str, MemoryNode] = {}
    problems: list[str] = []
    for node in nodes:
        if node.id in by_id:
            problems.append(f"{_name(node)} appears more than once")
        by_id[node.id] = node
        if to_utc(node.t_end) < to_utc(node.t_start):
            problems.append(f"{_name(node)} ends before it starts")
    # A link may be declared by the parent (children) or the child (parent_id); check each once.
    links: dict[tuple[str, str], None] = {}
    for node in by_id.values():
        links.update(dict.fromkeys((node.id, child_id) for child_id in node.children))
        if node.parent_id is not None:
            links[(node.parent_id, node.id)] = None
    for parent_id, child_id in links:
        if parent_id in by_id and child_id in by_id:
            problems.extend(_link_problems(by_id[parent_id], by_id[child_id]))
    for node in by_id.values():
        if node.children and all(child_id in by_id for child_id in node.children):
            problems.extend(_source_problems(node, [by_id[c] for c in node.children]))
    return problems


def _link_problems(parent: MemoryNode, child: MemoryNode) -> list[str]:
    problems = []
    if child.id not in parent.children:
        problems.append(f"{_name(child)} names parent {_name(parent)}, which does not list it")
    if child.parent_id != parent.id:
        problems.append(
            f"{_name(parent)} lists child {_name(child)}, whose parent_id is {child.parent_id!r}"
        )
    if parent.level != child.level + 1:
        problems.append(f"{_name(parent)} is not one level above its child {_name(child)}")
    if parent.user_id != child.user_id:
        problems.append(f"{_name(parent)} and its child {_name(child)} belong to different users")
    if not covers(parent.t_start, parent.t_end, child.t_start, child.t_end):
        problems.append(
            f"{_name(parent)} {_span(parent)} does not cover its child {_name(child)} "
            f"{_span(child)}"
        )
    return problems


def _source_problems(node: MemoryNode, children: list[MemoryNode]) -> list[str]:
    expected = {source for child in children for source in child.source_ids}
    actual = set(node.source_ids)
    if actual == expected:
        return []
    return [
        f"{_name(node)} source_ids differ from its children's: "
        f"missing {sorted(expected - actual)}, extra {sorted(actual - expected)}"
    ]


def _name(node: MemoryNode) -> str:
    return f"{node.level.label} node {node.id}"


def _span(node: MemoryNode) -> str:
    return f"[{to_utc(node.t_start).isoformat()}, {to_utc(node.t_end).isoformat()})"
