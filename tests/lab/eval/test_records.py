"""The resume log: what counts as done, what a later run redoes."""

from __future__ import annotations

from pathlib import Path

from memstream_lab.eval.records import RECORDS_FILE, Record, RecordLog


def record(method: str = "m", fingerprint: str = "f1", index: int = 0, **extra: object) -> Record:
    fields: dict[str, object] = {
        "method": method,
        "fingerprint": fingerprint,
        "sample": "26",
        "index": index,
        "category": 1,
        "evidence": ("D1:1",),
        "recalled": ("D1:1", "D1:2"),
        "tokens": 42,
        "latency_ms": 1.5,
    }
    return Record(**{**fields, **extra})  # type: ignore[arg-type]


def test_records_survive_a_restart_and_round_trip(tmp_path: Path) -> None:
    with RecordLog(tmp_path, resume=True) as log:
        log.add(record(index=0))
        log.add(record(index=1, answer="Paris", correct=True))
    again = RecordLog(tmp_path, resume=True)
    assert again.done("m", "f1", "26", 0)
    assert again.records("m", "f1")[1] == record(index=1, answer="Paris", correct=True)


def test_a_changed_configuration_is_not_done(tmp_path: Path) -> None:
    with RecordLog(tmp_path, resume=True) as log:
        log.add(record(fingerprint="old"))
    again = RecordLog(tmp_path, resume=True)
    assert not again.done("m", "new", "26", 0)
    assert again.records("m", "new") == []


def test_an_unanswered_record_is_not_done_when_answers_are_wanted(tmp_path: Path) -> None:
    with RecordLog(tmp_path, resume=True) as log:
        log.add(record())
    again = RecordLog(tmp_path, resume=True)
    assert again.done("m", "f1", "26", 0)
    assert not again.done("m", "f1", "26", 0, need_answer=True)


def test_no_resume_starts_empty_and_truncates(tmp_path: Path) -> None:
    with RecordLog(tmp_path, resume=True) as log:
        log.add(record())
    with RecordLog(tmp_path, resume=False) as fresh:
        assert not fresh.done("m", "f1", "26", 0)
    assert (tmp_path / RECORDS_FILE).read_text() == ""


def test_a_line_cut_short_by_a_kill_is_skipped(tmp_path: Path) -> None:
    with RecordLog(tmp_path, resume=True) as log:
        log.add(record(index=0))
    with (tmp_path / RECORDS_FILE).open("a") as sink:
        sink.write('{"method": "m", "fingerpr')
    again = RecordLog(tmp_path, resume=True)
    assert again.done("m", "f1", "26", 0)
    assert len(again.records("m", "f1")) == 1
