"""`memstream bench scale` end to end at a tiny size, on the embedded stack: what it fills is
what the pipeline writes, every curve and probe is measured, and a second run resumes
instead of filling again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memstream_lab.bench import scale
from memstream_lab.bench.scale_probe import ROUNDS, STEP_TURNS

TINY = [
    "--sizes", "300", "600",
    "--light-messages", "20",
    "--heavy-messages", "400",
    "--heavy-years", "1",
    "--queries", "12",
    "--seconds", "0.2",
    "--rate", "20",
    "--rate-seconds", "1",
]  # fmt: skip


def test_a_tiny_run_measures_every_figure_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same model without exporting it to ONNX first: the run's figures need its vectors'
    # distribution, not its speed.
    monkeypatch.setenv("MEMSTREAM_EMBED_RUNTIME", "torch")
    out = tmp_path / "scale.json"
    args = ["--run-dir", str(tmp_path / "run"), "--out", str(out), *TINY]
    scale.main(args)
    report = json.loads(out.read_text())

    kind = report["kind_check"]
    assert kind["families_pipeline_only"] == [] and kind["families_fill_only"] == []
    assert kind["l1_document_fields_equal"] and kind["l1_payload_fields_equal"]
    assert set(report["sizes"]) == {"300", "600"}
    for step in report["sizes"].values():
        offered = step["recall_offered"]
        assert offered["requests"] + offered["unsent"] == 20 and offered["requests"] > 0
        assert offered["errors"] == 0
        assert step["recall_light"]["requests"] >= 10
    heavy = report["built"][scale.HEAVY]
    assert heavy["messages"] == 400 and heavy["summaries"] > 0
    assert report["with_heavy"]["qdrant_points"][scale.HEAVY] == heavy["l1"] + heavy["summaries"]
    assert {"L3", "L4", "L5"} <= set(report["consolidate_heavy"])
    assert all(fig["written"] for fig in report["consolidate_heavy"].values())
    assert report["consolidate_light"]["L3"]["written"]
    # The segmenter probe's sessions (stating no fact, then restating one) came before the
    # rebuilds: their leaves are rebuilt too.
    probed = 2 * ROUNDS * STEP_TURNS
    for user, name in ((scale.HEAVY, "rebuild_heavy"), (scale.MEDIUM, "rebuild_medium")):
        rebuild, filled = report[name], report["built"][user]
        assert rebuild["leaves"] == rebuild["leaves_rewritten"] == filled["l1"] + probed
        assert rebuild["windows"] >= filled["summaries"]
    assert report["forget_heavy"]["seconds"] > 0

    (tmp_path / "run" / "progress.json").write_text(
        json.dumps({**report, "built": {**report["built"], "resumed": True}})
    )
    scale.main(args)  # everything measured: only reads the run directory back
    again = json.loads(out.read_text())
    assert again["built"]["resumed"] is True
    assert again["sizes"] == report["sizes"]


def test_only_the_segmenter_step_fills_the_two_long_users_and_measures_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMSTREAM_EMBED_RUNTIME", "torch")
    out = tmp_path / "scale.json"
    run = ["--run-dir", str(tmp_path / "run"), "--out", str(out), "--only-segmenter"]
    scale.main([*run, "--heavy-messages", "200", "--heavy-years", "1"])
    report = json.loads(out.read_text())
    assert {scale.HEAVY, scale.MEDIUM} <= set(report["built"])
    assert not {"kind_check", "with_heavy", "window_state"} & set(report)
    assert not report["sizes"]
    steps = report["segmenter_step"]
    assert len(steps) == 3
    for figure in steps.values():
        assert figure["cpu_ms_per_msg_least"] > 0
        assert figure["stating_no_fact"]["cpu_ms_per_msg_least"] > 0


@pytest.mark.parametrize(
    "bad", [["--sizes", "0"], ["--rate", "0"], ["--heavy-messages", "3"], ["--heavy-years", "-1"]]
)
def test_bad_arguments_are_refused_before_anything_starts(
    tmp_path: Path, bad: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        scale.main(["--run-dir", str(tmp_path), "--out", str(tmp_path / "x.json"), *bad])
    assert stop.value.code == 2
    assert "must be" in capsys.readouterr().err
    assert not (tmp_path / "progress.json").exists()
