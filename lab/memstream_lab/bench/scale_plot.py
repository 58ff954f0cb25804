"""The scale benchmark's curve: recall latency against the store's size (a light user at one
client and the light users at the offered rate), with the heavy user's point at the end."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def plot_latency(report: dict[str, Any], path: Path) -> None:
    """p50 and p95 of recall against memories in the store (log x)."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display, no GUI toolkit
    import matplotlib.pyplot as plt

    sizes = sorted(report.get("sizes", {}).items(), key=lambda item: int(item[0]))
    if not sizes:
        return
    memories = [fig["memories"] for _, fig in sizes]
    figure, axes = plt.subplots(figsize=(6.4, 4.0))
    series = (
        ("recall_light", "light user, 1 client", "tab:blue"),
        ("recall_offered", "light users, offered rate", "tab:green"),
    )
    for key, label, colour in series:
        for stat, style in (("p50_ms", "-"), ("p95_ms", "--")):
            values = [fig[key][stat] for _, fig in sizes]
            axes.plot(memories, values, style, color=colour, marker="o", label=f"{label} {stat}")
    heavy = report.get("with_heavy")
    if heavy:
        for stat, marker in (("p50_ms", "^"), ("p95_ms", "v")):
            axes.plot(
                [heavy["memories"]],
                [heavy["recall_heavy"][stat]],
                marker,
                color="tab:red",
                label=f"heavy user, 1 client {stat}",
            )
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("memories in the store")
    axes.set_ylabel("recall latency (ms)")
    axes.set_title("memstream bench scale")
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize="small")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
