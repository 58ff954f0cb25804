"""The run's outputs: results.json, results.md (tables) and recall_vs_tokens.png."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memstream_lab.eval.curve import curve_json, curve_markdown, plot_curve
from memstream_lab.eval.metrics import CATEGORY_NAMES, OVERALL, paired_difference
from memstream_lab.eval.results import MethodResult, best_flat_at, top_k_flats

RESULTS_JSON = "results.json"
RESULTS_MD = "results.md"
PLOT_PNG = "recall_vs_tokens.png"
TOKEN_BUDGET = 600
REFERENCE_METHOD = "flat-hybrid@20"
MULTI_HOP = CATEGORY_NAMES[1]
NO_SUMMARIES = "memstream:no-summaries"


@dataclass
class Report:
    methods: list[MethodResult]
    meta: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def quality_bar(self) -> dict[str, Any]:
        """Per memstream variant: within the token budget, and beating the reference method
        on overall and multi-hop evidence recall."""
        reference = next((m for m in self.methods if m.name == REFERENCE_METHOD), None)
        if reference is None:
            return {"reference": None}
        verdicts: dict[str, dict[str, Any]] = {}
        for m in self.methods:
            if m.kind != "memstream":
                continue
            overall, multi = m.recall(), m.recall(MULTI_HOP)
            ref_overall, ref_multi = reference.recall(), reference.recall(MULTI_HOP)
            passes = (
                m.tokens <= TOKEN_BUDGET
                and _beats(overall, ref_overall)
                and _beats(multi, ref_multi)
            )
            verdicts[m.name] = {
                "tokens_per_query": round(m.tokens, 1),
                "overall": overall,
                "multi_hop": multi,
                "passes": passes,
            }
        return {
            "reference": REFERENCE_METHOD,
            "token_budget": TOKEN_BUDGET,
            "coverage": self.coverage_bar(),
            "reference_overall": reference.recall(),
            "reference_multi_hop": reference.recall(MULTI_HOP),
            "variants": verdicts,
        }

    def coverage_bar(self) -> dict[str, Any]:
        """Per memstream variant: answer coverage against the best flat baseline at the same
        tokens (interpolated along each flat method's top-k curve), overall and multi-hop,
        and against the `no-summaries` variant (what the summaries' tokens buy), with the
        paired per-question difference and its 95% bootstrap interval: both variants recall
        from the same stores, so what one ingest's noise moves, moves both."""
        flats = top_k_flats(self.methods)
        plain = next((m for m in self.methods if m.name == NO_SUMMARIES), None)
        verdicts: dict[str, dict[str, Any]] = {}
        for m in self.methods:
            if m.kind != "memstream":
                continue
            row: dict[str, Any] = {"tokens_per_query": round(m.tokens, 1)}
            for label, category in (("overall", OVERALL), ("multi_hop", MULTI_HOP)):
                flat = best_flat_at(flats, m.tokens, category)
                row[label] = m.coverage(category)
                row[f"best_flat_{label}"] = None if flat is None else round(flat, 4)
            row["beats_flat"] = _beats(row["overall"], row["best_flat_overall"]) and _beats(
                row["multi_hop"], row["best_flat_multi_hop"]
            )
            if plain is not None and m is not plain:
                row["beats_no_summaries"] = (
                    _beats(m.coverage(), plain.coverage()) and m.tokens <= plain.tokens
                )
                paired = paired_difference(m.coverages, plain.coverages)
                if paired is not None:
                    row["versus_no_summaries"] = {
                        "questions": paired.questions,
                        "mean": round(paired.mean, 4),
                        "ci95": [round(paired.low, 4), round(paired.high, 4)],
                    }
            verdicts[m.name] = row
        return verdicts

    def categories(self) -> list[str]:
        """The categories some method has results for, in LoCoMo's order."""
        present = {name for m in self.methods for name in m.summaries}
        return [n for n in CATEGORY_NAMES.values() if n in present]

    def to_json(self) -> dict[str, Any]:
        curve = curve_json(self.methods, self.categories())
        return {
            **self.meta,
            "notes": self.notes,
            "quality_bar": self.quality_bar(),
            **({"token_curve": curve} if curve["budgets"] else {}),
            "methods": [
                {
                    "name": m.name,
                    "kind": m.kind,
                    "description": m.description,
                    "fingerprint": m.fingerprint,
                    "primary": m.primary,
                    "categories": {k: s.as_dict() for k, s in m.summaries.items()},
                }
                for m in self.methods
            ],
        }


def write_report(report: Report, out_dir: Path) -> list[Path]:
    """Write the three outputs; returns their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / RESULTS_JSON, out_dir / RESULTS_MD, out_dir / PLOT_PNG]
    paths[0].write_text(json.dumps(report.to_json(), indent=2) + "\n")
    paths[1].write_text(markdown(report))
    plot(report.methods, paths[2])
    return paths


# --- markdown -------------------------------------------------------------------------------


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _paired(versus: Mapping[str, Any] | None) -> str:
    if versus is None:
        return "-"
    low, high = versus["ci95"]
    return f"{versus['mean']:+.3f} [{low:+.3f}, {high:+.3f}]"


def _beats(value: float | None, reference: float | None) -> bool:
    return value is not None and reference is not None and value > reference


def markdown(report: Report) -> str:
    categories = report.categories()
    answered = any(m.summaries[OVERALL].judged for m in report.methods)
    head = [
        "method",
        "evidence recall",
        "all evidence",
        "tokens/query",
        "p50 ms",
        "p95 ms",
        *(f"{c} recall" for c in categories),
        "answer coverage",
        *(f"{c} cov." for c in categories),
    ]
    if answered:
        head += ["accuracy", *(f"{c} acc." for c in categories)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for m in report.methods:
        overall = m.summaries[OVERALL]
        name = f"**{m.name}**" if m.kind == "memstream" else m.name
        row = [
            name,
            _fmt(overall.evidence_recall),
            _fmt(overall.all_evidence_share),
            f"{overall.tokens_per_query:.0f}",
            f"{overall.latency_p50_ms:.1f}",
            f"{overall.latency_p95_ms:.1f}",
            *(_fmt(m.recall(c)) for c in categories),
            _fmt(overall.answer_coverage),
            *(_fmt(m.coverage(c)) for c in categories),
        ]
        if answered:
            row += [_fmt(overall.accuracy)]
            row += [_fmt(m.summaries[c].accuracy if c in m.summaries else None) for c in categories]
        lines.append("| " + " | ".join(row) + " |")
    counts = report.methods[0].summaries if report.methods else {}
    sizes = ", ".join(f"{k}: {s.questions}" for k, s in counts.items())
    out = ["# LoCoMo evaluation", "", f"Questions: {sizes}.", "", *lines, ""]
    bar = report.quality_bar()
    if bar.get("reference"):
        out += [
            f"Quality bar: at most {TOKEN_BUDGET} tokens/query and above {REFERENCE_METHOD} "
            f"(overall {_fmt(bar['reference_overall'])}, multi-hop "
            f"{_fmt(bar['reference_multi_hop'])}).",
            "",
            "| variant | tokens/query | overall | multi-hop | passes |",
            "|---|---|---|---|---|",
        ]
        for name, v in bar["variants"].items():
            out.append(
                f"| {name} | {v['tokens_per_query']:.0f} | {_fmt(v['overall'])} | "
                f"{_fmt(v['multi_hop'])} | {'yes' if v['passes'] else 'no'} |"
            )
        out.append("")
        out += [
            "Answer coverage against the best flat baseline at the same tokens (interpolated "
            f"along its top-k curve) and against `{NO_SUMMARIES}`:",
            "",
            "| variant | tokens/query | overall | best flat | multi-hop | best flat | "
            "beats flat | beats no-summaries | paired difference [95% CI] |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for name, v in bar["coverage"].items():
            versus = v.get("beats_no_summaries")
            out.append(
                f"| {name} | {v['tokens_per_query']:.0f} | {_fmt(v['overall'])} | "
                f"{_fmt(v['best_flat_overall'])} | {_fmt(v['multi_hop'])} | "
                f"{_fmt(v['best_flat_multi_hop'])} | {'yes' if v['beats_flat'] else 'no'} | "
                f"{'-' if versus is None else 'yes' if versus else 'no'} | "
                f"{_paired(v.get('versus_no_summaries'))} |"
            )
        out.append("")
    out += curve_markdown(report.methods, categories)
    described = [m for m in report.methods if m.description]
    if described:
        out += ["Methods:", ""] + [f"- `{m.name}`: {m.description}" for m in described] + [""]
    if report.notes:
        out += ["Notes:", ""] + [f"- {n}" for n in report.notes] + [""]
    return "\n".join(out)


# --- plot -----------------------------------------------------------------------------------

_FLAT_STYLE = {
    "dense": ("tab:blue", "o"),
    "bm25": ("tab:orange", "s"),
    "hybrid": ("tab:green", "^"),
}


_MARKERS = ("*", "P", "X", "D", "h", "p", "v", "<", ">", "^", "s", "o")


def plot(methods: Sequence[MethodResult], path: Path) -> None:
    """Two panels against recalled tokens per query, one point per method: evidence recall
    (what L1 leaves cite) on top, answer coverage (what any level's text holds) below.

    memstream variants are big coloured markers, each with its own colour and shape, and the
    legend gives each its numbers; an inset zooms on them, since they sit close together.
    The token curve's points, when the run has budgets, are solid lines (`curve.plot_curve`).
    """
    import matplotlib

    matplotlib.use("Agg")  # files only: no display, no GUI toolkit
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(12, 13), dpi=120)
    _panel(top, methods, MethodResult.recall, "evidence recall", plt)
    _panel(bottom, methods, MethodResult.coverage, "answer coverage", plt)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _panel(
    ax: Any,
    methods: Sequence[MethodResult],
    measure: Callable[[MethodResult], float | None],
    name: str,
    plt: Any,
) -> None:
    def value(m: MethodResult) -> float:
        return measure(m) or 0.0

    flat = top_k_flats(methods)
    for kind, (color, marker) in _FLAT_STYLE.items():
        mine = sorted(
            (m for m in flat if m.name.startswith(f"flat-{kind}@")), key=lambda m: m.tokens
        )
        if not mine:
            continue
        ax.plot(
            [m.tokens for m in mine],
            [value(m) for m in mine],
            color=color,
            marker=marker,
            linestyle="--",
            alpha=0.7,
            label=f"flat {kind} (top 10/20/50)",
        )
        for m in mine:
            ax.annotate(
                m.name.split("@")[1],
                (m.tokens, value(m)),
                color=color,
                textcoords="offset points",
                xytext=(5, -11),
                fontsize=8,
            )
    for m in methods:
        if m.kind == "mem0":
            ax.scatter(
                [m.tokens],
                [value(m)],
                marker="D",
                s=70,
                color="tab:purple",
                label=f"{m.name} (raw messages)",
                zorder=3,
            )
    plot_curve(ax, methods, value, _FLAT_STYLE)
    ours = [m for m in methods if m.kind == "memstream" and m.budget is None]
    palette = plt.get_cmap("tab10")
    best = max((value(m) for m in ours), default=0.0)
    # The inset shows the variants near the budget that compete for the best value.
    close = [m for m in ours if m.tokens <= 1.5 * TOKEN_BUDGET and value(m) > 0.9 * best]
    zoom = ax.inset_axes((0.36, 0.04, 0.34, 0.40)) if len(close) > 1 else None
    for n, m in enumerate(ours):
        label = f"memstream {m.name.removeprefix('memstream:')}: "
        label += f"{value(m):.3f} @ {m.tokens:.0f} tok" + (" (primary)" * m.primary)
        size = 320 if m.primary else 140
        point = ([m.tokens], [value(m)])
        style: dict[str, Any] = {
            "marker": _MARKERS[n % len(_MARKERS)],
            "color": palette(n % 10),
            "edgecolors": "black",
            "linewidths": 0.8,
            "zorder": 4,
        }
        ax.scatter(*point, s=size, label=label, **style)
        if zoom is not None and m in close:
            zoom.scatter(*point, s=size * 0.7, **style)
    if zoom is not None:
        _finish_zoom(ax, zoom, close, methods, value)
    ax.axvline(TOKEN_BUDGET, color="grey", linestyle=":", linewidth=1)
    ax.text(
        TOKEN_BUDGET, ax.get_ylim()[1], f" {TOKEN_BUDGET} tokens", color="grey", va="top", size=8
    )
    ax.set_xlabel("recalled tokens per query (mean)")
    ax.set_ylabel(f"{name} (mean over questions)")
    ax.set_title(f"LoCoMo: {name} vs recalled tokens")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)


def _finish_zoom(
    ax: Any,
    zoom: Any,
    close: Sequence[MethodResult],
    methods: Sequence[MethodResult],
    value: Callable[[MethodResult], float],
) -> None:
    xs, ys = [m.tokens for m in close], [value(m) for m in close]
    zoom.set_xlim(min(xs) - 15, max(xs) + 15)
    reference = next((m for m in methods if m.name == REFERENCE_METHOD), None)
    low = min(ys)
    if reference is not None:
        level = value(reference)
        low = min(low, level)
        zoom.axhline(level, color="tab:green", linestyle="--", linewidth=1)
        zoom.annotate(
            f"{REFERENCE_METHOD} ({reference.tokens:.0f} tok)",
            (min(xs) - 12, level),
            color="tab:green",
            fontsize=7,
            va="bottom",
        )
    zoom.set_ylim(low - 0.01, max(ys) + 0.01)
    zoom.grid(True, alpha=0.3)
    zoom.tick_params(labelsize=7)
    zoom.set_title("zoom: variants near the budget", fontsize=8)
    ax.indicate_inset_zoom(zoom, edgecolor="grey")
