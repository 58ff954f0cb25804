"""The knowledge-update run's outputs: results.json and results.md, from per-question records.

Every asked question becomes a `QuestionRecord` (what was asked, the first items returned and
the verdict); a method's shares per kind are `evaluate`'s, and its counts are read from the
records, so the two can be checked against each other.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memstream_lab.knowledge.dataset import SPLITS, ids_in
from memstream_lab.knowledge.score import KINDS, QuestionScore

RESULTS_JSON = "results.json"
RESULTS_MD = "results.md"
ALL = "all"
# Items kept per question in the records, and characters of each item's text.
SHOWN_ITEMS = 5
SHOWN_CHARS = 240


@dataclass(frozen=True)
class QuestionRecord:
    method: str
    conversation: str
    question_id: str
    kind: str
    question: str
    asked_at: str
    returned: int
    first_items: tuple[tuple[str, str], ...]  # (source, text) of the first items, best first
    first_is_expected: bool
    superseded_as_current: bool

    @property
    def passed(self) -> bool:
        return self.first_is_expected and not self.superseded_as_current

    @property
    def verdict(self) -> str:
        if self.passed:
            return "pass"
        reasons = []
        if not self.first_is_expected:
            reasons.append("the value true then is not the first value shown")
        if self.superseded_as_current:
            reasons.append("a superseded value is shown as current")
        return "fail: " + "; ".join(reasons)

    def as_json(self) -> dict[str, Any]:
        shown = [{"source": s, "text": t} for s, t in self.first_items]
        return asdict(self) | {"first_items": shown, "passed": self.passed, "verdict": self.verdict}


def record(
    method: str,
    conversation: str,
    question: Mapping[str, Any],
    asked_at: str,
    items: Sequence[tuple[str, str]],
    score: QuestionScore,
) -> QuestionRecord:
    """One question's record: `items` are every (source, text) returned, best first."""
    first = tuple((source, _clip(text)) for source, text in items[:SHOWN_ITEMS])
    return QuestionRecord(
        method=method,
        conversation=conversation,
        question_id=question["question_id"],
        kind=score.kind,
        question=question["question"],
        asked_at=asked_at,
        returned=len(items),
        first_items=first,
        first_is_expected=score.first_is_expected,
        superseded_as_current=score.superseded_as_current,
    )


def _clip(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SHOWN_CHARS else flat[: SHOWN_CHARS - 3] + "..."


def counts(records: Sequence[QuestionRecord]) -> dict[str, dict[str, int]]:
    """Asked and passed questions per kind and over all, and how many failed each way."""
    out: dict[str, dict[str, int]] = {}
    for r in records:
        for key in (r.kind, ALL):
            entry = out.setdefault(
                key, {"questions": 0, "passed": 0, "not_first": 0, "stale_as_current": 0}
            )
            entry["questions"] += 1
            entry["passed"] += r.passed
            entry["not_first"] += not r.first_is_expected
            entry["stale_as_current"] += r.superseded_as_current
    return out


def by_split(records: Sequence[QuestionRecord]) -> dict[str, dict[str, dict[str, int]]]:
    """`counts` for each split of the set (`dataset.SPLITS`) the records hold questions of."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    for split in SPLITS:
        members = set(ids_in(split))
        mine = [r for r in records if r.conversation in members]
        if mine:
            out[split] = counts(mine)
    return out


@dataclass(frozen=True)
class MethodOutcome:
    name: str
    kind: str
    description: str
    shares: Mapping[str, float] = field(default_factory=dict)  # evaluate's, by kind and "all"
    records: Sequence[QuestionRecord] = ()
    missing: str | None = None  # why the method did not run

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "description": self.description,
            "available": self.missing is None,
            "reason_not_run": self.missing,
            "shares": dict(self.shares),
            "counts": counts(self.records),
            "counts_by_split": by_split(self.records),
        }


@dataclass(frozen=True)
class KnowledgeReport:
    methods: Sequence[MethodOutcome]
    meta: Mapping[str, Any]
    notes: Sequence[str] = ()

    def as_json(self) -> dict[str, Any]:
        return {
            **self.meta,
            "methods": [m.as_json() for m in self.methods],
            "notes": list(self.notes),
            "questions": [r.as_json() for m in self.methods for r in m.records],
        }


def _cell(outcome: MethodOutcome, kind: str) -> str:
    found = counts(outcome.records).get(kind)
    if found is None:
        return "-"
    return f"{outcome.shares[kind]:.2f} ({found['passed']}/{found['questions']})"


def _state(outcome: MethodOutcome) -> str:
    if outcome.missing is not None:
        return outcome.missing[0].upper() + outcome.missing[1:] + "."
    tally = counts(outcome.records).get(ALL)
    if tally is None:
        return "No questions asked."
    return (
        f"Of {tally['questions']} questions, {tally['not_first']} had another value (or none) "
        f"first and {tally['stale_as_current']} showed a superseded value as current."
    )


def markdown(report: KnowledgeReport, *, questions: bool = True) -> str:
    """The shares table, the methods not run and why, the notes, then (with `questions`) every
    question of the first method that ran with its verdict and first item."""
    columns = (*KINDS, ALL)
    lines = [
        "# Knowledge updates",
        "",
        "Share of questions where the value true at the asked time comes first and no "
        "superseded value is presented as current (passed/asked).",
        "",
        "| method | " + " | ".join(columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    ran = [m for m in report.methods if m.missing is None]
    for m in ran:
        lines.append(f"| {m.name} | " + " | ".join(_cell(m, k) for k in columns) + " |")
    lines.append("")
    lines += _split_table(ran, columns)
    for m in report.methods:
        lines.append(f"- **{m.name}** ({m.kind}): {m.description}. {_state(m)}")
    if report.notes:
        lines += ["", "## Notes", "", *(f"- {n}" for n in report.notes)]
    if ran and questions:
        first = ran[0]
        lines += [
            "",
            f"## Questions ({first.name})",
            "",
            "| question | kind | verdict | first item |",
            "|---|---|---|---|",
        ]
        for r in first.records:
            item = f"{r.first_items[0][0]}: {r.first_items[0][1]}" if r.first_items else "-"
            cells = (f"{r.question_id} {r.question}", r.kind, r.verdict, item)
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def _split_table(ran: Sequence[MethodOutcome], columns: Sequence[str]) -> list[str]:
    """By split, when the run asked questions of more than one: a score on the splits
    written blind to the rules is what a new conversation would get, the spread is the
    point."""
    splits = {m.name: by_split(m.records) for m in ran}
    asked = {split for tallies in splits.values() for split in tallies}
    if len(asked) < 2:
        return []
    lines = [
        "By split (passed/asked):",
        "",
        "| split | method | " + " | ".join(columns) + " |",
        "|---|---|" + "---|" * len(columns),
    ]
    for split, how in SPLITS.items():
        for m in ran:
            tally = splits[m.name].get(split)
            if tally is None:
                continue
            cells = [
                f"{tally[k]['passed']}/{tally[k]['questions']}" if k in tally else "-"
                for k in columns
            ]
            lines.append(f"| {split} ({how}) | {m.name} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def write_report(report: KnowledgeReport, out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    payload = json.dumps(report.as_json(), indent=2, ensure_ascii=False)
    (out_dir / RESULTS_JSON).write_text(payload + "\n", encoding="utf-8")
    (out_dir / RESULTS_MD).write_text(markdown(report), encoding="utf-8")
