"""Pictures of a memory tree for people: rich renderables, no I/O."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from memstream.domain.models import Level, MemoryNode

LEVEL_STYLES = {
    Level.SEGMENT: "white",
    Level.SESSION: "cyan",
    Level.DAY: "green",
    Level.WEEK: "yellow",
    Level.MONTH: "magenta",
}


def _heading(level: Level) -> str:
    return f"{level.label} {level.noun}s"  # "L1 segments"


def interval(node: MemoryNode) -> str:
    start, end = node.t_start, node.t_end
    if start.date() == end.date():
        return f"{start:%Y-%m-%d %H:%M}-{end:%H:%M}"
    return f"{start:%Y-%m-%d} .. {end:%Y-%m-%d}"


def clip(text: str, limit: int = 220) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def user_tree(
    user_id: str,
    counts: Mapping[Level, int],
    profile: MemoryNode | None,
    sessions: Sequence[MemoryNode],
) -> Panel:
    """A user's tree at a glance: nodes per level, the latest profile, a few sessions."""
    table = Table(show_header=True, header_style="bold", box=None)
    for level in Level:
        table.add_column(_heading(level), justify="right")
    table.add_row(*(str(counts.get(level, 0)) for level in Level))
    parts: list[object] = [table]
    if profile is not None:
        parts.append(
            Text(f"\nProfile ({interval(profile)}, v{profile.version})", style="bold magenta")
        )
        parts.append(Text(clip(profile.text, 2000)))  # a profile is a page of facts
    if sessions:
        tree = Tree(Text("Recent sessions", style="bold cyan"))
        for node in sessions:
            tree.add(Text(f"{interval(node)}  ", style="cyan") + Text(clip(node.text, 700)))
        parts.append(Text(""))
        parts.append(tree)
    return Panel(Group(*parts), title=f"[bold]{user_id}", expand=True)  # type: ignore[arg-type]


def memory_lines(nodes: Sequence[MemoryNode]) -> Tree:
    """Recalled memories grouped by level, each with its dates."""
    root = Tree(Text("recalled context", style="bold"))
    branches: dict[Level, Tree] = {}
    for node in nodes:
        branch = branches.get(node.level)
        if branch is None:
            label = Text(_heading(node.level), style=LEVEL_STYLES[node.level])
            branch = branches[node.level] = root.add(label)
        branch.add(Text(f"[{interval(node)}] ", style="dim") + Text(clip(node.text, 400)))
    return root
