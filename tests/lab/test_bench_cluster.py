"""`memstream bench cluster` refuses counts that measure nothing, before starting anything."""

from __future__ import annotations

import pytest

from memstream_lab.bench import cluster


@pytest.mark.parametrize("flags", [["--rounds", "0"], ["--conversations", "0"]])
def test_counts_below_one_are_refused(flags: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cluster.main(flags)
    assert exit_.value.code == 2
    assert "must be at least 1" in capsys.readouterr().err


def run(round_no: int, layout: str, rate: float, cpu_ms: float, p95_ms: float) -> dict[str, object]:
    return {
        "round": round_no,
        "layout": layout,
        "ingest_msgs_per_s": rate,
        "ingest_cpu_ms_per_msg": cpu_ms,
        "recall_p95_ms": p95_ms,
    }


def test_the_ratios_are_the_clusters_cost_over_the_single_primarys_round_by_round() -> None:
    runs = [
        run(1, "single", 100.0, 1.0, 10.0),
        run(1, "cluster", 80.0, 1.1, 12.0),
        # The second round ran the cluster first: its runs pair by round, not by position.
        run(2, "cluster", 50.0, 2.0, 30.0),
        run(2, "single", 50.0, 1.0, 20.0),
        run(3, "single", 90.0, 1.0, 10.0),
        run(3, "cluster", 100.0, 1.3, 11.0),
    ]
    assert cluster._ratios(runs) == {
        "ingest_time_ratio": 1.0,  # of 1.25, 1.0 and 0.9
        "ingest_cpu_ratio": 1.3,  # of 1.1, 2.0 and 1.3
        "recall_p95_ratio": 1.2,  # of 1.2, 1.5 and 1.1
    }
