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


def test_the_ratios_are_the_clusters_cost_over_the_single_primarys() -> None:
    runs = [
        {"layout": "single", "ingest_msgs_per_s": 100.0, "recall_p95_ms": 10.0},
        {"layout": "cluster", "ingest_msgs_per_s": 80.0, "recall_p95_ms": 12.0},
    ]
    assert cluster._ratios(runs) == {"ingest_time_ratio": 1.25, "recall_p95_ratio": 1.2}
