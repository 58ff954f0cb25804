"""Choosing recall options leaving one conversation out: a value is picked on the other
conversations and scored on the one held out, for each in turn, so the figure reported is
never the one the value was fitted to.

    variants = grid_variants(heat=[0.0, 0.05], aggregate_leaves=[0, 50])
    # run them as extra variants of `memstream eval locomo`, then, from its records.jsonl:
    folds = leave_one_out(outcomes_by_variant, budget=600)

`python -m memstream_lab.eval.held_out RUN_DIR` reads a run directory's records and prints
the folds for the variants whose names start with `grid-`.
"""

from __future__ import annotations

import itertools
import json
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from memstream_lab.eval.metrics import OVERALL, Outcome, by_category
from memstream_lab.eval.records import RECORDS_FILE, Record
from memstream_lab.eval.variants import SHIPPED, Variant

GRID_PREFIX = "grid-"
# variant -> conversation -> its questions' outcomes
Outcomes = Mapping[str, Mapping[str, Sequence[Outcome]]]


@dataclass(frozen=True, slots=True)
class Fold:
    held_out: str
    chosen: str  # the variant best on the other conversations
    scores: dict[str, float]  # its evidence recall on the held-out one, by category
    tokens: float


def grid_variants(**values: Sequence[object]) -> list[Variant]:
    """One variant per combination of the given `RecallOptions` fields' values."""
    names = sorted(values)
    found = []
    for combo in itertools.product(*(values[n] for n in names)):
        label = GRID_PREFIX + "-".join(f"{n}={v}" for n, v in zip(names, combo, strict=True))
        options = replace(SHIPPED, **dict(zip(names, combo, strict=True)))  # type: ignore[arg-type]
        found.append(Variant(label, label, options=options))
    return found


def leave_one_out(outcomes: Outcomes, budget: float | None = None) -> list[Fold]:
    """For each conversation, the variant with the best overall evidence recall (ties: the
    best multi-hop, then the name) on the others, within `budget` tokens a query on them,
    and what it scores on the held-out conversation."""
    conversations = sorted({c for per in outcomes.values() for c in per})
    folds = []
    for held in conversations:
        ranked = []
        for name, per in outcomes.items():
            rest = [o for c in conversations if c != held for o in per.get(c, ())]
            if not rest or (budget is not None and _tokens(rest) > budget):
                continue
            scores = _recall(rest)
            ranked.append((-scores.get(OVERALL, 0.0), -scores.get("multi-hop", 0.0), name))
        if not ranked:
            continue
        chosen = min(ranked)[2]
        mine = outcomes[chosen].get(held, ())
        if mine:
            folds.append(Fold(held, chosen, _recall(mine), _tokens(mine)))
    return folds


def _recall(outcomes: Sequence[Outcome]) -> dict[str, float]:
    return {
        k: s.evidence_recall
        for k, s in by_category(outcomes).items()
        if s.evidence_recall is not None
    }


def _tokens(outcomes: Sequence[Outcome]) -> float:
    return sum(o.tokens for o in outcomes) / len(outcomes)


def read_outcomes(run_dir: Path, prefix: str = "memstream:" + GRID_PREFIX) -> Outcomes:
    """The outcomes of a run directory's records for the methods starting with `prefix`."""
    latest: dict[tuple[str, str, int], Record] = {}
    for line in (run_dir / RECORDS_FILE).read_text().splitlines():
        record = Record.from_dict(json.loads(line))
        if record.method.startswith(prefix):
            latest[record.key] = record
    found: dict[str, dict[str, list[Outcome]]] = defaultdict(lambda: defaultdict(list))
    for record in latest.values():
        found[record.method][record.sample].append(record.outcome())
    return found


def main(run_dir: str, budget: str = "600") -> None:
    for fold in leave_one_out(read_outcomes(Path(run_dir)), float(budget)):
        scores = " ".join(f"{k} {v:.3f}" for k, v in fold.scores.items())
        print(f"{fold.held_out}: {fold.chosen}: {scores}, {fold.tokens:.0f} tokens")


if __name__ == "__main__":
    main(*sys.argv[1:])
