"""The token curve: memstream's default and each flat baseline at the same token ceilings.

Asked for with budgets (`memstream eval locomo --budgets 600,1500,4000`), each budget B adds
these points, each measured, none interpolated:

- memstream: the default variant with `max_tokens` B. B is a ceiling: up to the default
  ceiling, a question after one fact spends `focused_share` of it and one that gathers facts
  all of it, so the tokens a query takes sit well below B on average (T); above it, every
  question spends B (`RecallOptions.at_ceiling`);
- each flat baseline at the same ceiling: its best messages, dated, until the next would pass
  B (`FlatMethod.max_tokens`), so its tokens sit just below B;
- each flat baseline at the same tokens (`matched`): its best messages within T, memstream's
  mean at B (`FlatMethod.matching`).

memstream is compared with the best flat baseline both ways: at the same ceiling (what a
caller sets) and at the same tokens (what the reader pays for).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memstream_lab.eval.metrics import OVERALL
from memstream_lab.eval.results import MethodResult

CURVE_BUDGETS = (600, 1500, 4000)
Measure = Callable[[MethodResult, str], float | None]
MEASURES: Mapping[str, Measure] = {
    "evidence recall": MethodResult.recall,
    "answer coverage": MethodResult.coverage,
}


def parse_budgets(text: str) -> tuple[int, ...]:
    """`"600,1500,4000"` -> (600, 1500, 4000): positive whole numbers, distinct, ascending."""
    budgets: set[int] = set()
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        if not part.isdigit() or int(part) <= 0:
            raise ValueError(f"a token budget is a positive whole number, not {part!r}")
        budgets.add(int(part))
    if not budgets:
        raise ValueError("no token budget given")
    return tuple(sorted(budgets))


def curve_points(methods: Sequence[MethodResult]) -> dict[int, list[MethodResult]]:
    """The curve's methods by budget, ascending; memstream first, then the flat baselines."""
    points: dict[int, list[MethodResult]] = {}
    for m in methods:
        if m.budget is not None:
            points.setdefault(m.budget, []).append(m)
    order = {"memstream": 0, "flat": 1, "mem0": 2}
    return {
        b: sorted(points[b], key=lambda m: (order[m.kind], m.matched, m.name))
        for b in sorted(points)
    }


@dataclass(frozen=True, slots=True)
class Lead:
    """One cell of the comparison: memstream at a budget against the best flat baseline."""

    budget: int
    measure: str
    category: str
    memstream: float | None
    best_flat: float | None
    best_flat_method: str | None

    @property
    def ahead(self) -> bool | None:
        if self.memstream is None or self.best_flat is None:
            return None
        return self.memstream > self.best_flat


def leads(
    methods: Sequence[MethodResult], categories: Sequence[str], *, same_tokens: bool = False
) -> list[Lead]:
    """memstream against the best flat baseline at the same ceiling (or, `same_tokens`, filled
    to memstream's tokens), per budget, measure and category (overall first)."""
    out: list[Lead] = []
    for budget, points in curve_points(methods).items():
        ours = next((m for m in points if m.kind == "memstream"), None)
        flats = [m for m in points if m.kind == "flat" and m.matched == same_tokens]
        if not flats:
            continue
        for measure, read in MEASURES.items():
            for category in (OVERALL, *categories):
                scored = [(v, m.name) for m in flats if (v := read(m, category)) is not None]
                best = max(scored, default=None)
                out.append(
                    Lead(
                        budget,
                        measure,
                        category,
                        None if ours is None else read(ours, category),
                        None if best is None else best[0],
                        None if best is None else best[1],
                    )
                )
    return out


def curve_json(methods: Sequence[MethodResult], categories: Sequence[str]) -> dict[str, Any]:
    """The curve for results.json: every point, and memstream against the best flat."""
    points = curve_points(methods)

    def by_category(m: MethodResult, read: Measure) -> dict[str, float | None]:
        return {c: _round(read(m, c)) for c in (OVERALL, *categories)}

    return {
        "budgets": list(points),
        "points": [
            {
                "budget": budget,
                "method": m.name,
                "kind": m.kind,
                "same_tokens_as_memstream": m.matched,
                "tokens_per_query": round(m.tokens, 1),
                "evidence_recall": by_category(m, MethodResult.recall),
                "answer_coverage": by_category(m, MethodResult.coverage),
            }
            for budget, found in points.items()
            for m in found
        ],
        "versus_best_flat": [_lead_json(lead) for lead in leads(methods, categories)],
        "versus_best_flat_same_tokens": [
            _lead_json(lead) for lead in leads(methods, categories, same_tokens=True)
        ],
    }


def _lead_json(lead: Lead) -> dict[str, Any]:
    return {
        "budget": lead.budget,
        "measure": lead.measure,
        "category": lead.category,
        "memstream": _round(lead.memstream),
        "best_flat": _round(lead.best_flat),
        "best_flat_method": lead.best_flat_method,
        "ahead": lead.ahead,
    }


def curve_markdown(methods: Sequence[MethodResult], categories: Sequence[str]) -> list[str]:
    """The curve's two tables for results.md; nothing when the run had no budgets."""
    points = curve_points(methods)
    if not points:
        return []
    head = [
        "budget",
        "method",
        "tokens/query",
        "evidence recall",
        *(f"{c} recall" for c in categories),
        "answer coverage",
        *(f"{c} cov." for c in categories),
    ]
    out = [
        "Token curve: memstream's default with max_tokens at each budget; each flat baseline "
        "returns its best messages, dated, within the budget, and again within the tokens "
        "memstream spent there (measured, not interpolated). tokens/query is what each "
        "spent on average.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for budget, found in points.items():
        for m in found:
            name = f"**{m.name}**" if m.kind == "memstream" else m.name
            row = [
                str(budget),
                name,
                f"{m.tokens:.0f}",
                *(_fmt(m.recall(c)) for c in (OVERALL, *categories)),
                *(_fmt(m.coverage(c)) for c in (OVERALL, *categories)),
            ]
            out.append("| " + " | ".join(row) + " |")
    for same_tokens, title in (
        (False, "memstream / the best flat baseline at the same ceiling (which one):"),
        (True, "memstream / the best flat baseline at the same tokens (which one):"),
    ):
        compared = leads(methods, categories, same_tokens=same_tokens)
        if not compared:
            continue
        out += [
            "",
            title,
            "",
            "| budget | measure | " + " | ".join((OVERALL, *categories)) + " |",
            "|" + "---|" * (3 + len(categories)),
        ]
        cells: dict[tuple[int, str], list[str]] = {}
        for lead in compared:
            cells.setdefault((lead.budget, lead.measure), []).append(_lead_cell(lead))
        for (budget, measure), row in cells.items():
            out.append(f"| {budget} | {measure} | " + " | ".join(row) + " |")
    return [*out, ""]


def _lead_cell(lead: Lead) -> str:
    named = lead.best_flat_method or ""
    flat = named.removeprefix("flat-").split("@")[0]
    ours = _fmt(lead.memstream)
    ours = f"**{ours}**" if lead.ahead else ours
    return f"{ours} / {_fmt(lead.best_flat)}" + (f" ({flat})" if flat else "")


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def plot_curve(
    ax: Any,
    methods: Sequence[MethodResult],
    value: Callable[[MethodResult], float],
    flat_styles: Mapping[str, tuple[str, str]],
) -> None:
    """The curve's points on a panel against tokens: one solid line per flat kind (its
    top-k points' colour and marker; the points at memstream's tokens on it too) and a black
    one for memstream, each point labelled with its budget."""
    lines: dict[str, list[MethodResult]] = {}
    for found in curve_points(methods).values():
        for m in found:
            key = "memstream" if m.kind == "memstream" else m.name.split("@")[0]
            lines.setdefault(key, []).append(m)
    for key, line in lines.items():
        line.sort(key=lambda m: m.tokens)
        kind = key.removeprefix("flat-")
        color, marker = ("black", "*") if key == "memstream" else flat_styles[kind]
        budgets = "/".join(str(m.budget) for m in line)
        label = (
            f"memstream default, max_tokens {budgets}"
            if key == "memstream"
            else f"flat {kind} filled to each budget and to memstream's tokens (dated)"
        )
        ax.plot(
            [m.tokens for m in line],
            [value(m) for m in line],
            color=color,
            marker=marker,
            markersize=12 if key == "memstream" else 7,
            linestyle="-",
            label=label,
            zorder=3,
        )
        # The points at memstream's tokens sit under memstream's own label.
        for m in (m for m in line if not m.matched):
            ax.annotate(
                f"{m.budget}",
                (m.tokens, value(m)),
                color=color,
                textcoords="offset points",
                xytext=(5, 6),
                fontsize=8,
            )
