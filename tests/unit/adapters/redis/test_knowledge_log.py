"""The knowledge change log's entries: which L1s changed since a revision, or that the log
cannot tell."""

from __future__ import annotations

import json

from memstream.adapters.redis.knowledge_log import changed_since


def entry(revision: str, *leaves: str, named: bool = True) -> bytes:
    return json.dumps({"revision": revision, "leaves": list(leaves) if named else None}).encode()


LOG = [entry("r1", "a"), entry("r2", "b", "c"), entry("r3", "c", "d")]


def test_the_leaves_changed_after_the_revision_held_up_to_the_current_one() -> None:
    assert changed_since(LOG, b"r1", b"r3") == {"b", "c", "d"}
    assert changed_since(LOG, b"r2", b"r3") == {"c", "d"}
    assert changed_since(LOG, b"r3", b"r3") == set()


def test_a_broken_chain_cannot_tell() -> None:
    assert changed_since(LOG, b"r0", b"r3") is None  # fell out of the log, or before it
    assert changed_since(LOG, b"r1", b"r4") is None  # a revision set without an entry
    assert changed_since([], b"r1", b"r1") is None
    unnamed = [*LOG, entry("r4", named=False)]
    assert changed_since(unnamed, b"r1", b"r4") is None  # too many leaves to name
    assert changed_since(unnamed, b"r4", b"r4") == set()
