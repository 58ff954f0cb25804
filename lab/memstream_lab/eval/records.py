"""Per-question results, one JSON line each, appended as they are produced: the resume log.

A record is keyed by (method, conversation, question index). A method carries a fingerprint
of its configuration; on resume, a record whose fingerprint no longer matches the method's
is ignored (and redone), so editing a variant never mixes old and new numbers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from memstream_lab.eval.metrics import Outcome

RECORDS_FILE = "records.jsonl"


@dataclass(frozen=True, slots=True)
class Record:
    method: str
    fingerprint: str
    sample: str
    index: int
    category: int
    evidence: tuple[str, ...]
    recalled: tuple[str, ...]
    tokens: int
    latency_ms: float
    memories: int = 0
    levels: dict[str, int] = field(default_factory=dict)
    answer: str | None = None
    correct: bool | None = None
    coverage: float | None = None  # answer coverage of the recalled text (eval/coverage.py)

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.method, self.sample, self.index)

    def outcome(self) -> Outcome:
        return Outcome(
            self.category,
            self.evidence,
            self.recalled,
            self.tokens,
            self.latency_ms,
            self.correct,
            self.coverage,
        )

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Record:
        return cls(
            **{
                **raw,
                "evidence": tuple(raw["evidence"]),
                "recalled": tuple(raw["recalled"]),
            }
        )


class RecordLog:
    """The records of one run directory: loaded once, then appended and flushed per record."""

    def __init__(self, out_dir: Path, *, resume: bool) -> None:
        self.path = out_dir / RECORDS_FILE
        self._records: dict[tuple[str, str, int], Record] = {}
        if resume and self.path.exists():
            for record in _read(self.path):
                self._records[record.key] = record  # a later line supersedes an earlier one
        self._sink: IO[str] | None = None
        self._mode = "a" if resume else "w"

    def __enter__(self) -> RecordLog:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._sink = self.path.open(self._mode, encoding="utf-8")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._sink is not None:
            self._sink.close()
            self._sink = None

    def done(
        self, method: str, fingerprint: str, sample: str, index: int, *, need_answer: bool = False
    ) -> bool:
        """Whether this question has a record of this configuration (judged, if required)."""
        found = self._records.get((method, sample, index))
        if found is None or found.fingerprint != fingerprint:
            return False
        return found.correct is not None or not need_answer

    def add(self, record: Record) -> None:
        if self._sink is None:
            raise RuntimeError("RecordLog is not open")
        self._records[record.key] = record
        self._sink.write(record.to_json() + "\n")
        self._sink.flush()  # a killed run loses at most the record being written

    def records(self, method: str, fingerprint: str) -> list[Record]:
        return [
            r for r in self._records.values() if r.method == method and r.fingerprint == fingerprint
        ]


def _read(path: Path) -> Iterator[Record]:
    with path.open(encoding="utf-8") as source:
        for line in source:
            line = line.strip()
            if not line:
                continue
            try:
                yield Record.from_dict(json.loads(line))
            except (json.JSONDecodeError, TypeError, KeyError):
                continue  # a line cut short by a kill: that question is simply redone
