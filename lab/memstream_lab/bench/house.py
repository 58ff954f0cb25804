"""The shape of the code, measured from its imports: `memstream bench house --out F`.

What a renovation reports (issue #32): lines in the production package against the lab, the
longest chain of imports inside the package, the imports that run back up the layers of
`.importlinter` (target: none), and the largest modules. The graph is grimp's, the one
import-linter checks, so these figures are the ones the layer contracts see.
"""

from __future__ import annotations

import argparse
import configparser
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import grimp

from memstream_lab.locomo import find_repo_root
from memstream_lab.measure import write_report

PACKAGE = "memstream"


@dataclass(frozen=True)
class ModuleSize:
    module: str
    lines: int


def count_lines(root: Path) -> int:
    """Lines of Python under `root`, blank and comment lines included: what a reader reads."""
    return sum(_lines(p) for p in root.rglob("*.py"))


def module_sizes(root: Path, package: str) -> list[ModuleSize]:
    """Every module under `root` (the package's directory), largest first."""
    sizes = []
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        sizes.append(ModuleSize(".".join((package, *parts)), _lines(path)))
    return sorted(sizes, key=lambda s: (-s.lines, s.module))


def layer_order(config: Path) -> list[set[str]]:
    """The `layers` contract of `.importlinter`, highest first; each layer a set of parts."""
    parser = configparser.ConfigParser(inline_comment_prefixes=(";",))
    parser.read(config)
    raw = parser["importlinter:contract:layers"]["layers"]
    return [{p.strip() for p in line.split("|")} for line in raw.splitlines() if line.strip()]


def arrows_up(graph: grimp.ImportGraph, layers: Sequence[set[str]]) -> list[tuple[str, str]]:
    """Direct imports from a lower layer to a higher one, whatever the contracts ignore."""
    rank = {part: i for i, layer in enumerate(layers) for part in layer}
    found = []
    for importer in sorted(_own(graph.modules)):
        for imported in sorted(_own(graph.find_modules_directly_imported_by(importer))):
            low, high = rank.get(_part(importer)), rank.get(_part(imported))
            if low is not None and high is not None and high < low:
                found.append((importer, imported))
    return found


def longest_chain(graph: grimp.ImportGraph) -> list[list[str]]:
    """The longest path of imports through the package, each step one strongly connected group.

    How far a change can travel: a module imports the next, which imports the next. An import
    cycle counts as one step (its modules listed together), so the path is one of a DAG.
    """
    nodes = sorted(_own(graph.modules))
    edges = {m: sorted(_own(graph.find_modules_directly_imported_by(m))) for m in nodes}
    groups = _strongly_connected(nodes, edges)
    group_of = {m: i for i, members in enumerate(groups) for m in members}
    out: dict[int, set[int]] = {i: set() for i in range(len(groups))}
    for m, targets in edges.items():
        out[group_of[m]].update(group_of[t] for t in targets if group_of[t] != group_of[m])
    best: dict[int, list[int]] = {}
    # Tarjan's algorithm emits groups in reverse topological order: every group a group
    # imports is already settled when it is reached.
    for i in range(len(groups)):
        tails = [best[j] for j in out[i]]
        best[i] = [i, *max(tails, key=len, default=[])]
    path = max(best.values(), key=len, default=[])
    return [groups[i] for i in path]


@dataclass(frozen=True)
class House:
    """Every figure of the house."""

    production_lines: int
    lab_lines: int
    modules: int
    largest_modules: tuple[ModuleSize, ...]
    longest_import_chain: tuple[tuple[str, ...], ...]
    arrows_up: tuple[tuple[str, str], ...]

    def report(self) -> dict[str, object]:
        return {
            "lines": {"production": self.production_lines, "lab": self.lab_lines},
            "modules": self.modules,
            "largest_modules": [asdict(s) for s in self.largest_modules],
            "longest_import_chain": {
                "length": len(self.longest_import_chain),
                "steps": [list(step) for step in self.longest_import_chain],
            },
            "arrows_up": {
                "count": len(self.arrows_up),
                "imports": [list(arrow) for arrow in self.arrows_up],
            },
        }


def measure(repo: Path) -> House:
    """The house of the checkout at `repo`; the import graph is of the `memstream` that Python
    finds (set PYTHONPATH=<repo>/services to measure another checkout's)."""
    production = repo / "services" / PACKAGE
    graph = grimp.build_graph(PACKAGE, include_external_packages=False)
    sizes = module_sizes(production, PACKAGE)
    return House(
        production_lines=count_lines(production),
        lab_lines=count_lines(repo / "lab"),
        modules=len(sizes),
        largest_modules=tuple(sizes[:5]),
        longest_import_chain=tuple(tuple(step) for step in longest_chain(graph)),
        arrows_up=tuple(arrows_up(graph, layer_order(repo / ".importlinter"))),
    )


def _own(modules: Iterable[str]) -> set[str]:
    return {m for m in modules if m == PACKAGE or m.startswith(PACKAGE + ".")}


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def _strongly_connected(nodes: Sequence[str], edges: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively, in reverse topological order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                elif child in on_stack:
                    low[v] = min(low[v], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                group = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    group.append(w)
                    if w == v:
                        break
                groups.append(sorted(group))
    return groups


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="Where to write the JSON.")
    parser.add_argument("--repo", type=Path, default=None, help="Checkout (default: this one).")
    args = parser.parse_args(argv)
    house = measure(args.repo or find_repo_root())
    write_report(args.out, house.report())
    print(f"lines: production {house.production_lines}, lab {house.lab_lines}")
    print(f"longest import chain: {len(house.longest_import_chain)} modules")
    print(f"arrows up: {len(house.arrows_up)}")
    print(f"largest module: {house.largest_modules[0].module} ({house.largest_modules[0].lines})")


if __name__ == "__main__":
    main()
