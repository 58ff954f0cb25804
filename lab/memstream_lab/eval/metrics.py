"""Measures of memory quality (DESIGN.md, "Measures of memory quality"): pure functions.

A question's evidence is the set of LoCoMo dia ids that hold its answer. A method "recalls"
an evidence id when the id is among the message ids it returned (for memstream: the union of
the `source_ids` of its recalled L1 memories). Evidence ids naming no message of the
conversation (a handful of LoCoMo typos) can never be recalled by anyone, so they are left
out of the denominator, and a question left with no evidence is left out of the evidence
measures (it still counts for tokens, latency and answer accuracy).
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TypeVar

from memstream_lab.measure import percentile

CATEGORY_NAMES: Mapping[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
}
OVERALL = "overall"


def evidence_recall(evidence: Iterable[str], recalled: Iterable[str]) -> float | None:
    """Share of distinct evidence ids among the recalled ids; None when there is no evidence."""
    wanted = set(evidence)
    if not wanted:
        return None
    return len(wanted & set(recalled)) / len(wanted)


def all_recalled(evidence: Iterable[str], recalled: Iterable[str]) -> bool | None:
    """Whether every evidence id was recalled; None when there is no evidence."""
    wanted = set(evidence)
    if not wanted:
        return None
    return wanted <= set(recalled)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one method did for one question: the unit every summary is built from."""

    category: int
    evidence: tuple[str, ...]
    recalled: tuple[str, ...]
    tokens: int
    latency_ms: float
    correct: bool | None = None  # the judge's verdict, when answers were judged
    coverage: float | None = None  # share of the gold answer's content words recalled


@dataclass(frozen=True, slots=True)
class Summary:
    questions: int
    with_evidence: int
    evidence_recall: float | None
    all_evidence_share: float | None
    answer_coverage: float | None
    tokens_per_query: float
    latency_p50_ms: float
    latency_p95_ms: float
    judged: int
    accuracy: float | None

    def as_dict(self) -> dict[str, float | int | None]:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def summarise(outcomes: Sequence[Outcome]) -> Summary:
    """Means over questions (each question weighs the same), latency percentiles."""
    if not outcomes:
        raise ValueError("no outcomes to summarise")
    recalls = [r for o in outcomes if (r := evidence_recall(o.evidence, o.recalled)) is not None]
    complete = [c for o in outcomes if (c := all_recalled(o.evidence, o.recalled)) is not None]
    coverages = [o.coverage for o in outcomes if o.coverage is not None]
    verdicts = [o.correct for o in outcomes if o.correct is not None]
    latencies = [o.latency_ms for o in outcomes]
    return Summary(
        questions=len(outcomes),
        with_evidence=len(recalls),
        evidence_recall=_mean(recalls),
        all_evidence_share=_mean([float(c) for c in complete]),
        answer_coverage=_mean(coverages),
        tokens_per_query=sum(o.tokens for o in outcomes) / len(outcomes),
        latency_p50_ms=percentile(latencies, 50),
        latency_p95_ms=percentile(latencies, 95),
        judged=len(verdicts),
        accuracy=_mean([float(v) for v in verdicts]),
    )


def by_category(outcomes: Sequence[Outcome]) -> dict[str, Summary]:
    """One summary per category present (keyed by name), plus "overall"."""
    result: dict[str, Summary] = {}
    for category in sorted({o.category for o in outcomes}):
        name = CATEGORY_NAMES.get(category, f"category-{category}")
        result[name] = summarise([o for o in outcomes if o.category == category])
    if outcomes:
        result[OVERALL] = summarise(outcomes)
    return result


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


# Resamples of the paired bootstrap: the 95% interval's ends move by about 0.001 between seeds.
BOOTSTRAP_RESAMPLES = 2000


@dataclass(frozen=True, slots=True)
class PairedDifference:
    """Mean per-question difference of two methods on the same questions, with its 95%
    bootstrap interval (the questions resampled with replacement, a fixed seed)."""

    questions: int
    mean: float
    low: float
    high: float


_Key = TypeVar("_Key", bound=Hashable)


def paired_difference(
    a: Mapping[_Key, float], b: Mapping[_Key, float], resamples: int = BOOTSTRAP_RESAMPLES
) -> PairedDifference | None:
    """a - b over the questions both scored; None when they share none."""
    diffs = [a[k] - b[k] for k in a if k in b]
    if not diffs:
        return None
    rng = random.Random(0)
    n = len(diffs)
    means = sorted(sum(rng.choices(diffs, k=n)) / n for _ in range(resamples))
    low, high = means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1]
    return PairedDifference(n, sum(diffs) / n, low, high)
