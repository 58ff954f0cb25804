"""`bench house`: the figures of the code's shape, on a small package made for the test."""

from __future__ import annotations

import sys
from pathlib import Path

import grimp
import pytest

from memstream_lab.bench import house


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture
def graph(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> grimp.ImportGraph:
    # memstream.top -> memstream.low.a -> memstream.low.b <-> memstream.low.c (a cycle), and
    # one arrow back up: memstream.low.d -> memstream.top.
    package = tmp_path / "pkg"
    _write(
        package / "memstream",
        {
            "__init__.py": "",
            "top.py": "import memstream.low.a\n",
            "low/__init__.py": "",
            "low/a.py": "import memstream.low.b\n",
            "low/b.py": "import memstream.low.c\n",
            "low/c.py": "import memstream.low.b\n",
            "low/d.py": "import memstream.top\n",
        },
    )
    monkeypatch.syspath_prepend(str(package))
    for name in [m for m in sys.modules if m == "memstream" or m.startswith("memstream.")]:
        monkeypatch.delitem(sys.modules, name)
    return grimp.build_graph("memstream", include_external_packages=False, cache_dir=None)


def test_an_import_cycle_is_one_step_of_the_longest_chain(graph: grimp.ImportGraph) -> None:
    assert house.longest_chain(graph) == [
        ["memstream.low.d"],
        ["memstream.top"],
        ["memstream.low.a"],
        ["memstream.low.b", "memstream.low.c"],
    ]


def test_an_import_from_a_lower_layer_to_a_higher_one_runs_back_up(
    graph: grimp.ImportGraph,
) -> None:
    layers = [{"top"}, {"low"}]
    assert house.arrows_up(graph, layers) == [("memstream.low.d", "memstream.top")]


def test_the_layers_are_read_from_the_import_linter_file(tmp_path: Path) -> None:
    config = tmp_path / ".importlinter"
    config.write_text(
        "[importlinter:contract:layers]\nlayers =\n    entrypoints\n    ; a comment\n"
        "    segmenter | recall\n    domain\n"
    )
    assert house.layer_order(config) == [{"entrypoints"}, {"segmenter", "recall"}, {"domain"}]


def test_module_sizes_name_packages_by_their_init(tmp_path: Path) -> None:
    _write(tmp_path, {"__init__.py": "x = 1\n", "big.py": "a = 1\nb = 2\nc = 3\n"})
    sizes = house.module_sizes(tmp_path, "memstream")
    assert sizes == [house.ModuleSize("memstream.big", 3), house.ModuleSize("memstream", 1)]
