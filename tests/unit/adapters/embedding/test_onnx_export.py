"""Processes starting at once on one model cache export the ONNX graph once: the first under
the cache's lock, the others after it (stand-ins for the export and the quantization; the
real ones: `test_local_embedder.py`)."""

from __future__ import annotations

import fcntl
import threading
from pathlib import Path
from typing import Any

import pytest

from memstream.adapters.embedding import onnx_model

WAIT_S = 10.0  # a failsafe: the events below are set as soon as the other thread gets there


class StandIns:
    """The export and quantization, counted; the first export is held until a second caller
    has come for the graph too (at the lock, or, without one, at an export of its own)."""

    def __init__(self) -> None:
        self.exports: list[str] = []
        self.quantizations: list[str] = []
        self.exporting = threading.Event()
        self.second_came = threading.Event()

    def export(self, model_dir: Path, out: Path) -> None:
        self.exports.append(threading.current_thread().name)
        if len(self.exports) == 1:
            self.exporting.set()
            assert self.second_came.wait(WAIT_S)
        else:
            self.second_came.set()
        out.write_bytes(b"fp32 graph")

    def quantize(self, fp32: Path, out: Path) -> None:
        self.quantizations.append(threading.current_thread().name)
        out.write_bytes(fp32.read_bytes() + b" in int8")


@pytest.fixture
def stand_ins(monkeypatch: pytest.MonkeyPatch) -> StandIns:
    stand_ins = StandIns()
    monkeypatch.setattr(onnx_model, "export_fp32", stand_ins.export)
    monkeypatch.setattr(onnx_model, "quantize_int8", stand_ins.quantize)
    real_flock = fcntl.flock

    def flock(file: Any, operation: int) -> None:
        if threading.current_thread().name == "second":
            stand_ins.second_came.set()  # then waits here while the first exports
        real_flock(file, operation)

    monkeypatch.setattr(fcntl, "flock", flock)
    return stand_ins


KINDS = {"onnx-int8": ["fp32", "int8"], "onnx-fp32": ["fp32"]}  # the graphs each makes


@pytest.mark.parametrize("runtime", sorted(KINDS))
def test_two_callers_on_one_cache_export_the_graph_once(
    stand_ins: StandIns, tmp_path: Path, runtime: str
) -> None:
    model_dir, cache_dir = tmp_path / "all-MiniLM-L6-v2", tmp_path / "models"
    model_dir.mkdir()
    graphs: dict[str, Path] = {}

    def load(name: str) -> None:
        graphs[name] = onnx_model.cached_graph(model_dir, runtime, cache_dir)

    first = threading.Thread(target=load, args=("first",), name="first")
    second = threading.Thread(target=load, args=("second",), name="second")
    first.start()
    assert stand_ins.exporting.wait(WAIT_S)
    second.start()
    first.join(WAIT_S)
    second.join(WAIT_S)

    assert stand_ins.exports == ["first"]
    assert stand_ins.quantizations == (["first"] if runtime == "onnx-int8" else [])
    assert graphs["first"] == graphs["second"]
    assert graphs["first"].read_bytes().startswith(b"fp32 graph")
    graphs_left = {p.name for p in cache_dir.glob("*.onnx")}
    assert graphs_left == {f"all-MiniLM-L6-v2-0-{kind}.onnx" for kind in KINDS[runtime]}
    assert not list(cache_dir.glob(".export-*"))  # no export's scratch left
