"""The recall load benchmark's summary: each level's median over rounds, and the rounds at
its target."""

from __future__ import annotations

from typing import Any

from memstream_lab.bench.recall_load import summarize, targets_text


def _level(p95: float, rps: float, *, offered: float | None = None) -> dict[str, Any]:
    figures: dict[str, Any] = {
        "p95_ms": p95,
        "throughput_rps": rps,
        "api_cpu_ms_per_request": 6.5,
        "model_cpu_ms_per_request": 1.5,
        "bench_cpu_ms_per_request": 0.8,
    }
    if offered is not None:
        figures["offered_rps"] = offered
    return figures


def _round(one_client_p95: float, offered_p95: float, answered: float) -> dict[str, Any]:
    return {
        "time_to_ready_s": 11.0,
        "1_clients": _level(one_client_p95, 105.0),
        "50_clients": _level(250.0, 270.0),
        "200_rps_offered": _level(offered_p95, answered, offered=200.0),
        "memory_mb": {"api": 570, "model": 1180},
    }


def test_each_level_is_summarized_by_its_median_over_the_rounds() -> None:
    rounds = [_round(11.0, 84.9, 198.9), _round(12.0, 99.9, 198.7), _round(12.0, 164.1, 195.7)]

    [levels] = summarize({"workers=2": rounds}).values()

    offered = levels["200_rps_offered"]
    assert (offered["rounds"], offered["p95_ms_median"]) == (3, 99.9)
    assert offered["p95_ms_range"] == [84.9, 164.1]
    assert offered["throughput_rps_median"] == 198.7
    assert offered["cpu_ms_per_request_median"] == 8.8
    assert offered["rounds_at_target"] == 2  # 164.1 ms misses
    assert levels["1_clients"]["rounds_at_target"] == 3
    assert "rounds_at_target" not in levels["50_clients"]  # read at 200 req/s offered
    assert set(levels) == {"1_clients", "50_clients", "200_rps_offered"}


def test_an_offered_rate_not_kept_up_with_misses_however_fast_the_answers() -> None:
    rounds = [_round(11.0, 40.0, 180.0), _round(11.0, 100.0, 199.0)]

    [levels] = summarize({"workers=2": rounds}).values()

    assert levels["200_rps_offered"]["rounds_at_target"] == 0  # 180 of 200; 100 ms is not < 100


def test_the_setup_states_the_targets_the_summary_counts() -> None:
    assert targets_text() == {
        "1_clients": "p95 < 50 ms",
        "200_rps_offered": "p95 < 100 ms, answered at >= 97% of it",
    }
