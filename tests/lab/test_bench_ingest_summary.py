"""The ingest benchmark's summary: one line per configuration, read off several runs."""

from __future__ import annotations

from typing import Any

from memstream_lab.bench.ingest import TARGET_RATIO, summarize


def _run(runtime: str, ratio: float, *, mode: str = "live") -> dict[str, Any]:
    return {
        "runtime": runtime,
        "model": {"processes": 2, "threads": 1},
        "publisher": "loop",
        "mode": mode,
        "ratio": ratio,
        "cpu_ratio": ratio + 0.05,
        "cpu_use": ratio / (ratio + 0.05),
        "pipeline_msgs_per_s": 400 * ratio,
    }


def test_runs_of_one_configuration_are_summarized_by_their_median() -> None:
    runs = [_run("onnx-int8", r) for r in (0.78, 0.86, 0.81)] + [_run("torch", 0.88)]

    int8, torch = summarize(runs)

    assert (int8["runtime"], int8["runs"], torch["runs"]) == ("onnx-int8", 3, 1)
    assert int8["ratio_median"] == 0.81
    assert int8["ratio_range"] == [0.78, 0.86]
    assert int8["runs_at_target"] == 2
    assert int8["cpu_ratio_median"] == 0.86
    assert int8["cpu_use_median"] == round(0.81 / 0.86, 3)
    assert int8["pipeline_msgs_per_s_median"] == 324.0
    assert torch["ratio_median"] == 0.88


def test_modes_are_not_mixed_and_the_bar_counts_as_met() -> None:
    runs = [_run("onnx-int8", TARGET_RATIO), _run("onnx-int8", 0.95, mode="backlog")]

    live, backlog = summarize(runs)

    assert (live["mode"], live["runs_at_target"]) == ("live", 1)
    assert (backlog["mode"], backlog["ratio_median"]) == ("backlog", 0.95)
