"""A test oracle for the Temporal Memory Tree: every broken tree rule among some nodes.

Unit tests audit trees built in memory, integration tests the trees the write path stored.
Production code has no use for it: the consolidator builds sound trees by construction
(`domain.tree.grow`), so the audit lives with the tests.
"""

from __future__ import annotations

from collections.abc import Iterable

from memstream.domain.calendar import to_utc
from memstream.domain.models import MemoryNode
from memstream.domain.tree import covers


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
