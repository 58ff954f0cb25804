"""The topic catalog: files load, schemas are valid, good events pass, bad ones say why."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from typer.testing import CliRunner

from memstream.contracts.catalog import (  # the reference validator, for comparison
    _FORMATS,
    Catalog,
    CatalogError,
    UnknownTopicError,
    _problems,
    default_catalog_dir,
    load_catalog,
    parse_json,
    unrepresentable,
)
from memstream.entrypoints.cli import app

TS = "2024-05-01T09:30:00+02:00"
USER = "user-1"

GOOD: dict[str, dict[str, object]] = {
    "turn.v1": {
        "type": "turn.v1",
        "event_id": "e1",
        "user_id": USER,
        "session_id": "s1",
        "seq": 0,
        "speaker": "Ann",
        "role": "user",
        "text": "I adopted a cat called Miso.",
        "ts": TS,
        "tz": "Europe/Paris",
        "metadata": {"channel": "web"},
        "expires_at": "2024-06-01T00:00:00Z",
    },
    "session_end.v1": {"type": "session_end.v1", "user_id": USER, "session_id": "s1", "ts": TS},
    "forget.v1": {"type": "forget.v1", "user_id": USER},
    "tick.v1": {"type": "tick.v1", "user_id": USER, "now": "2024-05-02T00:00:00Z"},
    "turns_places.v1": {"type": "turns_places.v1", "partition": 2, "users": {USER: [7, 9]}},
    "rebuild.v1": {
        "type": "rebuild.v1",
        "user_id": USER,
        "rebuild_id": "r1",
        "from": "2024-05-01",
        "levels": [1, 2],
    },
    "window.v1": {
        "type": "window.v1",
        "user_id": USER,
        "level": 3,
        "window_start": "2024-05-01T00:00:00+02:00",
        "window_end": "2024-05-02T00:00:00+02:00",
        "session_id": None,
        "reason": "watermark",
        "node_id": "n1",
    },
    "memory.v1": {
        "type": "memory.v1",
        "id": "m1",
        "user_id": USER,
        "level": 1,
        "t_start": TS,
        "t_end": TS,
        "text": "On 1 May 2024 Ann said she adopted a cat called Miso.",
        "parent_id": None,
        "source_ids": ["e1", "e2"],
        "version": 1,
        "degraded": False,
    },
    "memory_removed.v1": {"type": "memory_removed.v1", "user_id": USER, "count": 12},
    "user_forgotten.v1": {
        "type": "user_forgotten.v1",
        "user_id": USER,
        "forget_id": "3:41",
        "forgotten_at": TS,
    },
    "window_consolidated.v1": {
        "type": "window_consolidated.v1",
        "user_id": USER,
        "node_id": "n1",
        "level": 3,
        "t_start": TS,
        "t_end": TS,
        "version": 2,
    },
    "rebuild_finished.v1": {
        "type": "rebuild_finished.v1",
        "user_id": USER,
        "rebuild_id": "r1",
        "leaves": 40,
        "leaves_rewritten": 38,
    },
    "fact.v1": {
        "type": "fact.v1",
        "fact_id": "f-berlin",
        "user_id": USER,
        "subject": "kin:maya:sister",
        "subject_name": "Maya's sister",
        "attribute": "lives_in",
        "value": "Berlin",
        "text": "Maya's sister lives in Berlin",
        "valid_from": "2024-05-01T09:30:00+00:00",
        "recorded_at": "2024-05-01T09:30:00+00:00",
        "certainty": "stated",
        "source_ids": ["m2"],
        "negated": False,
        "valid_to": None,
        "supersedes": "f-porto",
        "superseded_by": None,
    },
    "fact_removed.v1": {"type": "fact_removed.v1", "user_id": USER, "fact_ids": ["f-oslo"]},
    "fact_superseded.v1": {
        "type": "fact_superseded.v1",
        "user_id": USER,
        "fact_id": "f-porto",
        "subject": "kin:maya:sister",
        "subject_name": "Maya's sister",
        "attribute": "lives_in",
        "value": "Porto",
        "superseded_by": "f-berlin",
        "valid_to": "2024-05-01T09:30:00+00:00",
    },
    "fact_reopened.v1": {
        "type": "fact_reopened.v1",
        "user_id": USER,
        "fact_id": "f-berlin",
        "subject": "kin:maya:sister",
        "subject_name": "Maya's sister",
        "attribute": "lives_in",
        "value": "Berlin",
        "was_superseded_by": "f-oslo",
    },
    "dead_letter.v1": {
        "type": "dead_letter.v1",
        "topic": "memstream.turns.v1",
        "partition": 0,
        "offset": 41,
        "reason": "ts: bad timestamp",
        "error_field": "ts",
        "original_b64": "eyJ0eXBlIjoidHVybi52MSJ9",
        "ts": TS,
    },
    "audit.v1": {
        "type": "audit.v1",
        "audit_id": "0" * 32,
        "at": TS,
        "actor": "acme-bot",
        "tenant": "acme",
        "action": "user.forget",
        "user_id": "acme:ann",
        "outcome": "refused",
        "status": 404,
    },
    "sealed.v1": {
        "type": "sealed.v1",
        "user_id": USER,
        "sealed_type": "memory.v1",
        "v": 1,
        "nonce": "AAAAAAAAAAAAAAAA",
        "ciphertext": "c2VhbGVk",
    },
    "sealed_letter.v1": {
        "type": "sealed_letter.v1",
        "user_id": USER,
        "sealed_type": "dead_letter.v1",
        "v": 1,
        "nonce": "AAAAAAAAAAAAAAAA",
        "ciphertext": "c2VhbGVk",
    },
    "sealed_turn.v1": {
        "type": "sealed_turn.v1",
        "user_id": USER,
        "sealed_type": "turn.v1",
        "v": 1,
        "epk": "A" * 43 + "=",
        "nonce": "AAAAAAAAAAAAAAAA",
        "ciphertext": "c2VhbGVk",
    },
}

DROP = object()  # as a change: remove the field

# (value type, changes, field the problem must name, words in its reason)
BAD = [
    ("audit.v1", {"text": "I adopted a cat"}, "text", "unknown field"),
    ("turn.v1", {"ts": "2024-05-01T09:30:00"}, "ts", "bad timestamp"),
    ("turn.v1", {"ts": "2024-02-30T09:30:00Z"}, "ts", "bad timestamp"),
    ("turn.v1", {"expires_at": "2024-06-01"}, "expires_at", "bad timestamp"),
    ("turn.v1", {"text": "x" * 16_001}, "text", "too long"),
    ("turn.v1", {"session_id": DROP}, "session_id", "missing field"),
    ("turn.v1", {"role": "bot"}, "role", "must be one of user, assistant, other"),
    ("turn.v1", {"seq": -1}, "seq", "at least 0"),
    ("turn.v1", {"seq": "3"}, "seq", "must be integer"),
    ("turn.v1", {"tz": "Mars/Olympus"}, "tz", "unknown time zone"),
    ("turn.v1", {"user_id": ""}, "user_id", "must not be empty"),
    ("turn.v1", {"user_id": "a{b}"}, "user_id", "braces"),
    ("turn.v1", {"colour": "red"}, "colour", "unknown field"),
    ("tick.v1", {"now": DROP}, "now", "missing field"),
    ("window.v1", {"level": 1}, "level", "at least 2"),
    ("window.v1", {"reason": "bored"}, "reason", "must be one of"),
    ("window.v1", {"tz": "Mars/Olympus"}, "tz", "unknown time zone"),
    ("memory.v1", {"source_ids": ["e1", 7]}, "source_ids[1]", "must be string"),
    ("memory_removed.v1", {"count": DROP}, "", "needs ids or count"),
    ("memory.v1", {"parent_id": 3}, "parent_id", "must be string or null"),
    ("user_forgotten.v1", {"forget_id": DROP}, "forget_id", "missing field"),
    ("window_consolidated.v1", {"level": 1}, "level", "at least 2"),
    ("rebuild_finished.v1", {"leaves": -1}, "leaves", "at least 0"),
    ("fact_removed.v1", {"fact_ids": []}, "fact_ids", "non-empty"),
    ("fact_superseded.v1", {"superseded_by": None}, "superseded_by", "string"),
]


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def _changed(value_type: str, changes: dict[str, object]) -> dict[str, object]:
    event = GOOD[value_type] | changes
    return {key: value for key, value in event.items() if value is not DROP}


def test_every_topic_file_loads_with_its_roles(catalog: Catalog) -> None:
    files = {p.stem for p in default_catalog_dir().glob("*.json")}
    assert {spec.base_name for spec in catalog} == files
    assert catalog.turns.name == "memstream.turns.v1"
    assert [catalog.windows.key, catalog.memories.key, catalog.dlq.key] == ["user_id"] * 3
    assert catalog.turns.configs == {"retention.ms": "604800000", "cleanup.policy": "delete"}


def test_prefix_is_applied_to_every_name() -> None:
    prefixed = load_catalog("test-1.")
    assert all(spec.name == "test-1." + spec.base_name for spec in prefixed)
    assert prefixed.topic("memstream.dlq.v1") is prefixed.dlq
    with pytest.raises(UnknownTopicError):
        prefixed.topic("memstream.nope.v1")
    with pytest.raises(CatalogError):
        load_catalog("bad prefix/")


def test_every_value_schema_is_valid_and_has_an_example(catalog: Catalog) -> None:
    types = [t for spec in catalog if not spec.values_of for t in spec.values]
    assert sorted(types) == sorted(GOOD)  # a new value type needs a good example here
    for spec in catalog:
        for schema in spec.values.values():
            Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("value_type", sorted(GOOD))
def test_good_examples_pass_as_object_and_as_bytes(catalog: Catalog, value_type: str) -> None:
    event = GOOD[value_type]
    topic = catalog.topic_for_type(value_type)
    assert topic is not None
    assert catalog.validate(topic.name, event) == []
    assert catalog.validate(None, json.dumps(event).encode()) == []


@pytest.mark.parametrize(("value_type", "changes", "field", "words"), BAD)
def test_bad_examples_name_the_field(
    catalog: Catalog, value_type: str, changes: dict[str, object], field: str, words: str
) -> None:
    problems = catalog.validate(None, _changed(value_type, changes))
    assert [p.field for p in problems] == [field], problems
    assert words in problems[0].reason


@pytest.mark.parametrize(
    ("raw", "field", "words"),
    [
        (b"{not json", "", "not JSON"),
        (b"\xff\xfe", "", "not UTF-8"),
        (b'{"type": "turn.v1", "seq": NaN}', "", "not JSON"),
        (b"[1, 2]", "", "JSON object"),
        (b'{"user_id": "u"}', "type", "missing field"),
        (b'{"type": "turn.v9"}', "type", "unknown type"),
    ],
)
def test_undecodable_or_untyped_values(
    catalog: Catalog, raw: bytes, field: str, words: str
) -> None:
    [problem] = catalog.validate(None, raw)
    assert problem.field == field and words in problem.reason


def test_a_value_on_the_wrong_topic_is_rejected(catalog: Catalog) -> None:
    [problem] = catalog.validate(catalog.turns.name, GOOD["window.v1"])
    assert problem.field == "type" and "unknown type 'window.v1'" in problem.reason


def test_broken_catalog_fails_loudly(tmp_path: Path) -> None:
    for path in default_catalog_dir().glob("*.json"):
        shutil.copy(path, tmp_path)
    turns = tmp_path / "memstream.turns.v1.json"
    doc = json.loads(turns.read_text())
    doc["values"]["turn.v1"]["properties"]["seq"]["minimum"] = "zero"
    turns.write_text(json.dumps(doc))
    with pytest.raises(CatalogError, match="bad schema"):
        load_catalog(directory=tmp_path)
    turns.unlink()
    with pytest.raises(CatalogError, match="lacks topic files"):
        load_catalog(directory=tmp_path)


def test_cli_validate_reports_each_bad_line(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    lines = [
        json.dumps(GOOD["turn.v1"]),
        "",
        json.dumps(_changed("turn.v1", {"ts": "yesterday", "text": "x" * 16_001})),
        "{oops",
    ]
    events.write_text("\n".join(lines) + "\n")
    runner = CliRunner()

    result = runner.invoke(app, ["topics", "validate", str(events)])

    assert result.exit_code == 1
    bad = [line for line in result.stdout.splitlines() if line.startswith("line ")]
    assert bad[0].startswith("line 3: text: too long") and "ts: bad timestamp" in bad[0]
    assert bad[1].startswith("line 4: (value): not JSON")
    assert len(bad) == 2


def test_cli_validate_reports_hostile_lines_instead_of_crashing(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    turn = json.dumps(GOOD["turn.v1"])
    lines = [
        "[" * 100_000 + "]" * 100_000,
        turn.replace('"ts": "', '"ts": "9999-12-31T23:59:59+00:00", "x": "'),
        json.dumps(_changed("turn.v1", {"ts": "0001-01-01T00:00:00+01:00"})),
        json.dumps(_changed("turn.v1", {"user_id": "ana\ud800"})),  # a \ud800 escape
    ]
    events.write_text("\n".join(lines) + "\n")

    result = CliRunner().invoke(app, ["topics", "validate", str(events)])

    assert result.exit_code == 1, result.output
    bad = [line for line in result.stdout.splitlines() if line.startswith("line ")]
    assert bad[0] == "line 1: (value): not JSON: nested deeper than 32"
    assert "ts: bad timestamp" in bad[1] and "ts: bad timestamp" in bad[2]
    assert bad[3] == "line 4: user_id: not valid Unicode: a lone surrogate"
    assert len(bad) == 4


def test_cli_validate_good_file_and_topic_option(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    events.write_text(json.dumps(GOOD["turn.v1"]) + "\n")
    runner = CliRunner()

    assert runner.invoke(app, ["topics", "validate", str(events)]).exit_code == 0
    on_turns = runner.invoke(
        app, ["topics", "validate", str(events), "--topic", "memstream.turns.v1"]
    )
    assert on_turns.exit_code == 0
    on_dlq = runner.invoke(app, ["topics", "validate", str(events), "--topic", "memstream.dlq.v1"])
    assert on_dlq.exit_code == 1 and "unknown type 'turn.v1'" in on_dlq.stdout
    unknown = runner.invoke(app, ["topics", "validate", str(events), "--topic", "nope"])
    assert unknown.exit_code == 2


# Values that sit on the edges of the catalog's keywords: types JSON confuses, empty and
# over-long strings, whitespace and braces, near-miss timestamps and zones.
EDGE_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=3),
    st.sampled_from([0.0, 1.0, 2.5, -1.0, 1e300]),
    st.sampled_from(
        [
            "",
            " ",
            "a b",
            "{x}",
            "\x7f",
            "x" * 129,
            "x" * 16_001,
            "user",
            "other",
            "bot",
            "Europe/Paris",
            "Mars/Olympus",
            "2024-05-01T09:30:00+02:00",
            "2024-05-01T09:30:00Z",
            "2024-05-01T09:30:00",
            "2024-02-30T09:30:00Z",
            "2024-05-01T09:30:00.1234567891Z",
            "2024-05-01 09:30:00+02:00",
            "watermark",
        ]
    ),
    st.text(max_size=8),
    st.lists(st.one_of(st.text(max_size=3), st.integers()), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=3),
)


FIELDS = sorted({key for example in GOOD.values() for key in example})
CATALOG = load_catalog()  # hypothesis runs many examples; function fixtures would be reset


@given(
    value_type=st.sampled_from(sorted(GOOD)),
    changes=st.dictionaries(
        # `type` picks the schema, so it stays; every other field may change or go.
        st.one_of(st.sampled_from(FIELDS), st.text()).filter(lambda key: key != "type"),
        st.one_of(EDGE_VALUES, st.just(DROP)),
        max_size=3,
    ),
)
def test_the_fast_check_accepts_only_what_jsonschema_accepts(
    value_type: str, changes: dict[str, object]
) -> None:
    spec = CATALOG.topic_for_type(value_type)
    assert spec is not None
    value = _changed(value_type, changes)
    # The reference: jsonschema alone, as the catalog would run it without the fast check.
    reference = Draft202012Validator(spec.values[value_type], format_checker=_FORMATS)
    assert spec.validate(value) == _problems(reference, value)


# Lone surrogates and the characters the fast path looks for, among any others.
AWKWARD = st.sampled_from(["\ud800", "\udfff", "\ud83d", "\ude00", "[", "{", "\\", "u"])
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.lists(AWKWARD | st.characters(), max_size=8).map("".join),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=40,
)


@given(JSON_VALUES, st.integers(min_value=0, max_value=40))
def test_parse_json_skips_the_walk_only_where_it_would_find_nothing(
    value: object, depth: int
) -> None:
    for _ in range(depth):
        value = [value]
    for text in (json.dumps(value), json.dumps(value, ensure_ascii=False)):
        try:
            text.encode()
        except UnicodeEncodeError:  # a lone surrogate written as itself: only text can hold it
            pass
        else:
            assert parse_json(text.encode())[1] == unrepresentable(json.loads(text))
        assert parse_json(text)[1] == unrepresentable(json.loads(text))
