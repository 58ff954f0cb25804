"""The run's outputs: results.json, results.md (tables) and recall_vs_tokens.png."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from memstream.eval.metrics import CATEGORY_NAMES, OVERALL, Summary

MethodKind = Literal["memstream", "flat", "mem0"]
RESULTS_JSON = "results.json"
RESULTS_MD = "results.md"
PLOT_PNG = "recall_vs_tokens.png"
TOKEN_BUDGET = 600
REFERENCE_METHOD = "flat-hybrid@20"
MULTI_HOP = CATEGORY_NAMES[1]


@dataclass(frozen=True)
class MethodResult:
    name: str
    kind: MethodKind
    description: str
    summaries: Mapping[str, Summary]
    fingerprint: str = ""
    primary: bool = False

    def recall(self, category: str = OVERALL) -> float | None:
        found = self.summaries.get(category)
        return found.evidence_recall if found else None

    @property
    def tokens(self) -> float:
        return self.summaries[OVERALL].tokens_per_query


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
            "reference_overall": reference.recall(),
            "reference_multi_hop": reference.recall(MULTI_HOP),
            "variants": verdicts,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            **self.meta,
            "notes": self.notes,
            "quality_bar": self.quality_bar(),
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


def _beats(value: float | None, reference: float | None) -> bool:
    return value is not None and reference is not None and value > reference


def markdown(report: Report) -> str:
    present = {name for m in report.methods for name in m.summaries}
    categories = [n for n in CATEGORY_NAMES.values() if n in present]
    answered = any(m.summaries[OVERALL].judged for m in report.methods)
    head = [
        "method",
        "evidence recall",
        "all evidence",
        "tokens/query",
        "p50 ms",
        "p95 ms",
        *(f"{c} recall" for c in categories),
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


def plot(methods: Sequence[MethodResult], path: Path) -> None:
    """Evidence recall against recalled tokens per query, one point per method."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display, no GUI toolkit
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 6.5), dpi=120)
    flat = [m for m in methods if m.kind == "flat"]
    for kind, (color, marker) in _FLAT_STYLE.items():
        points = sorted(
            (m.tokens, m.recall() or 0.0) for m in flat if m.name.startswith(f"flat-{kind}@")
        )
        if points:
            xs, ys = zip(*points, strict=True)
            ax.plot(xs, ys, color=color, marker=marker, linestyle="--", alpha=0.7,
                    label=f"flat {kind} (top 10/20/50)")  # fmt: skip
            for m in flat:
                if m.name.startswith(f"flat-{kind}@"):
                    k = m.name.split("@")[1]
                    ax.annotate(k, (m.tokens, m.recall() or 0.0), textcoords="offset points",
                                xytext=(4, -10), fontsize=7, color=color)  # fmt: skip
    for m in methods:
        if m.kind == "mem0":
            ax.scatter([m.tokens], [m.recall() or 0.0], marker="D", s=60, color="tab:purple",
                       label=f"{m.name} (infer=False)", zorder=3)  # fmt: skip
    ours = [m for m in methods if m.kind == "memstream"]
    palette = plt.get_cmap("tab10" if len(ours) <= 10 else "tab20")
    for n, m in enumerate(ours):
        ax.scatter([m.tokens], [m.recall() or 0.0], marker="*", s=260 if m.primary else 150,
                   color=palette(n % palette.N), edgecolors="black", linewidths=0.8,
                   label=f"memstream {m.name}" + (" (primary)" if m.primary else ""),
                   zorder=4)  # fmt: skip
    ax.axvline(TOKEN_BUDGET, color="grey", linestyle=":", linewidth=1)
    ax.text(TOKEN_BUDGET, ax.get_ylim()[0], f" {TOKEN_BUDGET} tokens", color="grey",
            fontsize=8, va="bottom")  # fmt: skip
    ax.set_xlabel("recalled tokens per query (mean)")
    ax.set_ylabel("evidence recall (mean over questions)")
    ax.set_title("LoCoMo: evidence recall vs recalled tokens")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
