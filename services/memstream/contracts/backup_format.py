"""The export file (`memstream export`, `memstream import`): one user's memory as JSON Lines.

One JSON object a line, each with a `type`, in this order: one `header` (the format's name
and version, the user, when and by which memstream it was written, what it will hold), one
`state` (the window reducer's state and when the user is due), any `expiry` lines (messages
with a deadline), the `node` lines (L1 to L5; an L1 with the facts and entity surfaces its
messages state), and one `end` (what was written, counted). A file without its `end`, or
whose counts disagree with it, was cut short. docs/export.md describes every field.

`VERSION` changes when a reader of the previous version would misread a file: a field
removed, renamed or given another meaning. A new optional field keeps the version (readers
ignore fields they do not know). A reader refuses a version it does not know.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memstream.contracts.codec import decode_node, encode_node, parse_ts
from memstream.contracts.knowledge_codec import (
    decode_fact,
    decode_leaf_entities,
    encode_fact,
    encode_leaf_entities,
)
from memstream.domain.knowledge import LeafKnowledge
from memstream.domain.models import StoredNode

FORMAT = "memstream.export"
VERSION = 1
READABLE_VERSIONS = frozenset({1})


class BackupFormatError(ValueError):
    """A file this reader cannot take, and the line (1-based) where that showed."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(f"line {line}: {reason}")
        self.line = line
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Header:
    user_id: str
    exported_at: datetime
    memstream_version: str
    counts: Mapping[str, int]  # what the file will hold, as the store counted it first
    version: int = VERSION


@dataclass(frozen=True, slots=True)
class UserState:
    """The window reducer's state as the codec encodes it (None: none was stored), and when
    the clock must next look at the user."""

    state: Mapping[str, Any] | None
    due: datetime | None


@dataclass(frozen=True, slots=True)
class Expiry:
    """A message that must be forgotten at `at` (its producer gave it a deadline)."""

    event_id: str
    at: datetime


@dataclass(frozen=True, slots=True)
class NodeRecord:
    """A node with the fingerprint its window was consolidated from, and for an L1 what its
    messages state (None: nothing stored, e.g. the knowledge write off)."""

    stored: StoredNode
    knowledge: LeafKnowledge | None = None


@dataclass(frozen=True, slots=True)
class End:
    counts: Mapping[str, int]


Record = Header | UserState | Expiry | NodeRecord | End


@dataclass
class Tally:
    """What a writer or reader has gone through: the `end` line's counts."""

    counts: Counter[str] = field(default_factory=Counter)

    def add(self, record: Record) -> None:
        if isinstance(record, Expiry):
            self.counts["expiries"] += 1
        elif isinstance(record, NodeRecord):
            self.counts[f"L{int(record.stored.node.level)}"] += 1
            if record.knowledge is not None:
                self.counts["facts"] += len(record.knowledge.facts)
                self.counts["entity_leaves"] += bool(record.knowledge.entities.surfaces)

    def as_dict(self) -> dict[str, int]:
        names = ("L1", "L2", "L3", "L4", "L5", "expiries", "facts", "entity_leaves")
        return {name: self.counts[name] for name in names}


def encode_record(record: Record) -> str:
    """One line of the file, newline included."""
    return json.dumps(_document(record), ensure_ascii=False) + "\n"


def _document(record: Record) -> dict[str, Any]:
    if isinstance(record, Header):
        return {
            "type": "header",
            "format": FORMAT,
            "version": record.version,
            "user_id": record.user_id,
            "exported_at": record.exported_at.isoformat(),
            "memstream_version": record.memstream_version,
            "counts": dict(record.counts),
        }
    if isinstance(record, UserState):
        due = record.due.isoformat() if record.due else None
        return {"type": "state", "state": record.state, "due": due}
    if isinstance(record, Expiry):
        return {"type": "expiry", "event_id": record.event_id, "at": record.at.isoformat()}
    if isinstance(record, NodeRecord):
        doc: dict[str, Any] = {
            "type": "node",
            "node": encode_node(record.stored.node),
            "fingerprint": record.stored.fingerprint,
        }
        if record.knowledge is not None:
            doc["facts"] = [encode_fact(f) for f in record.knowledge.facts]
            doc["entities"] = encode_leaf_entities(record.knowledge.entities)
        return doc
    return {"type": "end", "counts": dict(record.counts)}


def read_records(lines: Iterable[str]) -> Iterator[Record]:
    """The records of a file, checked as they come: a header of a known version first, one
    state, expiries, nodes of the header's user, an end whose counts match what came before,
    and nothing after it. Raises `BackupFormatError` naming the line at the first fault."""
    tally = Tally()
    expected: tuple[str, ...] = ("header",)
    user_id = ""
    number = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            raise BackupFormatError(number, "an empty line (each line is one JSON object)")
        doc = _parse(number, line)
        kind = doc.get("type")
        if kind not in expected:
            raise BackupFormatError(number, f"a {kind!r} line where {_either(expected)} belongs")
        record = _decode(number, kind, doc)
        if isinstance(record, Header):
            user_id = record.user_id
            expected = ("state",)
        elif isinstance(record, UserState | Expiry):
            expected = ("expiry", "node", "end")
        elif isinstance(record, NodeRecord):
            if record.stored.node.user_id != user_id:
                raise BackupFormatError(number, f"a node of another user than {user_id!r}")
            expected = ("node", "end")
        else:
            if dict(record.counts) != tally.as_dict():
                raise BackupFormatError(
                    number, f"the end counts {dict(record.counts)}, the file held {tally.as_dict()}"
                )
            expected = ()
        tally.add(record)
        yield record
    if expected:
        raise BackupFormatError(
            number + 1, f"the file ends where {_either(expected)} belongs: it was cut short"
        )


def _parse(number: int, line: str) -> dict[str, Any]:
    try:
        doc = json.loads(line)
    except json.JSONDecodeError as exc:
        raise BackupFormatError(number, f"not JSON ({exc.msg} at column {exc.colno})") from exc
    if not isinstance(doc, dict):
        raise BackupFormatError(number, "not a JSON object")
    return doc


def _decode(number: int, kind: str, doc: dict[str, Any]) -> Record:
    try:
        if kind == "header":
            return _header(number, doc)
        if kind == "state":
            state = doc["state"]
            if state is not None and not isinstance(state, dict):
                raise ValueError("the state is neither an object nor null")
            due = parse_ts(doc["due"]) if doc.get("due") else None
            return UserState(state, due)
        if kind == "expiry":
            return Expiry(str(doc["event_id"]), parse_ts(doc["at"]))
        if kind == "node":
            node = decode_node(doc["node"])
            knowledge = None
            if "facts" in doc or "entities" in doc:
                knowledge = LeafKnowledge(
                    tuple(decode_fact(f) for f in doc.get("facts", ())),
                    decode_leaf_entities(doc.get("entities") or {}),
                )
            return NodeRecord(StoredNode(node, str(doc.get("fingerprint", ""))), knowledge)
        return End({str(k): int(v) for k, v in doc["counts"].items()})
    except BackupFormatError:
        raise
    except KeyError as exc:
        raise BackupFormatError(number, f"a {kind} line without its field {exc}") from exc
    except (TypeError, ValueError, AttributeError) as exc:
        raise BackupFormatError(number, f"a {kind} line that does not decode: {exc}") from exc


def _header(number: int, doc: dict[str, Any]) -> Header:
    if doc.get("format") != FORMAT:
        raise BackupFormatError(number, f"not a {FORMAT} file (format {doc.get('format')!r})")
    version = doc.get("version")
    if version not in READABLE_VERSIONS:
        raise BackupFormatError(
            number,
            f"format version {version!r}: this memstream reads version(s) "
            f"{', '.join(map(str, sorted(READABLE_VERSIONS)))}; import it with the memstream "
            "that wrote it, or a newer one",
        )
    return Header(
        user_id=str(doc["user_id"]),
        exported_at=parse_ts(doc["exported_at"]),
        memstream_version=str(doc["memstream_version"]),
        counts={str(k): int(v) for k, v in doc["counts"].items()},
        version=int(version),
    )


def _either(kinds: tuple[str, ...]) -> str:
    return " or ".join(f"a {k!r} line" for k in kinds) if kinds else "nothing"
