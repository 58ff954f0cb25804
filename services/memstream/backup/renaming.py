"""Giving an exported tree to another user id (`memstream import --user NEW_ID`).

Node ids are derived from the user id (`domain.ids`), so they change with it. Each node's
new id is what the pipeline would give it under the new id: the rule that names it (its
messages for an L1, its window for L2-L5) is applied to the new user, once the same rule is
seen to give the node's exported id under the old one. A node the rule does not give back
(an L1 written again after one of its messages was forgotten, a window grown before its
start) gets a name derived from the new user and its old id instead: the tree holds
together, but a late message for that window would start a node beside it. Fact ids are
derived again likewise; the window state's open windows take their nodes' new ids.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from memstream.contracts.codec import parse_ts
from memstream.domain.facts import AtomicFact, fact_id
from memstream.domain.ids import NAMESPACE, segment_id, window_node_id
from memstream.domain.knowledge import LeafKnowledge
from memstream.domain.models import Level, MemoryNode


def rule_id(node: MemoryNode, user_id: str) -> str:
    """The id the pipeline gives `node` for `user_id` (ValueError: no rule applies)."""
    if node.level == Level.SEGMENT:
        return segment_id(user_id, node.source_ids)
    session = node.session_id if node.level == Level.SESSION else None
    return window_node_id(user_id, node.level, node.t_start, session)


@dataclass
class Renaming:
    """Old node id -> new, for one user's tree given to `new_user`."""

    old_user: str
    new_user: str
    ids: dict[str, str] = field(default_factory=dict)
    not_reproduced: int = 0

    def learn(self, node: MemoryNode) -> None:
        try:
            reproduced = rule_id(node, self.old_user) == node.id
        except ValueError:
            reproduced = False
        if reproduced:
            self.ids[node.id] = rule_id(node, self.new_user)
        else:
            self.not_reproduced += 1

    def id(self, old: str) -> str:
        if old in self.ids:
            return self.ids[old]
        return str(uuid.uuid5(NAMESPACE, json.dumps(["imported", self.new_user, old])))

    def node(self, node: MemoryNode) -> MemoryNode:
        return replace(
            node,
            id=self.id(node.id),
            user_id=self.new_user,
            parent_id=self.id(node.parent_id) if node.parent_id else None,
            children=tuple(self.id(c) for c in node.children),
        )

    def knowledge(self, said: LeafKnowledge) -> LeafKnowledge:
        return replace(said, facts=tuple(self.fact(f) for f in said.facts))

    def fact(self, fact: AtomicFact) -> AtomicFact:
        new_id = fact_id(
            self.new_user,
            fact.subject,
            fact.attribute,
            fact.value,
            fact.negated,
            fact.source_ids,
        )
        return replace(fact, fact_id=new_id, user_id=self.new_user)

    def state(self, state: Mapping[str, Any]) -> dict[str, Any]:
        """The window state (as the codec encodes it) of the new user."""
        doc = json.loads(json.dumps(state))  # a deep copy
        doc["user_id"] = self.new_user
        for turn in doc.get("pending", ()):
            turn["user_id"] = self.new_user
        for window in doc.get("open_windows", {}).values():
            window["node_id"] = self._open_window_id(window)
        return doc

    def _open_window_id(self, window: dict[str, Any]) -> str:
        """An open window may have no node yet: its id comes from the window itself."""
        level, start = Level(int(window["level"])), parse_ts(window["start"])
        session = window.get("session_id")
        try:
            if window_node_id(self.old_user, level, start, session) == window["node_id"]:
                return window_node_id(self.new_user, level, start, session)
        except ValueError:
            pass
        return self.id(str(window["node_id"]))


def renaming(nodes: Iterable[MemoryNode], old_user: str, new_user: str) -> Renaming:
    names = Renaming(old_user, new_user)
    for node in nodes:
        names.learn(node)
    return names
