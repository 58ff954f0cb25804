"""The scale benchmark's curve: recall latency against the store's size, heavy and light user."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def plot_latency(report: dict[str, Any], path: Path) -> None:
    """p50 and p95 of recall, per user kind, against memories in the store (log x)."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display, no GUI toolkit
    import matplotlib.pyplot as plt

    sizes = sorted(report.get("sizes", {}).items(), key=lambda item: int(item[0]))
    if not sizes:
        return
    memories = [fig["memories"] for _, fig in sizes]
    figure, axes = plt.subplots(figsize=(6.4, 4.0))
    for kind, colour in (("heavy", "tab:red"), ("light", "tab:blue")):
        for stat, style in (("p50_ms", "-"), ("p95_ms", "--")):
            values = [fig[f"recall_{kind}"][stat] for _, fig in sizes]
            label = f"{kind} user {stat.removesuffix('_ms')}"
            axes.plot(memories, values, style, color=colour, marker="o", label=label)
    axes.set_xscale("log")
    axes.set_xlabel("memories in the store")
    axes.set_ylabel("recall latency, one client (ms)")
    axes.set_title("memstream bench scale")
    axes.grid(True, alpha=0.3)
    axes.legend()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
