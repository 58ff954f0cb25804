"""The export file's format: what it writes reads back the same, and a file it cannot take
is refused with the line that shows why."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from memstream.contracts.backup_format import (
    FORMAT,
    VERSION,
    BackupFormatError,
    End,
    Expiry,
    Header,
    NodeRecord,
    Record,
    Tally,
    UserState,
    encode_record,
    read_records,
)
from memstream.contracts.codec import encode_state
from memstream.domain.entity_index import LeafEntities
from memstream.domain.facts import make_fact
from memstream.domain.ids import segment_id, window_node_id
from memstream.domain.knowledge import LeafKnowledge
from memstream.domain.models import Level, MemoryNode, SourceMessage, StoredNode
from memstream.domain.windows import UserWindows

USER = "ana"
AT = datetime(2024, 3, 4, 9, 0, tzinfo=UTC)
LEAF = segment_id(USER, ["m1"])
SESSION = window_node_id(USER, Level.SESSION, AT, "s1")


def leaf() -> MemoryNode:
    message = SourceMessage("m1", "Ana", "user", "I moved to Porto. ليلة سعيدة", AT)
    return MemoryNode(
        LEAF, USER, Level.SEGMENT, AT, AT, "On 4 March Ana said ...", SESSION,
        source_ids=("m1",), session_id="s1", speakers=("Ana",), messages=(message,),
    )  # fmt: skip


def records() -> list[Record]:
    fact = make_fact(
        user_id=USER, subject="speaker:ana", subject_name="Ana", attribute="lives_in",
        value="Porto", text="Ana lives in Porto", valid_from=AT, recorded_at=AT,
        source_ids=("m1",),
    )  # fmt: skip
    session = MemoryNode(
        SESSION, USER, Level.SESSION, AT, AT + timedelta(minutes=5), "Ana moved.",
        children=(LEAF,), source_ids=("m1",), session_id="s1",
    )  # fmt: skip
    body: list[Record] = [
        UserState(encode_state(UserWindows(USER, "UTC")), AT + timedelta(days=1)),
        Expiry("m1", AT + timedelta(days=30)),
        NodeRecord(StoredNode(leaf(), ""), LeafKnowledge((fact,), LeafEntities((), ()))),
        NodeRecord(StoredNode(session, "f" * 32)),
    ]
    tally = Tally()
    for record in body:
        tally.add(record)
    header = Header(USER, AT, "0.0.test", {"L1": 1, "L2": 1, "expiries": 1})
    return [header, *body, End(tally.as_dict())]


def lines() -> list[str]:
    return [encode_record(r) for r in records()]


def test_what_is_written_reads_back_the_same() -> None:
    assert list(read_records(lines())) == records()


def test_each_record_is_one_line_and_text_stays_readable() -> None:
    written = lines()
    assert all(line.endswith("\n") and line.count("\n") == 1 for line in written)
    assert "ليلة سعيدة" in written[3]  # not escaped: a person can read the file


def error(file: list[str]) -> BackupFormatError:
    with pytest.raises(BackupFormatError) as caught:
        list(read_records(file))
    return caught.value


def test_a_line_that_is_not_json_is_named() -> None:
    file = lines()
    file[3] = file[3][:40] + "\n"
    assert error(file).line == 4
    assert "not JSON" in str(error(file))


def test_an_unknown_version_is_refused_on_the_first_line() -> None:
    file = lines()
    header = json.loads(file[0]) | {"version": VERSION + 1}
    file[0] = json.dumps(header) + "\n"
    caught = error(file)
    assert caught.line == 1
    assert f"format version {VERSION + 1}" in str(caught)


def test_a_file_of_another_format_is_refused() -> None:
    caught = error(['{"type": "header", "format": "something.else", "version": 1}\n'])
    assert (caught.line, FORMAT in caught.reason) == (1, True)


def test_a_file_cut_short_says_where() -> None:
    caught = error(lines()[:-2])
    assert caught.line == 5
    assert "cut short" in caught.reason


def test_an_end_that_disagrees_with_the_lines_before_is_a_cut_file() -> None:
    file = lines()
    del file[2]  # the expiry
    caught = error(file)
    assert caught.line == len(file)
    assert "expiries" in caught.reason


def test_a_node_without_a_field_names_the_field_and_line() -> None:
    file = lines()
    doc = json.loads(file[4])
    del doc["node"]["t_end"]
    file[4] = json.dumps(doc) + "\n"
    caught = error(file)
    assert caught.line == 5
    assert "t_end" in caught.reason


def test_a_node_of_another_user_is_refused() -> None:
    file = lines()
    doc = json.loads(file[3])
    doc["node"]["user_id"] = "bob"
    file[3] = json.dumps(doc) + "\n"
    assert error(file).line == 4


def test_lines_out_of_order_are_refused() -> None:
    file = lines()
    file[1], file[3] = file[3], file[1]
    caught = error(file)
    assert caught.line == 2
    assert "'state'" in caught.reason


def test_empty_lines_and_lines_after_the_end_are_refused() -> None:
    after_end = len(lines()) + 1
    assert error([*lines(), "\n"]).line == after_end
    assert error([*lines(), lines()[-1]]).line == after_end
